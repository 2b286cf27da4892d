"""The master store of cells: the persistent source of truth (`{namespace}_cells` in Chroma).

Each cell is one record: its text, its vector (as the Chroma embedding, and an exact float32 copy
in the metadata, from which cells are loaded: see `ChromaCellStore._read`), and the engine's fields.

Groups, per-group indexes and the entity index are derived from it on open. `NullStore`
stands in when nothing is persisted (`path=None`, no client).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .cells import CellBatch, CellRecord, ConflictNote
from .chroma import backend_errors, guarded
from .errors import BackendUnavailableError, DimensionMismatchError, EncoderMismatchError, VectorSegmentUnreadableError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreIdentity:
    """What the vectors of a store are: their dimension and the encoder that made them.

    `encoder=None` skips the encoder check (an explicit override, e.g. after re-encoding elsewhere).
    """

    dim: int
    encoder: str | None


class CellStore(Protocol):
    persistent: bool

    def load(self) -> CellBatch | None: ...
    def put(self, batch: CellBatch) -> None: ...
    def update(self, records: Sequence[CellRecord]) -> None: ...
    def delete(self, ids: Sequence[str]) -> None: ...


class NullStore:
    """Keeps nothing: the in-memory table is all there is."""

    persistent = False

    def load(self) -> CellBatch | None:
        return None

    def put(self, batch: CellBatch) -> None:
        pass

    def update(self, records: Sequence[CellRecord]) -> None:
        pass

    def delete(self, ids: Sequence[str]) -> None:
        pass


class ChromaCellStore:
    """Cells in one cosine-space Chroma collection; engine fields in each cell's metadata."""

    persistent = True

    def __init__(self, client: Any, namespace: str, identity: StoreIdentity) -> None:
        self._client = client
        self.name = f"{namespace}_cells"
        dim, encoder = identity.dim, identity.encoder
        self._collection = guarded(
            f"opening collection {self.name}",
            client.get_or_create_collection,
            self.name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"dim": dim, "encoder": encoder or "unknown", "normalised": True},
        )
        stored = self._collection.metadata or {}
        if stored.get("dim", dim) != dim:
            raise DimensionMismatchError(
                f"collection {self.name} holds {stored['dim']}-d vectors but the encoder makes {dim}-d ones; "
                "open it with the encoder it was built with, or use another path or namespace"
            )
        made_by = stored.get("encoder", "unknown")
        if encoder is not None and made_by not in ("unknown", encoder):
            raise EncoderMismatchError(
                f"collection {self.name} holds vectors made by encoder {made_by!r}, not {encoder!r}: their "
                f"similarities would be meaningless; open it with {made_by!r}, use another path or namespace, "
                "or pass check_encoder=False if you know the two encoders make the same vectors"
            )
        self._batch = guarded("reading the batch limit", client.get_max_batch_size)
        self._next_seq = 0

    def load(self) -> CellBatch | None:
        """Every cell, from documents and metadata only (see `_read`), in insertion order."""
        result = self._drop_unfinished_batches(self._read())
        if not result["ids"]:
            return None
        metas = result["metadatas"]
        order = np.argsort([m["seq"] for m in metas], kind="stable").tolist()
        metas = [metas[i] for i in order]
        self._next_seq = metas[-1]["seq"] + 1
        return CellBatch(
            ids=[result["ids"][i] for i in order],
            texts=[result["documents"][i] for i in order],
            vectors=np.stack([_vector(m) for m in metas]),
            groups=np.asarray([m["group"] for m in metas], dtype=np.int64),
            kinds=[str(m["kind"]) for m in metas],
            importance=np.asarray([m["importance"] for m in metas], dtype=np.float64),
            timestamps=np.asarray([m["timestamp"] for m in metas], dtype=np.float64),
            access=np.asarray([m["access"] for m in metas], dtype=np.int64),
            metadata=[json.loads(m["meta"]) for m in metas],
            conflicts=[[ConflictNote.from_json(c) for c in json.loads(m.get("conflicts", "[]"))] for m in metas],
        )

    def _read(self) -> dict[str, Any]:
        """Documents and metadata, which Chroma keeps in SQLite (transactional).

        Vectors are read from the metadata copy, never from Chroma's vector segment, which a
        process killed mid-write can leave damaged while SQLite holds every acknowledged write.
        Chroma 1.5.9 still opens that segment (and applies its pending log) on every read, so such
        damage fails the read: that raises `VectorSegmentUnreadableError`, which
        `embedded.open_embedded` repairs.
        """
        try:
            found: dict[str, Any] = self._collection.get(include=["documents", "metadatas"])
            return found
        except backend_errors() as error:
            if "hnsw" not in str(error).lower():
                raise BackendUnavailableError(f"Chroma failed while reading {self.name}: {error}") from error
            raise VectorSegmentUnreadableError(
                f"Chroma cannot read the vector segment of {self.name} ({error}); its records are intact: "
                "opening the store by path (CellularMemory(path=...)) rebuilds the segment"
            ) from error

    def rewrite_vectors(self, cells: CellBatch | None) -> None:
        """Put the cells' vectors into a vector segment rebuilt from empty (records stay as they are)."""
        if cells is None:
            return
        for start in range(0, len(cells), self._batch):
            stop = start + self._batch
            guarded(
                f"rewriting the vectors of {self.name}",
                self._collection.upsert,
                ids=cells.ids[start:stop],
                embeddings=cells.vectors[start:stop],
            )

    def put(self, batch: CellBatch) -> None:
        """Add a batch, all or nothing: a failed write removes what it may have written before raising.

        That includes the chunk whose write failed: Chroma commits records to SQLite before it
        updates the vector segment, so a write can fail after it was stored. A batch larger than
        one Chroma write is marked unfinished until every chunk is in, and a process that dies
        before then leaves cells that the next `load` drops.
        """
        split = len(batch) > self._batch
        attempted = 0
        try:
            for start in range(0, len(batch), self._batch):
                attempted = min(start + self._batch, len(batch))
                self._write(batch, start, attempted, split)
            if split:
                self._update(batch.ids, [{"committed": True}] * len(batch))
        except Exception as error:
            try:
                self._collection.delete(ids=batch.ids[:attempted])
            except Exception as rollback_error:
                error.add_note(f"removing the batch's partial write failed as well: {rollback_error}")
            raise
        self._next_seq += len(batch)

    def update(self, records: Sequence[CellRecord]) -> None:
        """Rewrite the mutable engine fields (group, access count, conflicts)."""
        metadatas = [
            {"group": r.group_id, "access": r.access_count, "conflicts": json.dumps([c.to_json() for c in r.conflicts])}
            for r in records
        ]
        self._update([r.id for r in records], metadatas)

    def _update(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Set some metadata keys of these cells (Chroma merges them into what is stored)."""
        for start in range(0, len(ids), self._batch):
            stop = start + self._batch
            guarded(
                f"updating {self.name}", self._collection.update, ids=ids[start:stop], metadatas=metadatas[start:stop]
            )

    def _drop_unfinished_batches(self, result: dict[str, Any]) -> dict[str, Any]:
        """Delete the cells of split batches whose writer died before marking them all committed.

        Such a batch was never acknowledged (`put` returns after the marking), and may be partial.
        """
        metas = result["metadatas"]
        unfinished = {m["batch"] for m in metas if m.get("committed") is False}
        if not unfinished:
            return result
        keep = [i for i, m in enumerate(metas) if m.get("batch") not in unfinished]
        doomed = sorted(set(result["ids"]) - {result["ids"][i] for i in keep})
        log.warning(
            "%s: removing %d cells of %d batches whose write never finished", self.name, len(doomed), len(unfinished)
        )
        self.delete(doomed)
        return {key: [result[key][i] for i in keep] for key in ("ids", "documents", "metadatas")}

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), self._batch):
            chunk = list(ids[start : start + self._batch])
            guarded(f"deleting from {self.name}", self._collection.delete, ids=chunk)

    def _write(self, batch: CellBatch, start: int, stop: int, split: bool) -> None:
        seq = self._next_seq
        split_keys = {"batch": seq, "committed": False} if split else {}
        metadatas = [
            split_keys
            | {
                "seq": seq + i,
                "group": int(batch.groups[i]),
                "kind": batch.kinds[i],
                "importance": float(batch.importance[i]),
                "timestamp": float(batch.timestamps[i]),
                "access": int(batch.access[i]),
                "meta": json.dumps(batch.metadata[i], ensure_ascii=False),
                "conflicts": json.dumps([c.to_json() for c in batch.conflicts[i]]),
                "vec": _vector_text(batch.vectors[i]),
            }
            for i in range(start, stop)
        ]
        guarded(
            f"writing to {self.name}",
            self._collection.add,
            ids=batch.ids[start:stop],
            embeddings=batch.vectors[start:stop],
            documents=batch.texts[start:stop],
            metadatas=metadatas,
        )


def _vector_text(vector: np.ndarray) -> str:
    """A vector's exact metadata copy: little-endian float32, base64."""
    return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")


def _vector(metadata: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(metadata["vec"]), dtype="<f4")
