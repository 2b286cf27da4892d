"""The embedded store's own SQLite file (`<path>/magbench.sqlite3`): each cell's text, engine fields and
exact vector, the Chroma writes in flight, and the recall estimates kept at the last close.

Chroma holds each cell's id and embedding, the vector index it serves. The rest lives here, in typed columns
of a STRICT table (a damaged value cannot be read back as another type), written once per batch:
- the engine's fields would cost Chroma a metadata row per key and cell, which slows its ingest, and its exact
  vectors a base64 copy;
- the texts, because Chroma indexes every document it is given for its own full-text search, which the
  engine does not use (it has `lexical.py`) and which slows Chroma's add down. Stores of earlier versions hold
  their texts in Chroma's documents: a NULL text here, copied over once on open (`embedded.py`).
WAL mode with full sync: a write here is durable before the Chroma write it precedes. One scope's cells are read
on a connection of their own (`load_scope`), which WAL lets read while the engine writes on the other.

A Chroma write is marked in flight (for an add, in the transaction that stores the batch) and unmarked when
Chroma returns. A mark found on open means a process died during a Chroma write: its add is undone (never
acknowledged) or its delete finished, and the vector segment, which such a kill can damage, is rebuilt
(`embedded.py`); the repair is marked in flight too, so a killed repair starts over.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..cells.table import CellBatch, CellRecord, ConflictNote
from ..common.errors import BackendUnavailableError, StoreDamagedError

SIDECAR = "magbench.sqlite3"
Write = Literal["add", "delete", "update", "rebuild"]
SCHEMA = """
CREATE TABLE IF NOT EXISTS cells (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, grp INTEGER NOT NULL, kind TEXT NOT NULL,
    importance REAL NOT NULL, timestamp REAL NOT NULL, access INTEGER NOT NULL,
    meta TEXT NOT NULL, conflicts TEXT NOT NULL, episode TEXT NOT NULL, scope TEXT NOT NULL DEFAULT '',
    history TEXT NOT NULL DEFAULT '[]', vector BLOB NOT NULL, text TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS in_flight (
    mark INTEGER PRIMARY KEY AUTOINCREMENT, write TEXT NOT NULL, ids TEXT NOT NULL, texts TEXT
);
CREATE TABLE IF NOT EXISTS estimates (one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL, kept TEXT NOT NULL)
STRICT;
"""
INDEXES = """
CREATE INDEX IF NOT EXISTS cells_by_scope ON cells (scope, seq);
CREATE INDEX IF NOT EXISTS cells_by_group ON cells (grp);
CREATE INDEX IF NOT EXISTS cells_without_text ON cells (seq) WHERE text IS NULL;
"""
"""One scope's cells in order (loading a scope), the largest group id, and the rows of an earlier version's
layout, each found without reading every row (a file written before them gets them on its first open)."""
ADDED_COLUMNS = {
    "cells": {"scope": "TEXT NOT NULL DEFAULT ''", "history": "TEXT NOT NULL DEFAULT '[]'", "text": "TEXT"},
    "in_flight": {"texts": "TEXT"},
}
"""Columns later versions added, with what a file written before them holds."""
COLUMNS = "seq, id, grp, kind, importance, timestamp, access, meta, conflicts, episode, scope, history, vector, text"
INSERT = f"INSERT INTO cells ({COLUMNS}) VALUES ({', '.join('?' * len(COLUMNS.split(',')))})"
EMPTY_META, NO_CONFLICTS, NO_HISTORY = "{}", "[]", "[]"


@dataclass(frozen=True)
class InFlight:
    """A Chroma write that a process began and did not see end."""

    write: Write
    ids: list[str]
    texts: list[str] | None = None
    """An update's new texts, in marks of earlier versions (which kept the texts in Chroma's documents)."""


class Sidecar:
    """The cells' fields and vectors by id, in insertion order (`seq`)."""

    def __init__(self, root: Path) -> None:
        self.path = root / SIDECAR
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA page_size=16384")  # a new file only: several rows, each with its vector, to a page
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
            self._add_missing_columns()
            self._db.executescript(INDEXES)
            self._reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._reader.execute("PRAGMA query_only=ON")
        except sqlite3.Error as error:
            raise BackendUnavailableError(f"cannot open {self.path}: {error}") from error
        self._reading = threading.Lock()

    def close(self) -> None:
        self._reader.close()
        self._db.close()

    def _add_missing_columns(self) -> None:
        """Bring a file written by an earlier version up to the schema."""
        for table, columns in ADDED_COLUMNS.items():
            present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            for name, declaration in columns.items():
                if name not in present:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")

    def count(self, scope: str | None = None) -> int:
        """Cells stored (of `scope`, when given)."""
        query = "SELECT count(*) FROM cells" + ("" if scope is None else " WHERE scope = ?")
        with self._reading:
            return int(self._reader.execute(query, () if scope is None else (scope,)).fetchone()[0])

    def scopes(self) -> list[str]:
        """The scopes that hold cells."""
        with self._reading:
            return [row[0] for row in self._reader.execute("SELECT DISTINCT scope FROM cells")]

    def load(self, dim: int, held: Set[str]) -> tuple[CellBatch | None, list[str]]:
        """The cells whose ids are `held` (by Chroma), in insertion order, and the ids of the others.
        A value that cannot be read back is a `StoreDamagedError` naming its cell."""
        rows = self._db.execute(f"SELECT {COLUMNS} FROM cells ORDER BY seq").fetchall()
        kept = [row for row in rows if row[1] in held]
        return _batch(kept, dim), [row[1] for row in rows if row[1] not in held]

    def load_scope(self, dim: int, scope: str) -> CellBatch | None:
        """The cells of one scope, in insertion order (on the reading connection: writes may go on)."""
        with self._reading:
            rows = self._reader.execute(f"SELECT {COLUMNS} FROM cells WHERE scope = ? ORDER BY seq", (scope,))
            return _batch(rows.fetchall(), dim)

    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]:
        """The scope of each of these ids that is stored."""
        found: dict[str, str] = {}
        with self._reading:
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                query = f"SELECT id, scope FROM cells WHERE id IN ({', '.join('?' * len(chunk))})"
                found.update(self._reader.execute(query, chunk).fetchall())
        return found

    def group_bound(self) -> int:
        """One more than the largest group id stored (0 for none)."""
        return int(self._db.execute("SELECT coalesce(max(grp), -1) + 1 FROM cells").fetchone()[0])

    def textless(self) -> list[str]:
        """The cells an earlier version wrote with their texts in Chroma's documents."""
        return [row[0] for row in self._db.execute("SELECT id FROM cells WHERE text IS NULL")]

    def fill_texts(self, texts: Mapping[str, str]) -> None:
        """Store the texts of cells written without one here."""
        with self._transaction() as db:
            db.executemany("UPDATE cells SET text = ? WHERE id = ?", [(text, key) for key, text in texts.items()])

    def last_seq(self) -> int:
        """The largest `seq` stored (-1 for none)."""
        return int(self._db.execute("SELECT coalesce(max(seq), -1) FROM cells").fetchone()[0])

    def kept_estimates(self, seq: int) -> str | None:
        """The recall estimates `keep_estimates` kept when the last cell written was numbered `seq` (None: none, or
        kept at another)."""
        row = self._db.execute("SELECT kept FROM estimates WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])

    def keep_estimates(self, kept: str, seq: int) -> None:
        """Keep the recall estimates in force (`state/kept_estimates.py`), made when the last cell written was
        numbered `seq`, in place of any kept before. Not synced: estimates lost with power are made again."""
        with self._transaction(durable=False) as db:
            db.execute("INSERT OR REPLACE INTO estimates (one, seq, kept) VALUES (1, ?, ?)", (seq, kept))

    def add(self, batch: CellBatch, first_seq: int) -> int:
        """Store a batch's fields and vectors and mark its Chroma write in flight (one transaction); returns
        the mark."""
        with self._transaction() as db:
            db.executemany(INSERT, _rows(batch, first_seq))
            return self._mark(db, "add", batch.ids)

    def replace(self, batch: CellBatch, first_seq: int) -> tuple[int, list[tuple[Any, ...]]]:
        """Store a batch of cells that replace the stored cells of the same ids (numbered from `first_seq`:
        they count as written last) and mark the Chroma update in flight (one transaction); returns the mark
        and the replaced rows (for `restore`)."""
        ids = [(cell_id,) for cell_id in batch.ids]
        with self._transaction() as db:
            old = [db.execute(f"SELECT {COLUMNS} FROM cells WHERE id = ?", key).fetchone() for key in ids]
            db.executemany("DELETE FROM cells WHERE id = ?", ids)
            db.executemany(INSERT, _rows(batch, first_seq))
            return self._mark(db, "update", batch.ids), [row for row in old if row is not None]

    def restore(self, mark: int, rows: Sequence[tuple[Any, ...]]) -> None:
        """Undo a `replace` whose Chroma update failed: its replaced `rows` come back as they were."""
        with self._transaction() as db:
            db.executemany("DELETE FROM cells WHERE id = ?", [(row[1],) for row in rows])
            db.executemany(INSERT, rows)
            db.execute("DELETE FROM in_flight WHERE mark = ?", (mark,))

    def update(self, records: Sequence[CellRecord]) -> None:
        """Rewrite the fields that change after a write: group, access count, conflicts."""
        rows = [(r.group_id, r.access_count, _conflicts_json(r.conflicts), r.id) for r in records]
        with self._transaction() as db:
            db.executemany("UPDATE cells SET grp = ?, access = ?, conflicts = ? WHERE id = ?", rows)

    def begin(self, write: Write, ids: Sequence[str]) -> int:
        """Mark a Chroma write in flight; returns the mark. Not synced: a mark lost with power leaves what a
        delete removed from Chroma in the sidecar only, and `load` forgets that."""
        with self._transaction(durable=False) as db:
            return self._mark(db, write, ids)

    def begin_repair(self, doomed: Sequence[str]) -> None:
        """Replace every mark by the repair's: a rebuild that also removes the cells `doomed`; `end_repair`
        clears it."""
        with self._transaction() as db:
            db.execute("DELETE FROM in_flight")
            self._mark(db, "rebuild", doomed)

    def end_repair(self) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM in_flight")

    def drop(self, ids: Sequence[str]) -> None:
        """Forget these cells' rows."""
        with self._transaction() as db:
            db.executemany("DELETE FROM cells WHERE id = ?", [(cell_id,) for cell_id in ids])

    def end(self, mark: int, *, removing: Sequence[str] = ()) -> None:
        """The write marked `mark` ended; `removing`: cells whose rows go with it (a delete, a failed add).
        Not synced: a mark that comes back after a power loss names an add that Chroma holds whole, which
        the repair keeps."""
        with self._transaction(durable=False) as db:
            db.executemany("DELETE FROM cells WHERE id = ?", [(cell_id,) for cell_id in removing])
            db.execute("DELETE FROM in_flight WHERE mark = ?", (mark,))

    def in_flight(self) -> list[InFlight]:
        """The writes a process began and did not see end, oldest first."""
        rows = self._db.execute("SELECT write, ids, texts FROM in_flight ORDER BY mark").fetchall()
        return [
            InFlight(write, json.loads(ids), None if texts is None else json.loads(texts)) for write, ids, texts in rows
        ]

    @staticmethod
    def _mark(db: sqlite3.Connection, write: Write, ids: Sequence[str]) -> int:
        cursor = db.execute("INSERT INTO in_flight (write, ids) VALUES (?, ?)", (write, json.dumps(list(ids))))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    @contextmanager
    def _transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error; SQLite's errors become `BackendUnavailableError`.
        A durable commit is synced to disk; any commit survives the process being killed (WAL)."""
        try:
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            finally:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
        except sqlite3.Error as error:
            raise BackendUnavailableError(f"cannot write {self.path}: {error}") from error


def _batch(rows: Sequence[tuple[Any, ...]], dim: int) -> CellBatch | None:
    """Rows of the cells table (in `COLUMNS` order) as a batch (None for none); a value that cannot be read back
    is a `StoreDamagedError` naming its cell."""
    if not rows:
        return None
    (
        _,
        ids,
        groups,
        kinds,
        importance,
        timestamps,
        access,
        metas,
        conflicts,
        episodes,
        scopes,
        histories,
        vectors,
        texts,
    ) = zip(*rows, strict=True)
    for cell_id, vector in zip(ids, vectors):
        if len(vector) != 4 * dim:
            raise StoreDamagedError(f"cell {cell_id!r}: its stored vector has {len(vector)} bytes, not {4 * dim}")
    for cell_id, text in zip(ids, texts):
        if not isinstance(text, str):
            raise StoreDamagedError(f"cell {cell_id!r}: its text is missing from the store")
    matrix = np.frombuffer(b"".join(vectors), dtype="<f4").reshape(len(ids), dim)
    if not np.isfinite(matrix).all():
        damaged = ids[int(np.flatnonzero(~np.isfinite(matrix).all(axis=1))[0])]
        raise StoreDamagedError(f"cell {damaged!r}: its stored vector is not finite")
    return CellBatch(
        ids=list(ids),
        texts=list(texts),
        vectors=matrix,
        groups=np.asarray(groups, dtype=np.int64),
        kinds=list(kinds),
        importance=np.asarray(importance, dtype=np.float64),
        timestamps=np.asarray(timestamps, dtype=np.float64),
        access=np.asarray(access, dtype=np.int64),
        metadata=[_metadata(cell_id, text) for cell_id, text in zip(ids, metas)],
        conflicts=[_conflicts(cell_id, text) for cell_id, text in zip(ids, conflicts)],
        episodes=list(episodes),
        scopes=list(scopes),
        histories=[_history(cell_id, text) for cell_id, text in zip(ids, histories)],
    )


def _rows(batch: CellBatch, first_seq: int) -> Iterator[tuple[Any, ...]]:
    """A batch's rows of the cells table, numbered from `first_seq`."""
    return zip(
        range(first_seq, first_seq + len(batch)),
        batch.ids,
        batch.groups.tolist(),
        batch.kinds,
        batch.importance.tolist(),
        batch.timestamps.tolist(),
        batch.access.tolist(),
        [_json(metadata, EMPTY_META) for metadata in batch.metadata],
        map(_conflicts_json, batch.conflicts),
        batch.episodes,
        batch.scopes,
        [_json(list(texts), NO_HISTORY) for texts in batch.histories],
        map(bytes, np.ascontiguousarray(batch.vectors, dtype="<f4")),
        batch.texts,
        strict=True,
    )


def _json(value: object, empty: str) -> str:
    return json.dumps(value, ensure_ascii=False) if value else empty


def _conflicts_json(conflicts: Sequence[ConflictNote]) -> str:
    return _json([c.to_json() for c in conflicts], NO_CONFLICTS)


def _decoded(cell_id: str, what: str, text: str) -> Any:
    """A JSON column of one cell; damage names the cell."""
    try:
        return json.loads(text)
    except ValueError as error:
        raise StoreDamagedError(f"cell {cell_id!r}: its stored {what} cannot be read ({error})") from error


def _metadata(cell_id: str, text: str) -> dict[str, Any]:
    if text == EMPTY_META:
        return {}
    metadata = _decoded(cell_id, "metadata", text)
    if not isinstance(metadata, dict):
        raise StoreDamagedError(f"cell {cell_id!r}: its stored metadata is a {type(metadata).__name__}")
    return metadata


def _history(cell_id: str, text: str) -> list[dict[str, Any]]:
    if text == NO_HISTORY:
        return []
    history = _decoded(cell_id, "history", text)
    if not isinstance(history, list) or not all(isinstance(entry, dict) for entry in history):
        raise StoreDamagedError(f"cell {cell_id!r}: its stored history is not a list of entries")
    return history


def _conflicts(cell_id: str, text: str) -> list[ConflictNote]:
    if text == NO_CONFLICTS:
        return []
    try:
        return [ConflictNote.from_json(note) for note in _decoded(cell_id, "conflicts", text)]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise StoreDamagedError(f"cell {cell_id!r}: its stored conflicts cannot be read ({error})") from error
