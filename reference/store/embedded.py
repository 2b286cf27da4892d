"""An embedded store at a path: embedded Chroma beside the engine's own SQLite file, held by one process.

Layout: Chroma's `chroma.sqlite3` (in WAL mode, `_use_write_ahead_log`) and vector segment directory
`<segment-id>/` (the cells' ids and embeddings), the sidecar `magbench.sqlite3` (each cell's text, engine fields
and exact vector, `sidecar.py`), and `magbench.lock`.

One process at a time: opening takes an exclusive OS lock on `magbench.lock` (`filelock`: `flock` on
Unix) and holds it until `close()`; the OS releases it when the process ends, however it ends. A second
open, from this process or another, is refused while the lock is held.

Crashes. Chroma keeps records in SQLite (transactional) and vectors in the HNSW segment, which a process
killed during a Chroma write can leave damaged; seen with Chroma 1.5.9: a truncated
`index_metadata.pickle` (every read fails), a log that no longer applies (every write fails), a
`link_lists.bin` grown to hundreds of GB (sparse) that crashes the process. Not all of these show as
errors, so every Chroma write is marked in flight in the sidecar until it returns. A mark found on open
means a process died during a write: the segment is moved to `<path>/set-aside/` (the last one is kept)
and rebuilt from the sidecar's exact vectors, the cells of an add in flight (never acknowledged) are
removed and a delete in flight is finished. A store whose last holder died between writes opens as it
is, without a rebuild; one whose segment fails a read is rebuilt too.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock, Timeout

from ..cells.table import CellBatch, CellRecord
from ..common.chroma import client_open_at, persistent_client
from ..common.errors import BackendUnavailableError, InvalidInputError, VectorSegmentUnreadableError
from .collection import ChromaCells, cells_name
from .protocol import StoreIdentity
from .server import decoded_cells, drop_unfinished_batches
from .sidecar import SIDECAR, InFlight, Sidecar

log = logging.getLogger(__name__)
LOCK = "magbench.lock"
CHROMA_DATABASE = "chroma.sqlite3"


class EmbeddedCellStore:
    """Cells in an embedded Chroma collection (ids, embeddings) and the sidecar (texts, fields and exact
    vectors), each write marked in flight while Chroma runs it."""

    persistent = True

    def __init__(self, cells: ChromaCells, sidecar: Sidecar, dim: int) -> None:
        self.cells, self.sidecar, self.dim = cells, sidecar, dim
        self._next_seq = 0

    def load(self) -> CellBatch | None:
        """Every cell in insertion order: the sidecar's cells that Chroma holds. Leftovers of writes that
        failed part-way (a record without a row here: an add whose rollback failed; a row without a record: a
        delete that failed) are removed, with a warning."""
        held = set(self.cells.read([])["ids"])
        cells, deleted = self.sidecar.load(self.dim, held)
        if deleted:
            log.warning("%s: forgetting %d cells a failed delete left in the sidecar", self.cells.name, len(deleted))
            self.sidecar.drop(deleted)
        if unacknowledged := sorted(held - set(cells.ids if cells else ())):
            log.warning("%s: removing %d cells a failed write left in Chroma", self.cells.name, len(unacknowledged))
            self.cells.delete(unacknowledged)
        self._next_seq = self.sidecar.last_seq() + 1
        return cells

    def open_unloaded(self) -> None:
        """Ready to write without loading any cell (a memory that loads scopes as they are used, `residency.py`)."""
        self._next_seq = self.sidecar.last_seq() + 1

    def load_scope(self, scope: str) -> CellBatch | None:
        return self.sidecar.load_scope(self.dim, scope)

    def count(self, scope: str | None = None) -> int:
        return self.sidecar.count(scope)

    def scopes(self) -> list[str]:
        return self.sidecar.scopes()

    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]:
        return self.sidecar.scopes_of(ids)

    def group_bound(self) -> int:
        return self.sidecar.group_bound()

    def take_over_texts(self, updates: Mapping[str, str]) -> None:
        """A store of an earlier version kept its texts in Chroma's documents (and an update in flight its new
        texts in the mark, `updates`): copy them into the sidecar once."""
        if textless := self.sidecar.textless():
            found = self.cells.read(["documents"])
            text_of = dict(zip(found["ids"], found["documents"], strict=True)) | dict(updates)
            found_texts = {cell: text_of[cell] for cell in textless if isinstance(text_of.get(cell), str)}
            self.sidecar.fill_texts(found_texts)
            log.warning(
                "moved the texts of %d cells from Chroma's documents to %s", len(found_texts), self.sidecar.path
            )

    def kept_estimates(self) -> str | None:
        """The recall estimates saved at the last close, if no cell was written since (the engine checks the rest:
        `state/kept_estimates.py`)."""
        return self.sidecar.kept_estimates(self._next_seq - 1)

    def keep_estimates(self, kept: str) -> None:
        """Save the recall estimates in force as the memory closes, marked with the last cell written."""
        self.sidecar.keep_estimates(kept, self._next_seq - 1)

    def put(self, batch: CellBatch) -> None:
        """Fields and vectors first (durable, the write marked in flight), then Chroma; all or nothing."""
        mark = self.sidecar.add(batch, self._next_seq)
        try:
            self.cells.add(batch, documents=False)
        except Exception:
            self.sidecar.end(mark, removing=batch.ids)
            raise
        self.sidecar.end(mark)
        self._next_seq += len(batch)

    def replace(self, batch: CellBatch, previous: Sequence[CellRecord]) -> None:
        """Cells written again under their ids (as written last): the sidecar's rows replaced and the update
        marked in flight (one transaction), then Chroma's embeddings. A failed Chroma write puts `previous` back
        in both; a process killed during it has it finished on open."""
        mark, replaced = self.sidecar.replace(batch, self._next_seq)
        try:
            self.cells.upsert(batch.ids, batch.vectors)
        except Exception as error:
            try:
                self.cells.upsert([r.id for r in previous], np.stack([r.vector for r in previous]))
                self.sidecar.restore(mark, replaced)
            except Exception as rollback_error:
                error.add_note(
                    f"putting the previous cells back failed as well (reopening finishes the update): {rollback_error}"
                )
            raise
        self.sidecar.end(mark)
        self._next_seq += len(batch)

    def update(self, records: Sequence[CellRecord]) -> None:
        """Only the sidecar changes: Chroma holds none of the mutable fields."""
        self.sidecar.update(records)

    def delete(self, ids: Sequence[str], scopes: Iterable[str]) -> None:
        """A delete that fails part-way stays marked, and the next open finishes it (the sidecar knows the
        scopes)."""
        mark = self.sidecar.begin("delete", ids)
        self.cells.delete(ids)
        self.sidecar.end(mark, removing=ids)


@dataclass
class EmbeddedStore:
    """An open embedded store: its lock, Chroma client and cell store; `close()` releases them."""

    lock: FileLock
    client: Any
    store: EmbeddedCellStore

    def close(self) -> None:
        try:
            self.store.sidecar.close()
            self.client.close()
        finally:
            self.lock.release()


def open_embedded(
    path: str, namespace: str, identity: StoreIdentity, *, load: bool = True
) -> tuple[EmbeddedStore, CellBatch | None]:
    """Open the embedded store at `path` (repairing what a crash left) and read its cells (with `load`; without,
    none: they are read scope by scope, `EmbeddedCellStore.load_scope`)."""
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise InvalidInputError(f"{root} is a file, not a folder: give a folder path for the embedded store")
    root.mkdir(parents=True, exist_ok=True)
    with ExitStack() as undo:
        lock = _claim(root)
        undo.callback(lock.release)
        new_sidecar = not (root / SIDECAR).exists()
        sidecar = Sidecar(root)
        undo.callback(sidecar.close)
        client, store, cells = _open_repairing(root, namespace, identity, sidecar, new_sidecar, load)
        undo.pop_all()
    return EmbeddedStore(lock, client, store), cells if load else None


def _claim(root: Path) -> FileLock:
    """Hold the store's OS lock (released by the OS if this process dies), or refuse."""
    lock = FileLock(root / LOCK, thread_local=False, fallback_to_soft=False, preserve_lock_file=True)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise BackendUnavailableError(
            f"{root} is open in another process, or already open in this one; embedded Chroma serves one "
            "process: close it there, or share the memory through a Chroma server"
        ) from None
    return lock


