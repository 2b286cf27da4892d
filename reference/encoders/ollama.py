"""Embeddings from an Ollama server (nomic-embed-text by default) through the `ollama` client."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..common.errors import BackendUnavailableError
from ..common.ollama_connection import OllamaConnection


class OllamaEncoder:
    """Vectors from `/api/embed`, L2-normalised here (older endpoints return raw vectors)."""

    def __init__(self, model: str = "nomic-embed-text", *, host: str | None = None, timeout: float = 30.0) -> None:
        self.connection = OllamaConnection(model, host=host, timeout=timeout)
        self.model, self.name, self.host = model, self.connection.name, self.connection.host
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = self.encode(["dimension probe"]).shape[1]
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        response = self.connection.call(self.connection.client.embed, model=self.model, input=list(texts))
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise BackendUnavailableError(
                f"Ollama returned {vectors.shape} for {len(texts)} texts; is {self.model!r} an embedding model?"
            )
        self._dim = vectors.shape[1]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.isfinite(vectors).all() or (norms == 0).any():
            raise BackendUnavailableError(f"Ollama model {self.model!r} returned NaN, infinite or zero vectors")
        unit: np.ndarray = vectors / norms
        return unit

    def reachable(self) -> bool:
        """True when the server answers and has the model."""
        return self.connection.reachable(need_model=True)
