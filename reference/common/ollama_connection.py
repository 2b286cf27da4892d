"""One connection to an Ollama server, shared by the encoder, the LLM judge and the agent's LLM.

The `ollama` client's own timeout is infinite; this one is always finite. Every failure (no
server, timeout, HTTP error, missing model) becomes a `BackendUnavailableError` that says what to do.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import BackendUnavailableError

DEFAULT_HOST = "http://127.0.0.1:11434"
T = TypeVar("T")


class OllamaConnection:
    def __init__(self, model: str, *, host: str | None, timeout: float) -> None:
        try:
            import ollama
        except ImportError:
            raise BackendUnavailableError(
                "the ollama client is missing; pip install 'magnetic-bench[ollama]'"
            ) from None
        self.model = model
        self.name = f"ollama:{model}"
        self.client = ollama.Client(host=host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST, timeout=timeout)
        self.host = str(self.client._client.base_url)

    def call(self, method: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """`method(*args, **kwargs)` on the client, with every failure made typed."""
        try:
            return method(*args, **kwargs)
        except Exception as error:  # connection, timeout, HTTP error: all mean "Ollama failed"
            raise self.unavailable(error) from error

    def unavailable(self, error: Exception) -> BackendUnavailableError:
        return BackendUnavailableError(
            f"Ollama at {self.host} failed: {type(error).__name__}: {error}. "
            f"Start it with `ollama serve` (and `ollama pull {self.model}`) or set OLLAMA_HOST"
        )

    def reachable(self, *, need_model: bool = False) -> bool:
        """True when the server answers (and, with `need_model`, has the model)."""
        try:
            models = self.client.list().models
        except Exception:  # any failure means: not reachable
            return False
        return not need_model or any((m.model or "").split(":")[0] == self.model.split(":")[0] for m in models)
