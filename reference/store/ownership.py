"""One process at a time serves a namespace in a PostgreSQL database, fenced by the database itself.

The engine answers from what it holds in memory, so two processes serving one namespace would each miss the
other's writes. The owner of a namespace is its row in `magbench_owners`: a holder, an epoch, and when its lease
expires by the database's clock (the only clock compared). Taking it is one statement: insert the row, or, when its
lease has expired, raise its epoch by one and set the new holder. The owner renews it every `ttl / RENEWALS`
seconds by an update that names its epoch (no row updated: it was taken).

Fencing: every write (`postgres.py`) begins its transaction by reading the owner row `FOR KEY SHARE` and is refused
(`LeaseLostError`) unless the epoch is still its own. The epoch is in a unique key, so a takeover's update of it
waits for that row lock (a renewal, changing no key, does not), and a write is
either committed before the takeover (and the new owner loads it) or sees the new epoch and is rolled back: a
paused or cut-off owner's late write never lands. A takeover touches one row: its cost does not grow with the cells.

Reads need no database check: the owner serves until `ttl` seconds after it sent its last renewal that succeeded,
by its own monotonic clock, which is before the database lets anyone take over (`check`).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import weakref
from datetime import datetime

from ..common.errors import BackendUnavailableError, LeaseLostError, NamespaceOwnedError
from .pgdb import Database
from .renewal import keep_renewing

log = logging.getLogger(__name__)
RENEWALS = 5
"""Renewals per lease term; an opener looks again every half renewal interval."""

TAKE = """
INSERT INTO magbench_owners AS owner (namespace, epoch, holder, expires)
VALUES (%(namespace)s, 1, %(holder)s, now() + %(ttl)s * interval '1 second')
ON CONFLICT (namespace) DO UPDATE
SET epoch = owner.epoch + 1, holder = excluded.holder, expires = excluded.expires
WHERE owner.expires <= now()
RETURNING epoch
"""
RENEW = """
UPDATE magbench_owners SET expires = now() + %(ttl)s * interval '1 second'
WHERE namespace = %(namespace)s AND epoch = %(epoch)s
"""
RELEASE = "UPDATE magbench_owners SET expires = '-infinity' WHERE namespace = %(namespace)s AND epoch = %(epoch)s"
HELD = "SELECT holder, expires, epoch FROM magbench_owners WHERE namespace = %(namespace)s"
WAIT = "SELECT set_config('lock_timeout', (%(ttl)s * 1000)::int::text, true)"
"""How long a taker waits for the owner row: a write or a renewal in flight holds it, and a paused owner's for at most
`ttl` (its connections, the writes' in `postgres.py` and the renewals', end a transaction left idle that long)."""


class Ownership:
    """This process's ownership of a namespace under `epoch`: renewed by a daemon thread on a connection of its own,
    checked before every call (`check`) and, by the database, in every write's transaction."""

    def __init__(self, database: Database, namespace: str, ttl: float, epoch: int, sent: float) -> None:
        self._database, self.namespace, self.ttl, self.epoch = database, namespace, ttl, epoch
        self._deadline = sent + ttl
        """Monotonic time until which this process may serve; -inf once the namespace is lost."""
        self._lost = False
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        weakref.finalize(self, self._stop.set)  # an ownership dropped unreleased stops renewing and runs out
        self._renewer = threading.Thread(
            target=keep_renewing,
            args=(weakref.ref(self), self._stop, ttl / RENEWALS),
            name=f"owner {namespace}",
            daemon=True,
        )
        self._renewer.start()

    @classmethod
    def acquire(cls, dsn: str, namespace: str, ttl: float) -> Ownership:
        """Take the namespace: at once when nobody holds it or its lease has expired; after its lease when the
        holder stops renewing (it died); `NamespaceOwnedError` as soon as the holder renews."""
        from psycopg.errors import LockNotAvailable

        database = Database(dsn, idle_seconds=ttl)  # a renewal paused before its commit holds the row no longer
        holder = f"{socket.gethostname()} pid {os.getpid()}"
        values: dict[str, object] = {"namespace": namespace, "holder": holder, "ttl": ttl}
        watched: datetime | None = None
        waits = 0
        try:
            while True:
                sent = time.monotonic()
                try:
                    with database.transaction(f"taking namespace {namespace!r}") as cursor:
                        cursor.execute(WAIT, values)
                        cursor.execute(TAKE, values)
                        taken = cursor.fetchone()
                        if taken is None:
                            cursor.execute(HELD, values)
                            held = cursor.fetchone()
                except BackendUnavailableError as error:
                    waits += 1
                    if not isinstance(error.__cause__, LockNotAvailable) or waits > RENEWALS:
                        raise
                    continue  # a write of the owner holds the row: its transaction ends, or the server ends it
                if taken is not None:
                    epoch = int(taken[0])
                    if epoch > 1:
                        log.info("took namespace %r (epoch %d)", namespace, epoch)
                    return cls(database, namespace, ttl, epoch, sent)
                if held is None:  # cannot be: a row that blocks the insert is there
                    continue
                owner, expires = str(held[0]), held[1]
                if watched is not None and expires != watched:
                    raise NamespaceOwnedError(
                        f"namespace {namespace!r} in this PostgreSQL database is served by another live process "
                        f"({owner}); send its requests there, close it there, or use another namespace"
                    )
                watched = expires if isinstance(expires, datetime) else None
                time.sleep(ttl / RENEWALS / 2)
        except BaseException:
            database.close()
            raise

    def check(self) -> None:
        """Refuse (`LeaseLostError`) unless this process holds the namespace now."""
        if time.monotonic() >= self._deadline:
            raise self.lapsed()

    def lost(self) -> LeaseLostError:
        """The error for a write the database refused: this process no longer holds the namespace, for good."""
        self._lose()
        return self.lapsed()

    def renew(self) -> bool:
        """Renew once: the deadline moves on if it succeeds, the namespace is lost if it was taken, and a database
        that does not answer leaves it as it was. Returns whether to go on renewing."""
        if self._lost:
            return False
        sent = time.monotonic()
        try:
            with self._database.transaction(f"renewing namespace {self.namespace!r}") as cursor:
                cursor.execute(RENEW, {"namespace": self.namespace, "epoch": self.epoch, "ttl": self.ttl})
                renewed = cursor.rowcount == 1
        except BackendUnavailableError as error:
            log.warning("renewing the lease on namespace %r failed: %s", self.namespace, error)
            return True
        if not renewed:
            log.error("namespace %r was taken over by another process", self.namespace)
            self._lose()
            return False
        with self._mutex:
            if self._lost:
                return False
            self._deadline = sent + self.ttl
        return True

    def release(self) -> None:
        """Stop renewing and expire the lease, so that the next opener need not wait; when the database cannot be
        reached, the lease runs out instead."""
        self._stop.set()
        self._lose()
        if self._renewer is not threading.current_thread():
            self._renewer.join(timeout=self.ttl)
        try:
            with self._database.transaction(f"releasing namespace {self.namespace!r}") as cursor:
                cursor.execute(RELEASE, {"namespace": self.namespace, "epoch": self.epoch})
        except BackendUnavailableError as error:
            log.warning("releasing namespace %r failed (its lease runs out by itself): %s", self.namespace, error)
        finally:
            self._database.close()

    def _lose(self) -> None:
        with self._mutex:
            self._lost, self._deadline = True, -math.inf

    def lapsed(self) -> LeaseLostError:
        if self._lost:
            return LeaseLostError(
                f"namespace {self.namespace!r} is no longer served by this process (another took it over, or it was "
                "closed): reopen it to serve it again"
            )
        return LeaseLostError(
            f"the lease on namespace {self.namespace!r} could not be renewed for {self.ttl:g} s (is the PostgreSQL "
            "server reachable?): calls are refused until a renewal succeeds"
        )
