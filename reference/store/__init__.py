"""Where cells persist: a store loads every cell on open (or, for a memory with `resident_cells`, a scope
when it is used) and takes each write as it happens.

`protocol.py` is what the engine asks of a store (and `NullStore`, for a memory that persists nothing);
`embedded.py` opens a store at a path (embedded Chroma beside the `sidecar.py` file, held by one process);
`server.py` keeps cells on a Chroma server, whose namespace one process serves under a lease (`lease.py`); both
write the cells' collection through `collection.py`. `open_store` picks one for a memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cells import CellBatch
from .embedded import EmbeddedStore, open_embedded
from .lease import Lease, open_server
from .protocol import CellStore, NullStore, StoreIdentity

__all__ = ["CellStore", "NullStore", "OpenStore", "StoreIdentity", "open_store"]


@dataclass
class OpenStore:
    """A memory's store as opened: where it writes, and what holds it (an embedded store's lock, a server
    namespace's lease) until `close()`."""

    store: CellStore
    embedded: EmbeddedStore | None = None
    lease: Lease | None = None

    def close(self) -> None:
        """Release what holds the store (a client passed in stays open: it is the caller's)."""
        try:
            if self.embedded is not None:
                self.embedded.close()
        finally:
            if self.lease is not None:
                self.lease.release()


def open_store(
    path: str | None, client: Any, namespace: str, identity: StoreIdentity, *, lease_seconds: float, load: bool
) -> tuple[OpenStore, CellBatch | None]:
    """The embedded store at `path`, the namespace behind `client` (under its lease, on a server), or, with
    neither, a `NullStore`; and the cells it holds (None: none, or, with `load=False`, none read: they are read
    scope by scope)."""
    if path is not None:
        embedded, cells = open_embedded(path, namespace, identity, load=load)
        return OpenStore(embedded.store, embedded=embedded), cells
    if client is not None:
        lease, store, cells = open_server(client, namespace, identity, lease_seconds, load=load)
        return OpenStore(store, lease=lease), cells
    return OpenStore(NullStore()), None
