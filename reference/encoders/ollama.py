"""Embeddings from an Ollama server (nomic-embed-text by default) through the `ollama` client."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..errors import BackendUnavailableError

DEFAULT_HOST = "http://127.0.0.1:11434"


def ollama_client(host: str | None, timeout: float):
    """An `ollama.Client` with a finite timeout (the library's default waits forever)."""
    try:
        import ollama
    except ImportError:
        raise BackendUnavailableError("the ollama client is missing; pip install 'magnetic-bench[ollama]'") from None
    return ollama.Client(host=host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST, timeout=timeout)


def unavailable(host: str, error: Exception) -> BackendUnavailableError:
    """The one error every Ollama failure becomes."""
    return BackendUnavailableError(
        f"Ollama at {host} failed: {type(error).__name__}: {error}. "
        "Start it with `ollama serve` (and `ollama pull` the model) or set OLLAMA_HOST"
    )


class OllamaEncoder:
    """Vectors from `/api/embed`, L2-normalised here (older endpoints return raw vectors)."""

    def __init__(self, model: str = "nomic-embed-text", *, host: str | None = None, timeout: float = 30.0) -> None:
        self.model = model
        self.name = f"ollama:{model}"
        self._client = ollama_client(host, timeout)
        self.host = str(self._client._client.base_url)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = self.encode(["dimension probe"]).shape[1]
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        try:
            response = self._client.embed(model=self.model, input=list(texts))
        except Exception as error:  # connection, timeout or an HTTP error from the server
            raise unavailable(self.host, error) from error
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise BackendUnavailableError(
                f"Ollama returned {vectors.shape} for {len(texts)} texts; is {self.model!r} an embedding model?"
            )
        self._dim = vectors.shape[1]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.isfinite(vectors).all() or (norms == 0).any():
            raise BackendUnavailableError(f"Ollama model {self.model!r} returned NaN, infinite or zero vectors")
        return vectors / norms

    def reachable(self) -> bool:
        """True when the server answers and has the model."""
        try:
            models = self._client.list().models
        except Exception:
            return False
        return any((m.model or "").split(":")[0] == self.model.split(":")[0] for m in models)
