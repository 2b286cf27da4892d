"""An embedded Chroma store at a path: marked open while in use, and rebuilt after a crash.

Chroma keeps a collection's records in SQLite (transactional) and its vectors in an HNSW segment
directory, `<path>/<segment-id>/`, which a killed process can leave damaged. Seen with Chroma
1.5.9: a truncated `index_metadata.pickle` (every read fails), a log that no longer applies (every
write fails), and a `link_lists.bin` grown to hundreds of GB (sparse) that crashes the process.
Not all of these show as errors, so a store that was not closed cleanly is rebuilt on open, as is
one whose segment fails a read. The segment is derived data: the rebuild moves it to
`<path>/set-aside/` (the last one is kept) and writes every vector again from the exact copy in
the cells' metadata. A pending-repair marker makes an interrupted rebuild start over.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cells import CellBatch
from .chroma import persistent_client
from .errors import BackendUnavailableError, InvalidInputError, VectorSegmentUnreadableError
from .store import ChromaCellStore, StoreIdentity

log = logging.getLogger(__name__)
OPEN_MARKER = "magbench-open.pid"
REPAIR_PENDING = "magbench-repair.pending"


@dataclass
class EmbeddedStore:
    """The client of an embedded store and its cell store; `close()` records a clean shutdown."""

    path: Path
    client: Any
    store: ChromaCellStore

    def close(self) -> None:
        self.client.close()
        (self.path / OPEN_MARKER).unlink(missing_ok=True)


def open_embedded(path: str, namespace: str, identity: StoreIdentity) -> tuple[EmbeddedStore, CellBatch | None]:
    """Open the embedded store at `path` (rebuilding its vector segment if needed) and read its cells."""
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise InvalidInputError(f"{root} is a file, not a folder: give a folder path for the embedded store")
    root.mkdir(parents=True, exist_ok=True)
    _claim(root)
    try:
        client, store, cells = _open_repairing(root, namespace, identity)
    except BaseException:
        (root / OPEN_MARKER).unlink(missing_ok=True)
        raise
    return EmbeddedStore(root, client, store), cells


def _claim(root: Path) -> None:
    """Mark the store open by this process; a mark left by a dead process means it crashed."""
    marker = root / OPEN_MARKER
    holder = _holder(marker)
    if holder is not None and holder != os.getpid():
        if _alive(holder):
            raise BackendUnavailableError(
                f"{root} is open in process {holder}; embedded Chroma serves one process: "
                "close it there, or share the memory through a Chroma server"
            )
        log.warning("%s was not closed (process %d ended with it open); rebuilding its vector segment", root, holder)
        (root / REPAIR_PENDING).touch()
    marker.write_text(str(os.getpid()))


def _holder(marker: Path) -> int | None:
    """The PID in the open marker; 0 when it holds none (its writer died while writing it)."""
    if not marker.exists():
        return None
    text = marker.read_text().strip()
    return int(text) if text.isdigit() else 0


def _alive(pid: int) -> bool:
    if pid <= 0:  # os.kill(0, ...) would signal our own process group
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _open_repairing(
    root: Path, namespace: str, identity: StoreIdentity
) -> tuple[Any, ChromaCellStore, CellBatch | None]:
    pending = root / REPAIR_PENDING
    if not pending.exists():
        client, store = _open(root, namespace, identity)
        try:
            return client, store, store.load()
        except VectorSegmentUnreadableError as error:
            log.warning("%s; rebuilding it", error)
            pending.touch()
            client.close()
        except BaseException:
            client.close()
            raise
    started = time.perf_counter()
    moved = set_aside_vector_segment(root, f"{namespace}_cells")
    client, store = _open(root, namespace, identity)
    try:
        cells = store.load()
        store.rewrite_vectors(cells)
    except BaseException:
        client.close()
        raise
    pending.unlink()
    log.warning(
        "rebuilt the vector segment of %s from %d cells in %.1f s; the old one is kept at %s",
        root,
        len(cells or ()),
        time.perf_counter() - started,
        moved,
    )
    return client, store, cells


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
    database = root / "chroma.sqlite3"
    if not database.exists():
        return None
    query = (
        "SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id WHERE c.name = ? AND s.scope = 'VECTOR'"
    )
    try:
        with closing(sqlite3.connect(database)) as catalogue:  # read-write: it may roll back a killed write
            row = catalogue.execute(query, (collection,)).fetchone()
    except sqlite3.Error as error:
        raise BackendUnavailableError(
            f"cannot find the vector segment of {collection} in {database} ({error}); this Chroma version "
            "lays out its store differently: copy the cells out with another Chroma version"
        ) from error
    return None if row is None else str(row[0])


def _open(root: Path, namespace: str, identity: StoreIdentity) -> tuple[Any, ChromaCellStore]:
    client = persistent_client(str(root))
    try:
        return client, ChromaCellStore(client, namespace, identity)
    except BaseException:
        client.close()
        raise
