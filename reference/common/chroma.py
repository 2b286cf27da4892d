"""Chroma clients made one way (no telemetry, no embedding function) and errors made typed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import BackendUnavailableError

if TYPE_CHECKING:
    from chromadb.api.client import Client as ClientAPI

T = TypeVar("T")
INSTALL_HINT = "pip install 'magnetic-bench'"


def _chromadb() -> tuple[Any, Any]:
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError:
        raise BackendUnavailableError(f"chromadb is not installed; {INSTALL_HINT}") from None
    return chromadb, Settings(anonymized_telemetry=False)


def persistent_client(path: str) -> ClientAPI:
    """An embedded Chroma store in directory `path`."""
    chromadb, settings = _chromadb()
    client: ClientAPI = guarded(f"opening Chroma at {path}", chromadb.PersistentClient, path=path, settings=settings)
    return client


def client_open_at(path: Path) -> bool:
    """Whether a Chroma client of this process has the store at `path` open (Chroma keeps one system per path
    until its last client closes); when Chroma's registry cannot be read, it is taken to be open."""
    _chromadb()
    from chromadb.api.shared_system_client import SharedSystemClient

    systems = getattr(SharedSystemClient, "_identifier_to_system", None)
    if not isinstance(systems, dict):
        return True
    return any(key and Path(key).resolve() == path.resolve() for key in systems)


def ephemeral_client() -> ClientAPI:
    """An in-process, in-memory Chroma client (shared by the whole process)."""
    chromadb, settings = _chromadb()
    client: ClientAPI = chromadb.EphemeralClient(settings=settings)
    return client


def http_client(host: str, port: int) -> ClientAPI:
    """A client of a Chroma server; fails now, with a clear error, when the server is not there."""
    chromadb, settings = _chromadb()
    client: ClientAPI = guarded(
        f"connecting to the Chroma server at {host}:{port}",
        chromadb.HttpClient,
        host=host,
        port=port,
        settings=settings,
    )
    return client


def server_client(address: str) -> ClientAPI:
    """A client of the Chroma server at "host:port" (the CLI's `--chroma-server`)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        from .errors import InvalidInputError

        raise InvalidInputError(f"a Chroma server is given as HOST:PORT, got {address!r}")
    return http_client(host, int(port))


def backend_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the store failed", as opposed to a bug in the caller."""
    import httpx
    from chromadb.errors import ChromaError

    return (ChromaError, httpx.HTTPError, OSError, ConnectionError, ValueError, RuntimeError)


def guarded(action: str, call: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`call(*args, **kwargs)`; a store failure becomes a `BackendUnavailableError` naming the action."""
    try:
        return call(*args, **kwargs)
    except backend_errors() as error:
        raise BackendUnavailableError(f"Chroma failed while {action}: {type(error).__name__}: {error}") from error


def existing_collection(client: ClientAPI, name: str, action: str) -> Any | None:
    """The collection of this name, None when there is none; a store failure becomes a `BackendUnavailableError`
    naming the action."""
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None
    except backend_errors() as error:
        raise BackendUnavailableError(f"Chroma failed while {action}: {type(error).__name__}: {error}") from error
