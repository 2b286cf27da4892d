"""Cells in a PostgreSQL database (`CellularMemory(dsn=...)`): a row per cell with its scope, its order (`seq`), its
text, the engine's fields (JSON, as `server.py` writes them) and its exact float32 vector (`bytea`). The engine keeps
its own index, so the database needs no vector extension: it is durable rows read by scope.

Every write is one transaction that first checks, in the database, that this process still owns the namespace under
its epoch (`ownership.py`): a write of an owner that was taken over is refused and changes nothing. The ledger of
scopes is a table kept in the same transactions, so it is exact: a scope is listed while it holds cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..cells.table import CellBatch, CellRecord
from ..common.errors import BackendUnavailableError, DimensionMismatchError, EncoderMismatchError
from .ownership import Ownership
from .pgdb import Database, make_schema
from .protocol import StoreIdentity
from .server import batch_of, decoded_fields, decoded_vector, fields_of, record_fields

FENCE = "SELECT epoch FROM magbench_owners WHERE namespace = %s FOR KEY SHARE"
"""A write's first statement. The epoch is in a unique key, so the takeover's update of it locks the row against this
lock (a takeover waits for the writes in flight, and a write for a takeover in flight), while a renewal, which
changes no key, passes beside it: a long write does not hold up its owner's renewals."""
INSERT = """
INSERT INTO magbench_cells (namespace, id, scope, text, fields, vector)
SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bytea[])
"""
"""A batch is one statement (its rows as arrays): a process paused between statements leaves its transaction idle,
which the server ends after the lease (`pgdb.Database`), while one paused inside a pipeline of statements would hold
its locks for as long as it stays paused."""
UPSERT = (
    INSERT.strip()
    + """
ON CONFLICT (namespace, id) DO UPDATE
SET scope = excluded.scope, seq = excluded.seq, text = excluded.text, fields = excluded.fields, vector = excluded.vector
"""
)
HOLD_SCOPES = "INSERT INTO magbench_scopes (namespace, scope) SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING"
UPDATE_FIELDS = """
UPDATE magbench_cells AS c SET fields = u.fields FROM unnest(%s::text[], %s::text[]) AS u(id, fields)
WHERE c.namespace = %s AND c.id = u.id
"""
FORGET_EMPTIED = """
DELETE FROM magbench_scopes AS s WHERE s.namespace = %(namespace)s AND s.scope = ANY(%(scopes)s)
AND NOT EXISTS (SELECT 1 FROM magbench_cells c WHERE c.namespace = s.namespace AND c.scope = s.scope)
"""
RAISE_GROUPS = "UPDATE magbench_namespaces SET groups = greatest(groups, %s) WHERE namespace = %s"
CELLS = "SELECT id, text, fields, vector FROM magbench_cells WHERE namespace = %s"


