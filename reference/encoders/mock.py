"""A deterministic, dependency-free encoder: signed feature hashing of words and word pairs."""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

_WORDS = re.compile(r"\w+")


class MockEncoder:
    """Texts that share words get similar vectors; identical texts get identical ones.

    Each normalised word unigram (weight 1) and bigram (weight 0.5) is hashed (CRC-32) to a
    dimension and a sign. A text without word characters falls back to its characters.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ValueError("MockEncoder needs dim >= 8")
        self.dim = dim
        self.name = f"mock-{dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                code = zlib.crc32(feature.encode("utf-8"))
                matrix[row, code % self.dim] += weight if code & 0x80000000 else -weight
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)


def _features(text: str) -> list[tuple[str, float]]:
    normalised = unicodedata.normalize("NFKC", text).casefold()
    words = _WORDS.findall(normalised) or list(normalised.strip())
    return [(w, 1.0) for w in words] + [(f"{a} {b}", 0.5) for a, b in pairwise(words)]