def _open_repairing(
    root: Path, namespace: str, identity: StoreIdentity, sidecar: Sidecar, new_sidecar: bool, load: bool
) -> tuple[Any, EmbeddedCellStore, CellBatch | None]:
    marks = sidecar.in_flight()
    if marks:
        log.warning("%s was left with a write in flight (its process ended during it); repairing it", root)
        return _repair(root, namespace, identity, sidecar, marks)
    client, store = _open(root, namespace, identity, sidecar)
    try:
        if new_sidecar and store.cells.count():
            _take_over_fields(client, namespace, identity, sidecar)
        store.take_over_texts({})
        if not load:
            store.open_unloaded()
            return client, store, None
        return client, store, store.load()
    except VectorSegmentUnreadableError as error:
        log.warning("%s; rebuilding it", error)
        client.close()
    except BaseException:
        client.close()
        raise
    return _repair(root, namespace, identity, sidecar, [])


def _repair(
    root: Path, namespace: str, identity: StoreIdentity, sidecar: Sidecar, marks: list[InFlight]
) -> tuple[Any, EmbeddedCellStore, CellBatch | None]:
    """Rebuild the vector segment from the sidecar's vectors, after finishing the writes in flight: a delete
    is done again, an update is written again (the sidecar holds it whole), an add that Chroma holds whole is
    kept and one it holds in part is removed. The repair replaces those marks by its own until it is done, so
    a repair that is killed starts over."""
    started = time.perf_counter()
    moved = set_aside_vector_segment(root, cells_name(namespace))
    client, store = _open(root, namespace, identity, sidecar)
    try:
        doomed = sorted(
            {cell for mark in marks if mark.write in ("delete", "rebuild")
             or (mark.write == "add" and store.cells.present(mark.ids) != set(mark.ids)) for cell in mark.ids}
        )  # fmt: skip
        store.take_over_texts(
            {cell: text for mark in marks if mark.texts is not None for cell, text in zip(mark.ids, mark.texts)}
        )
        sidecar.begin_repair(doomed)
        store.cells.delete(doomed)
        sidecar.drop(doomed)
        cells = store.load()
        if cells is not None:
            store.cells.upsert(cells.ids, cells.vectors)
    except BaseException:
        client.close()
        raise
    sidecar.end_repair()
    log.warning(
        "rebuilt the vector segment of %s from %d cells in %.1f s (%d unfinished cells removed); the old one is "
        "kept at %s",
        root,
        len(cells or ()),
        time.perf_counter() - started,
        len(doomed),
        moved,
    )
    return client, store, cells


