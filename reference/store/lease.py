"""One process at a time serves a namespace on a Chroma server: a lease kept on the server itself.

The engine answers from what it holds in memory, so two processes serving one namespace would each miss the
other's writes. Opening a namespace through a server client takes its lease, the collection
`{namespace}_owner`, and holds it until `close()`: another opener is refused (`NamespaceOwnedError`) while
the owner lives, and takes over once it has died.

Taking: holding the lease is having created that collection. Chroma creates a collection in one SQLite
write transaction that fails when the name exists, so of many concurrent creators exactly one succeeds. The
owner renews the lease every `ttl / RENEWALS` seconds: it renames the collection, by its id, to the name it
has, with the next beat in its metadata. That fails once the collection is gone or another holds the name.

Taking over: an opener that finds a lease watches its beat. A beat that moves is a live owner (refused); one
that stays put for `ttl + grace` seconds is a dead one. The opener renames that collection, by its id, to
`{namespace}_owner_{id}`, deletes it under that name, and creates the lease anew: only the creation decides
between rivals, and the two steps before it touch the dead lease alone. A lease is deleted before another
can be created, so an owner whose renewal succeeds, even after an outage, knows nobody held the namespace
meanwhile; one whose renewal fails that way knows it was taken.

Clocks: none is compared with another machine's. The owner serves until `ttl` seconds after it sent its last
renewal that succeeded, by its own monotonic clock; a taker waits `ttl + grace` seconds by its own monotonic
clock from when it saw the last beat, which was after the owner sent it. That is safe while the two clocks'
rates differ by less than grace / ttl.

Fencing: every search and write checks the lease first (`LeaseLostError` past the deadline, until a renewal
succeeds; for good once the lease is taken), and a write checks again when it returns: one that returns past
the deadline is not acknowledged and the lease is given up. So every acknowledged write reached the server
before a takeover could begin, and the new owner loads it. A write sent before a takeover by a process paused
past its deadline, and reaching the server after, cannot land behind the new owner's back: a takeover moves the
cells and the ledger to new collections before loading them (`handover.py`).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..cells.table import CellBatch, CellRecord
from ..common.chroma import backend_errors, existing_collection
from ..common.errors import BackendUnavailableError, LeaseLostError, NamespaceOwnedError
from .handover import hand_over
from .protocol import CellStore, StoreIdentity
from .renewal import keep_renewing
from .server import ServerCellStore

log = logging.getLogger(__name__)
T = TypeVar("T")
RENEWALS = 5
"""Renewals per lease term; a taker's grace is one renewal interval."""
RETRIES = 3
"""Server errors in a row that taking a lease goes on after (Chroma fails some calls that race a deletion)."""
SERVER_API = "chromadb.api.fastapi.FastAPI"
"""The client implementation that reaches a Chroma server, which other processes may reach too."""


def open_server(
    client: Any, namespace: str, identity: StoreIdentity, ttl: float, *, load: bool = True
) -> tuple[Lease | None, CellStore, CellBatch | None]:
    """The cells of `namespace` behind `client`, read once its lease is held (with `load`; without, none: they are
    read scope by scope), and the store that writes them under that lease. An in-process client (embedded or
    ephemeral Chroma) is this process's alone: no lease."""
    if client.get_settings().chroma_api_impl != SERVER_API:
        store = ServerCellStore(client, namespace, identity)
        return None, store, store.open(load=load)
    lease = Lease.acquire(client, namespace, ttl)
    try:
        hand_over(client, namespace, took_over=lease.took_over)
        store = ServerCellStore(client, namespace, identity)
        return lease, FencedStore(store, lease), store.open(load=load)
    except BaseException:
        lease.release()
        raise


