"""Vectors handed to a library that embeds texts itself (txtai, mem0, LangGraph's store): the harness encodes
once, and the library's embedding hook looks up the vector of each text it is asked to embed, so every system is
measured on the same vectors and none loads a model."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np


class GivenVectors:
    """The vectors of the texts about to be written or searched, handed out in order per text (the same text may
    come twice with different vectors). A caller gives, calls the library, then checks that all were taken."""

    def __init__(self) -> None:
        self._pending: defaultdict[str, deque[np.ndarray]] = defaultdict(deque)

    def give(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vector in zip(texts, vectors):
            self._pending[text].append(np.asarray(vector, dtype=np.float32))

    def take(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of these texts, one each, in order; a text not given is an error, never a zero vector."""
        try:
            return np.stack([self._pending[text].popleft() for text in texts])
        except IndexError:
            raise RuntimeError("the library asked for the vector of a text it was not given") from None

    @contextmanager
    def spent(self) -> Iterator[None]:
        """Around one call into the library: afterwards every vector given was taken (it embedded each text once).
        What is left is forgotten either way; an error of the library's own propagates as it was."""
        try:
            yield
        finally:
            left = sum(len(queue) for queue in self._pending.values())
            self._pending.clear()
        if left:
            raise RuntimeError(f"the library did not take {left} of the vectors it was given")
