"""A PostgreSQL database as the engine's store (extra `postgres`, psycopg 3): one connection per user, the tables
made on first use, and the database's failures as the engine's `BackendUnavailableError`.

The tables (every row keyed by its namespace, so many memories share one database):
`magbench_namespaces` what each namespace's vectors are and the bound of its group ids; `magbench_owners` who
serves each namespace and under which epoch (`ownership.py`); `magbench_cells` the cells (`postgres.py`), read
scope by scope through an index; `magbench_scopes` the ledger of the scopes that hold cells.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..common.errors import BackendUnavailableError, InvalidInputError

if TYPE_CHECKING:
    import psycopg

SCHEMA = """
CREATE TABLE IF NOT EXISTS magbench_namespaces (
    namespace text PRIMARY KEY,
    dim integer NOT NULL,
    encoder text NOT NULL,
    groups bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS magbench_owners (
    namespace text PRIMARY KEY,
    epoch bigint NOT NULL,
    holder text NOT NULL,
    expires timestamptz NOT NULL,
    UNIQUE (namespace, epoch)
);
CREATE SEQUENCE IF NOT EXISTS magbench_cell_seq;
CREATE TABLE IF NOT EXISTS magbench_cells (
    namespace text NOT NULL,
    id text NOT NULL,
    scope text NOT NULL,
    seq bigint NOT NULL DEFAULT nextval('magbench_cell_seq'),
    text text NOT NULL,
    fields text NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX IF NOT EXISTS magbench_cells_by_scope ON magbench_cells (namespace, scope, seq);
CREATE TABLE IF NOT EXISTS magbench_scopes (
    namespace text NOT NULL,
    scope text NOT NULL,
    PRIMARY KEY (namespace, scope)
);
"""
SCHEMA_LOCK = 0x6D6167  # concurrent CREATE ... IF NOT EXISTS can collide in the catalog: made under this lock
INSTALL = "pip install 'magnetic-bench[postgres]'"


def require_psycopg() -> None:
    """A clear error where the extra is not installed."""
    try:
        import psycopg  # noqa: F401
    except ImportError as error:
        raise InvalidInputError(f"a PostgreSQL store needs psycopg 3: {INSTALL}") from error


class Database:
    """One connection to the database at `dsn`, used by one caller at a time (calls queue on a lock), opened again
    after a failure; every `transaction()` commits as a whole or not at all. With `idle_seconds`, the server ends a
    transaction this process leaves idle that long (a paused process's, whose locks would hold up others)."""

    def __init__(self, dsn: str, *, idle_seconds: float | None = None) -> None:
        require_psycopg()
        self.dsn = dsn
        self.idle_seconds = idle_seconds
        self._connection: psycopg.Connection[tuple[Any, ...]] | None = None
        self._mutex = threading.Lock()

    @contextmanager
    def transaction(self, doing: str) -> Iterator[psycopg.Cursor[tuple[Any, ...]]]:
        """A cursor inside one transaction (rolled back if the block raises); the database's failures (it cannot be
        reached, the connection broke) as `BackendUnavailableError` naming what was being done."""
        import psycopg

        with self._mutex:
            try:
                connection = self._connect()
                with connection.transaction(), connection.cursor() as cursor:
                    yield cursor
            except psycopg.OperationalError as error:
                self._drop()
                raise BackendUnavailableError(f"PostgreSQL failed while {doing}: {error}") from error
            except psycopg.Error as error:
                self._drop()
                raise BackendUnavailableError(f"PostgreSQL refused {doing}: {error}") from error

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        import psycopg

        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
            if self.idle_seconds is not None:
                milliseconds = str(max(1, round(self.idle_seconds * 1000)))
                self._connection.execute("SELECT set_config('idle_in_transaction_session_timeout', %s, false)",
                                         (milliseconds,))  # fmt: skip
        return self._connection

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def close(self) -> None:
        with self._mutex:
            self._drop()


def make_schema(database: Database) -> None:
    """The tables, made if missing (in one transaction, so one of them standing means all do; concurrent makers
    wait on one advisory lock). Made tables are not touched again: creating an index, even one that exists, waits for
    every write in flight, a paused owner's too."""
    with database.transaction("making the tables") as cursor:
        if cursor.execute("SELECT to_regclass('magbench_scopes') IS NOT NULL").fetchone() == (True,):
            return
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        cursor.execute(SCHEMA)