class FencedStore:
    """A server store whose every call is checked against the lease before it is sent and when it returns: a read
    that returns past the deadline may miss what a new owner wrote, so it is refused too."""

    persistent = True

    def __init__(self, store: ServerCellStore, lease: Lease) -> None:
        self.store, self.lease = store, lease

    def load(self) -> CellBatch | None:
        return self._read(self.store.load)

    def load_scope(self, scope: str) -> CellBatch | None:
        return self._read(self.store.load_scope, scope)

    def count(self, scope: str | None = None) -> int:
        return self._read(self.store.count, scope)

    def scopes(self) -> list[str]:
        return self._read(self.store.scopes)

    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]:
        return self._read(self.store.scopes_of, ids)

    def group_bound(self) -> int:
        return self._read(self.store.group_bound)

    def put(self, batch: CellBatch) -> None:
        self._write(self.store.put, batch)

    def replace(self, batch: CellBatch, previous: Sequence[CellRecord]) -> None:
        self._write(self.store.replace, batch, previous)

    def update(self, records: Sequence[CellRecord]) -> None:
        if records:  # nothing to flush needs no lease (closing after the lease is lost)
            self._write(self.store.update, records)

    def delete(self, ids: Sequence[str], scopes: Iterable[str]) -> None:
        self._write(self.store.delete, ids, scopes)

    def _read(self, read: Callable[..., T], *args: Any) -> T:
        self.lease.check()
        try:
            found = read(*args)
        except BackendUnavailableError:
            self.lease.check()  # past the deadline, the lease is why (a new owner may have moved the cells)
            raise
        self.lease.check()
        return found

    def _write(self, write: Callable[..., None], *args: Any) -> None:
        self.lease.check()
        try:
            write(*args)
        except BackendUnavailableError:
            self.lease.confirm()  # past the deadline, the lease is why (a new owner may have moved the cells)
            raise
        self.lease.confirm()


@dataclass(frozen=True)
class _Seen:
    """A lease as one read found it: its collection, and what moves while its owner lives."""

    collection: Any
    ttl: float
    owner: str

    @property
    def beat(self) -> tuple[str, int]:
        return str(self.collection.id), int((self.collection.metadata or {}).get("beat", 0))