def _take_over_fields(client: Any, namespace: str, identity: StoreIdentity, sidecar: Sidecar) -> None:
    """A store written before the sidecar kept the fields in Chroma's metadata: copy them over once."""
    chroma = ChromaCells(client, namespace, identity)
    drop_unfinished_batches(chroma)
    cells = decoded_cells(chroma.read(["documents", "metadatas"]), identity.dim)
    if cells is not None:
        sidecar.end(sidecar.add(cells, 0))
        log.warning("moved the fields of %d cells from Chroma's metadata to %s", len(cells), sidecar.path)


def set_aside_vector_segment(root: Path, collection: str) -> Path | None:
    """Move the collection's vector segment directory to `<root>/set-aside/`; None when it has none."""
    segment = _vector_segment(root, collection)
    if segment is None or not (root / segment).is_dir():
        return None
    source = root / segment
    target = root / "set-aside" / segment
    shutil.rmtree(target, ignore_errors=True)  # only the last one is kept
    target.parent.mkdir(exist_ok=True)
    source.rename(target)
    return target


def _vector_segment(root: Path, collection: str) -> str | None:
    """The id (= directory name) of the collection's vector segment, from Chroma's SQLite catalogue."""
    database = root / CHROMA_DATABASE
    if not database.exists():
        return None
    query = (
        "SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id WHERE c.name = ? AND s.scope = 'VECTOR'"
    )
    try:
        rows = _chroma_sql(database, query, collection)  # read-write: it may roll back a killed write
    except sqlite3.Error as error:
        raise BackendUnavailableError(
            f"cannot find the vector segment of {collection} in {database} ({error}); this Chroma version "
            "lays out its store differently: copy the cells out with another Chroma version"
        ) from error
    return str(rows[0][0]) if rows else None


def _open(root: Path, namespace: str, identity: StoreIdentity, sidecar: Sidecar) -> tuple[Any, EmbeddedCellStore]:
    _use_write_ahead_log(root)
    client = persistent_client(str(root))
    try:
        return client, EmbeddedCellStore(ChromaCells(client, namespace, identity), sidecar, identity.dim)
    except BaseException:
        client.close()
        raise


def _use_write_ahead_log(root: Path) -> None:
    """Put Chroma's SQLite file in WAL mode before Chroma opens it. Each Chroma commit then syncs its log alone,
    where the rollback journal Chroma leaves in place syncs the journal, the database and the directory, and stays
    as durable: Chroma's connections keep SQLite's full sync. The mode is kept in the file. It is never changed
    under a Chroma client of this process that has the file open, whose connections would break
    (chroma-core/chroma#7040); such a store keeps its mode."""
    database = root / CHROMA_DATABASE
    if in_wal_mode(database) or client_open_at(root):
        return
    try:
        if database.exists():
            _chroma_sql(database, "PRAGMA journal_mode=WAL")
        else:  # a new file: no connection of Chroma's own SQLite can hold it
            with closing(sqlite3.connect(database)) as created:
                created.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as error:
        raise BackendUnavailableError(f"cannot put {database} in WAL mode: {error}") from error


def in_wal_mode(database: Path) -> bool:
    """Whether this SQLite file is in WAL mode, read from its header (the read and write format versions are 2)
    without opening it."""
    try:
        with database.open("rb") as file:
            header = file.read(20)
    except FileNotFoundError:
        return False
    return header[18:20] == b"\x02\x02"


SQL_ELSEWHERE = (
    "import json, sqlite3, sys\n"
    "with sqlite3.connect(sys.argv[1]) as database:\n"
    "    print(json.dumps(database.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()))"
)


def _chroma_sql(database: Path, statement: str, *parameters: str) -> list[list[Any]]:
    """The rows of `statement` run on Chroma's SQLite file in a process of its own. SQLite's file locks belong to
    the process, so this process's `sqlite3` beside the connections of Chroma's own SQLite (which outlive a closed
    client for a moment) would take the locks they hold as its own, and could reset the shared memory they map."""
    command = [sys.executable, "-I", "-c", SQL_ELSEWHERE, str(database), statement, json.dumps(parameters)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise sqlite3.Error(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    rows: list[list[Any]] = json.loads(done.stdout)
    return rows