class PostgresCells:
    """The cells of one namespace in a PostgreSQL database, written under `ownership` (checked by the database in
    every write's transaction)."""

    persistent = True

    def __init__(self, database: Database, namespace: str, identity: StoreIdentity, ownership: Ownership) -> None:
        self.database, self.namespace, self.dim, self.ownership = database, namespace, identity.dim, ownership
        with database.transaction(f"opening namespace {namespace!r}") as cursor:
            cursor.execute(
                "INSERT INTO magbench_namespaces (namespace, dim, encoder) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (namespace, identity.dim, identity.encoder),
            )
            cursor.execute("SELECT dim, encoder, groups FROM magbench_namespaces WHERE namespace = %s", (namespace,))
            dim, encoder, groups = cursor.fetchone() or (identity.dim, identity.encoder, 0)
        if dim != identity.dim:
            raise DimensionMismatchError(
                f"namespace {namespace!r} holds {dim}-d vectors but the encoder makes {identity.dim}-d ones; "
                "open it with the encoder it was built with, or use another namespace"
            )
        if identity.check_encoder and encoder != identity.encoder:
            raise EncoderMismatchError(
                f"namespace {namespace!r} holds vectors made by encoder {encoder!r}, not {identity.encoder!r}: their "
                f"similarities would be meaningless; open it with {encoder!r}, use another namespace, "
                "or pass check_encoder=False if you know the two encoders make the same vectors"
            )
        self._group_bound = int(groups)

    def load(self) -> CellBatch | None:
        return self._cells(f"{CELLS} ORDER BY seq", (self.namespace,))

    def load_scope(self, scope: str) -> CellBatch | None:
        return self._cells(f"{CELLS} AND scope = %s ORDER BY seq", (self.namespace, scope))

    def _cells(self, query: str, values: tuple[str, ...]) -> CellBatch | None:
        with self.database.transaction(f"reading namespace {self.namespace!r}") as cursor:
            rows = cursor.execute(query, values).fetchall()
        if not rows:
            return None
        cells = [(decoded_fields(cell, fields), decoded_vector(cell, bytes(vector), self.dim)) for cell, _, fields,
                 vector in rows]  # fmt: skip
        return batch_of([row[0] for row in rows], [row[1] for row in rows], cells)

    def count(self, scope: str | None = None) -> int:
        query, values = "SELECT count(*) FROM magbench_cells WHERE namespace = %s", [self.namespace]
        if scope is not None:
            query, values = query + " AND scope = %s", [self.namespace, scope]
        with self.database.transaction(f"counting namespace {self.namespace!r}") as cursor:
            found = cursor.execute(query, values).fetchone()
        return int(found[0]) if found else 0

    def scopes(self) -> list[str]:
        with self.database.transaction(f"reading the scopes of {self.namespace!r}") as cursor:
            rows = cursor.execute("SELECT scope FROM magbench_scopes WHERE namespace = %s", (self.namespace,))
            return [str(row[0]) for row in rows]

    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]:
        query = "SELECT id, scope FROM magbench_cells WHERE namespace = %s AND id = ANY(%s)"
        with self.database.transaction(f"reading namespace {self.namespace!r}") as cursor:
            return {str(cell): str(scope) for cell, scope in cursor.execute(query, (self.namespace, list(ids)))}

    def group_bound(self) -> int:
        return self._group_bound

    def put(self, batch: CellBatch) -> None:
        self._write("writing cells", INSERT, batch)

    def replace(self, batch: CellBatch, previous: Sequence[CellRecord]) -> None:
        """The cells of the batch's ids written again (as written last, in one transaction: a failed write leaves
        `previous` as it was)."""
        self._write("replacing cells", UPSERT, batch)

    def _write(self, doing: str, statement: str, batch: CellBatch) -> None:
        columns = (
            list(batch.ids),
            list(batch.scopes),
            list(batch.texts),
            [fields_of(batch, i) for i in range(len(batch))],
            [_bytes(batch, i) for i in range(len(batch))],
        )
        groups = int(batch.groups.max(initial=-1)) + 1
        with self._fenced(doing, groups) as cursor:
            cursor.execute(HOLD_SCOPES, (self.namespace, sorted(set(batch.scopes))))
            cursor.execute(statement, (self.namespace, *columns))

    def update(self, records: Sequence[CellRecord]) -> None:
        """The engine's fields of these cells (their text and vector stay)."""
        if not records:  # nothing to flush needs no ownership (closing after it is lost)
            return
        with self._fenced("updating cells", max(r.group_id + 1 for r in records)) as cursor:
            cursor.execute(
                UPDATE_FIELDS, ([r.id for r in records], [record_fields(r) for r in records], self.namespace)
            )

    def delete(self, ids: Sequence[str], scopes: Iterable[str]) -> None:
        """Delete these cells (of `scopes`), and forget the scopes they leave empty."""
        with self._fenced("deleting cells", 0) as cursor:
            cursor.execute(
                "DELETE FROM magbench_cells WHERE namespace = %s AND id = ANY(%s)", (self.namespace, list(ids))
            )
            cursor.execute(FORGET_EMPTIED, {"namespace": self.namespace, "scopes": sorted(set(scopes))})

    @contextmanager
    def _fenced(self, doing: str, groups: int) -> Iterator[Any]:
        """A write's transaction, begun by checking in the database that this process owns the namespace under its
        epoch (the owner row held `FOR KEY SHARE` until it commits, so a takeover waits for it or refuses it), and
        raising the bound of group ids to `groups` in it (the bound kept here moves once it is committed)."""
        self.ownership.check()
        try:
            with self.database.transaction(f"{doing} in namespace {self.namespace!r}") as cursor:
                held = cursor.execute(FENCE, (self.namespace,)).fetchone()
                if held is None or int(held[0]) != self.ownership.epoch:
                    raise self.ownership.lost()
                if groups > self._group_bound:
                    cursor.execute(RAISE_GROUPS, (groups, self.namespace))
                yield cursor
        except BackendUnavailableError:
            self.ownership.check()  # past the deadline, the lease is why (the server ends a paused owner's write)
            raise
        self._group_bound = max(self._group_bound, groups)


def _bytes(batch: CellBatch, i: int) -> bytes:
    vector: bytes = batch.vectors[i].astype("<f4").tobytes()
    return vector


def open_postgres(
    dsn: str, namespace: str, identity: StoreIdentity, ttl: float, *, load: bool
) -> tuple[Ownership, PostgresCells, CellBatch | None]:
    """The cells of `namespace` in the database at `dsn`, read once this process owns it (with `load`; without,
    none: they are read scope by scope), and the store that writes them under that ownership."""
    database = Database(dsn, idle_seconds=ttl)
    try:
        make_schema(database)
        ownership = Ownership.acquire(dsn, namespace, ttl)
    except BaseException:
        database.close()
        raise
    try:
        store = PostgresCells(database, namespace, identity, ownership)
        return ownership, store, store.load() if load else None
    except BaseException:
        ownership.release()
        database.close()
        raise