class Lease:
    """This process's lease on a namespace: renewed by a daemon thread, checked before every call."""

    def __init__(self, client: Any, collection: Any, ttl: float, sent: float, *, took_over: bool = False) -> None:
        self._client, self._collection, self.ttl = client, collection, ttl
        self.took_over = took_over
        """Whether it was taken from an owner whose lease ran out (`handover.py` then fences that owner off)."""
        self.name: str = collection.name
        self._metadata: dict[str, Any] = dict(collection.metadata)
        self._deadline = sent + ttl
        """Monotonic time until which this process may serve; -inf once the lease is lost."""
        self._lost = False
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        weakref.finalize(self, self._stop.set)  # a memory dropped unclosed stops renewing; the lease runs out
        self._renewer = threading.Thread(
            target=keep_renewing,
            args=(weakref.ref(self), self._stop, ttl / RENEWALS),
            name=f"lease {self.name}",
            daemon=True,
        )
        self._renewer.start()

    @classmethod
    def acquire(cls, client: Any, namespace: str, ttl: float) -> Lease:
        """Take the namespace's lease: at once when nobody holds it, after `ttl + grace` of a still beat when its
        owner died; `NamespaceOwnedError` as soon as the owner's beat moves."""
        name = f"{namespace}_owner"
        metadata = {"beat": 0, "ttl": ttl, "owner": f"{socket.gethostname()} pid {os.getpid()}"}
        watched: _Seen | None = None
        since = 0.0
        failures = 0
        took_over = False
        while True:
            try:
                sent = time.monotonic()
                if (created := _create(client, name, metadata)) is not None:
                    return cls(client, created, ttl, sent, took_over=took_over)
                seen = _read(client, name)
                if seen is None:  # released meanwhile
                    continue
                if watched is None or seen.beat != watched.beat:
                    if watched is not None:
                        raise NamespaceOwnedError(
                            f"namespace {namespace!r} on this Chroma server is served by another live process "
                            f"({seen.owner}); send its requests there, close it there, or use another namespace"
                        )
                    watched, since = seen, time.monotonic()
                elif time.monotonic() - since >= seen.ttl * (1 + 1 / RENEWALS):
                    log.warning("taking over namespace %r from %s, whose lease ran out", namespace, seen.owner)
                    _bury(client, name, seen.collection)
                    took_over = True
                    continue
                failures = 0
            except NamespaceOwnedError:
                raise
            except BackendUnavailableError as error:  # e.g. a read or rename racing a rival's delete
                failures += 1
                if failures > RETRIES:
                    raise
                log.warning("taking the lease of namespace %r: %s; trying again", namespace, error)
            time.sleep((watched.ttl if watched else ttl) / RENEWALS / 2)

    def check(self) -> None:
        """Refuse (`LeaseLostError`) unless this process holds the lease now."""
        if time.monotonic() >= self._deadline:
            raise self._lapsed()

    def confirm(self) -> None:
        """After a write: one that returned past the deadline is not acknowledged, and the lease is given up (a
        renewal might succeed later, but the write may have landed after a takeover began)."""
        if time.monotonic() >= self._deadline:
            self._lose()
            raise LeaseLostError(
                f"a write to namespace {self._namespace!r} returned after this process's lease on it ran out: it is "
                "not acknowledged (it may be stored or not); the lease is given up, reopen to serve the namespace"
            )

    def renew(self) -> bool:
        """Renew once: the deadline moves on if it succeeds, the lease is lost if it was taken, and a server that
        does not answer leaves it as it was. Returns whether to go on renewing."""
        if self._lost:
            return False
        metadata = self._metadata | {"beat": int(self._metadata["beat"]) + 1}
        sent = time.monotonic()
        try:
            self._collection.modify(name=self.name, metadata=metadata)
        except backend_errors() as error:
            if self._was_taken(error):
                log.error("the lease on namespace %r was taken over by another process", self._namespace)
                self._lose()
                return False
            log.warning("renewing the lease on namespace %r failed: %s", self._namespace, error)
            return True
        with self._mutex:
            if self._lost:
                return False
            self._metadata, self._deadline = metadata, sent + self.ttl
        return True

    def release(self) -> None:
        """Stop renewing and delete the lease, so that the next opener need not wait; when the server cannot be
        reached, the lease runs out instead."""
        self._stop.set()
        self._lose()
        if self._renewer is not threading.current_thread():
            self._renewer.join(timeout=self.ttl)  # a renewal in flight could give the lease its name back
        try:
            _bury(self._client, self.name, self._collection)
        except BackendUnavailableError as error:
            log.warning("releasing the lease on %r failed (it runs out by itself): %s", self._namespace, error)

    @property
    def _namespace(self) -> str:
        return self.name.removesuffix("_owner")

    def _lose(self) -> None:
        with self._mutex:
            self._lost, self._deadline = True, -math.inf

    def _was_taken(self, error: BaseException) -> bool:
        """Whether a failed renewal means another process holds the lease: its collection is gone, or another
        collection has its name."""
        from chromadb.errors import NotFoundError

        if isinstance(error, NotFoundError):
            return True
        try:
            seen = _read(self._client, self.name)
        except BackendUnavailableError:
            return False
        return seen is not None and seen.collection.id != self._collection.id

    def _lapsed(self) -> LeaseLostError:
        if self._lost:
            return LeaseLostError(
                f"namespace {self._namespace!r} is no longer served by this process (another took it over, it was "
                "closed, or a write returned too late): reopen it to serve it again"
            )
        return LeaseLostError(
            f"the lease on namespace {self._namespace!r} could not be renewed for {self.ttl:g} s (is the Chroma "
            "server reachable?): calls are refused until a renewal succeeds"
        )


def _create(client: Any, name: str, metadata: dict[str, Any]) -> Any | None:
    """The lease's collection, created by this call; None when it exists already."""
    try:
        return client.create_collection(name, metadata=metadata, embedding_function=None)
    except backend_errors() as error:
        if _read(client, name) is None:
            raise BackendUnavailableError(f"Chroma failed while creating the lease {name}: {error}") from error
        return None


def _read(client: Any, name: str) -> _Seen | None:
    """The lease as it is now; None when there is none."""
    collection = existing_collection(client, name, f"reading the lease {name}")
    if collection is None:
        return None
    metadata = collection.metadata or {}
    return _Seen(collection, float(metadata.get("ttl", 0.0)), str(metadata.get("owner", "unknown")))


def _bury(client: Any, name: str, collection: Any) -> None:
    """Rename a lease, by its id, to a name only it can have, and delete it under that name: a rival doing the
    same at the same time buries the same collection, and a lease created meanwhile is left alone."""
    from chromadb.errors import NotFoundError

    grave = f"{name}_{collection.id.hex}"
    try:
        collection.modify(name=grave)
        client.delete_collection(grave)
    except NotFoundError:  # buried already, by a rival or by this process
        pass
    except backend_errors() as error:
        raise BackendUnavailableError(f"Chroma failed while burying the lease {name}: {error}") from error
