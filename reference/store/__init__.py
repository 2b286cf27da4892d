"""Where cells persist: a store loads every cell on open (or, for a memory with `resident_cells`, a scope
when it is used) and takes each write as it happens.

`protocol.py` is what the engine asks of a store (and `NullStore`, for a memory that persists nothing);
`embedded.py` opens a store at a path (embedded Chroma beside the `sidecar.py` file, held by one process);
`server.py` keeps cells on a Chroma server, whose namespace one process serves under a lease (`lease.py`); both
write the cells' collection through `collection.py`; `postgres.py` keeps cells in a PostgreSQL database, whose
namespace one process owns under an epoch the database checks in every write (`ownership.py`). `open_store` picks
one for a memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..cells.table import CellBatch
from ..common.chroma import server_client
from .embedded import EmbeddedStore, open_embedded
from .lease import open_server
from .pgdb import Database
from .postgres import open_postgres
from .protocol import CellStore, NullStore, StoreIdentity

__all__ = ["CellStore", "NullStore", "OpenStore", "StoreIdentity", "open_store", "server_client"]


class Held(Protocol):
    """What holds a shared store for this process: a Chroma server's lease (`lease.py`), a PostgreSQL ownership
    (`ownership.py`)."""

    def check(self) -> None: ...
    def release(self) -> None: ...


@dataclass
class OpenStore:
    """A memory's store as opened: where it writes, and what holds it (an embedded store's lock, a server
    namespace's lease or a database's ownership) until `close()`."""

    store: CellStore
    embedded: EmbeddedStore | None = None
    lease: Held | None = None
    database: Database | None = None

    def kept_estimates(self) -> str | None:
        """The recall estimates saved as the memory last closed (`state/kept_estimates.py`); an embedded store keeps
        them, the others none."""
        return None if self.embedded is None else self.embedded.store.kept_estimates()

    def keep_estimates(self, kept: str) -> None:
        """Save the recall estimates in force, as the memory closes (an embedded store; the others keep none)."""
        if self.embedded is not None:
            self.embedded.store.keep_estimates(kept)

    def close(self) -> None:
        """Release what holds the store (a client passed in stays open: it is the caller's)."""
        try:
            if self.embedded is not None:
                self.embedded.close()
        finally:
            try:
                if self.lease is not None:
                    self.lease.release()
            finally:
                if self.database is not None:
                    self.database.close()


def open_store(
    path: str | None,
    client: Any,
    namespace: str,
    identity: StoreIdentity,
    *,
    lease_seconds: float,
    load: bool,
    dsn: str | None = None,
) -> tuple[OpenStore, CellBatch | None]:
    """The embedded store at `path`, the namespace behind `client` (under its lease, on a server), the namespace in
    the PostgreSQL database at `dsn` (owned by this process), or, with none, a `NullStore`; and the cells it holds
    (None: none, or, with `load=False`, none read: they are read scope by scope)."""
    if dsn is not None:
        ownership, cells_store, cells = open_postgres(dsn, namespace, identity, lease_seconds, load=load)
        return OpenStore(cells_store, lease=ownership, database=cells_store.database), cells
    if path is not None:
        embedded, cells = open_embedded(path, namespace, identity, load=load)
        return OpenStore(embedded.store, embedded=embedded), cells
    if client is not None:
        lease, store, cells = open_server(client, namespace, identity, lease_seconds, load=load)
        return OpenStore(store, lease=lease), cells
    return OpenStore(NullStore()), None
