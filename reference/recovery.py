"""Opening an embedded store, repairing it when a crash left its vector segment unreadable.

Chroma keeps a collection's records in SQLite (transactional) and its vectors in a separate HNSW
segment directory, `<path>/<segment-id>/`, which a killed process can leave half-written (seen
with Chroma 1.5.9: "Error creating hnsw segment reader: Error deserializing pickle file: EOF while
parsing"). Every later read of the collection then fails, although SQLite still holds every
acknowledged cell. The segment is derived data, so the repair is: close the client, move the
segment directory aside (kept, never deleted), reopen, read the cells, and write their vectors
again (from the exact copy in each cell's metadata) so that the collection is whole for any
other reader too. A marker file makes the rewrite resume if the repair itself is interrupted.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from .cells import CellBatch
from .chroma import persistent_client
from .errors import BackendUnavailableError, VectorSegmentUnreadableError
from .store import ChromaCellStore

log = logging.getLogger(__name__)
REWRITE_PENDING = "magbench-rewrite-vectors.pending"


def open_embedded(path: str, namespace: str, dim: int) -> tuple[Any, ChromaCellStore, CellBatch | None]:
    """A client of the embedded store at `path`, its cell store, and the cells it holds."""
    client, store = _open(path, namespace, dim)
    try:
        cells = store.load()
    except VectorSegmentUnreadableError as error:
        log.warning("%s; moving its vector segment aside and rebuilding it from the cells", error)
        client.close()
        client, store, cells = _reopen_without_vector_segment(path, namespace, dim, store.collection_id)
    except BaseException:
        client.close()
        raise
    pending = Path(path) / REWRITE_PENDING
    if pending.exists():
        rewritten = _closing_on_error(client, store.rewrite_vectors)
        pending.unlink()
        log.warning("rewrote the vectors of %d cells in %s", rewritten, path)
    return client, store, cells


def _reopen_without_vector_segment(
    path: str, namespace: str, dim: int, collection_id: str
) -> tuple[Any, ChromaCellStore, CellBatch | None]:
    """Move the segment aside (marking its rewrite as pending first), reopen, and read the cells."""
    (Path(path) / REWRITE_PENDING).touch()
    moved = set_aside_vector_segment(path, collection_id)
    client, store = _open(path, namespace, dim)
    cells = _closing_on_error(client, store.load)
    log.warning("reopened %s with %d cells; the unreadable segment is kept at %s", path, len(cells or ()), moved)
    return client, store, cells


def set_aside_vector_segment(path: str, collection_id: str) -> Path | None:
    """Move the collection's vector segment directory into `<path>/set-aside/`; None when it has none."""
    segment = _vector_segment(path, collection_id)
    source = Path(path) / segment
    if not source.is_dir():
        return None
    target = Path(path) / "set-aside" / f"{segment}-{time.time_ns()}"
    target.parent.mkdir(exist_ok=True)
    source.rename(target)
    return target


def _vector_segment(path: str, collection_id: str) -> str:
    """The id (= directory name) of the collection's vector segment, from Chroma's SQLite catalogue."""
    database = Path(path) / "chroma.sqlite3"
    try:
        with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as catalogue:
            row = catalogue.execute(
                "SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'", (collection_id,)
            ).fetchone()
    except sqlite3.Error as error:
        raise BackendUnavailableError(
            f"cannot find the vector segment of collection {collection_id} in {database} ({error}); "
            "this Chroma version lays out its store differently: move the store aside and rebuild it"
        ) from error
    if row is None:
        raise BackendUnavailableError(f"collection {collection_id} has no vector segment in {database}")
    return str(row[0])


def _open(path: str, namespace: str, dim: int) -> tuple[Any, ChromaCellStore]:
    client = persistent_client(path)
    return client, _closing_on_error(client, ChromaCellStore, client, namespace, dim)


def _closing_on_error(client: Any, call: Any, *args: Any) -> Any:
    """`call(*args)`; closes `client` before letting an error escape, so no Chroma system leaks."""
    try:
        return call(*args)
    except BaseException:
        client.close()
        raise
