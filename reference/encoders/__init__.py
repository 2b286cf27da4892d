"""Text encoders and `make_encoder`, which picks one by name or by what is available."""

from __future__ import annotations

import logging

from ..common.errors import BackendUnavailableError, InvalidInputError
from .base import Encoder
from .minilm import SentenceTransformerEncoder
from .mock import MockEncoder
from .ollama import OllamaEncoder

__all__ = ["Encoder", "MockEncoder", "OllamaEncoder", "SentenceTransformerEncoder", "make_encoder"]
ENCODER_NAMES = ("auto", "mock", "minilm", "ollama")
log = logging.getLogger(__name__)


def make_encoder(name: str = "auto", *, ollama_host: str | None = None, timeout: float = 30.0) -> Encoder:
    """An encoder by name; "auto" tries Ollama, then the local MiniLM model, then Mock, and logs why."""
    if name == "mock":
        return MockEncoder()
    if name == "minilm":
        return SentenceTransformerEncoder()
    if name == "ollama":
        return OllamaEncoder(host=ollama_host, timeout=timeout)
    if name != "auto":
        raise InvalidInputError(f"unknown encoder {name!r}; use one of {', '.join(ENCODER_NAMES)}")
    try:
        probe = OllamaEncoder(host=ollama_host, timeout=min(timeout, 2.0))
        if probe.reachable():
            log.info("encoder: %s at %s", probe.name, probe.host)
            return OllamaEncoder(host=ollama_host, timeout=timeout)
        reason = f"Ollama not reachable at {probe.host}"
    except BackendUnavailableError as error:
        reason = str(error)
    try:
        encoder: Encoder = SentenceTransformerEncoder()
        log.info("encoder: minilm (%s)", reason)
    except BackendUnavailableError as error:
        encoder = MockEncoder()
        log.warning("encoder: mock (%s; %s)", reason, error)
    return encoder
