"""Cells on a Chroma server: the engine's fields (group, kind, importance, timestamp, access count, metadata,
conflicts, episode, scope, history) and each cell's exact vector (base64) in its Chroma metadata, beside its
document. An embedded store keeps them in its sidecar instead (`sidecar.py`)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..cells import CellBatch, CellRecord, ConflictNote
from ..episodes import INFERRED
from ..errors import InvalidInputError, StoreDamagedError
from .collection import ChromaCells
from .protocol import StoreIdentity

log = logging.getLogger(__name__)


class ServerCellStore:
    """Cells in a Chroma server's collection, the engine's fields in each cell's metadata: its order
    (`seq`), a JSON object of the fields (`cell`: floats exact) and the exact float32 vector (`vec`,
    base64). A batch larger than one Chroma write is marked unfinished until every chunk is in, and a
    writer that dies before then leaves cells that the next `load` drops."""

    persistent = True

    def __init__(self, client: Any, namespace: str, identity: StoreIdentity) -> None:
        self.cells = ChromaCells(client, namespace, identity)
        self.dim = identity.dim
        self._next_seq = 0

    def load_scope(self, scope: str) -> CellBatch | None:
        raise _NOT_BY_SCOPE

    def count(self, scope: str | None = None) -> int:
        raise _NOT_BY_SCOPE

    def scopes(self) -> list[str]:
        raise _NOT_BY_SCOPE

    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]:
        raise _NOT_BY_SCOPE

    def group_bound(self) -> int:
        raise _NOT_BY_SCOPE

    def load(self) -> CellBatch | None:
        """Every cell, from documents and metadata only (a cell that cannot be read is named), in order."""
        result = self._drop_unfinished_batches(self.cells.read(["documents", "metadatas"]))
        if not result["ids"]:
            return None
        order = np.argsort([m["seq"] for m in result["metadatas"]], kind="stable").tolist()
        ids = [result["ids"][i] for i in order]
        fields = [_decoded(result["ids"][i], result["metadatas"][i], self.dim) for i in order]
        self._next_seq = int(result["metadatas"][order[-1]]["seq"]) + 1
        return batch_of(ids, [result["documents"][i] for i in order], fields)

    def put(self, batch: CellBatch) -> None:
        split = len(batch) > self.cells.batch
        split_keys = {"batch": self._next_seq, "committed": False} if split else {}
        self.cells.add(batch, [split_keys | fields for fields in self._metadatas(batch)])
        if split:
            try:
                self.cells.update_metadata(batch.ids, [{"committed": True}] * len(batch))
            except Exception:
                self.cells.delete(batch.ids)
                raise
        self._next_seq += len(batch)

    def replace(self, batch: CellBatch, previous: Sequence[CellRecord]) -> None:
        """The cells of the batch's ids written again (as written last); a failed write puts `previous` back."""
        try:
            self.cells.upsert(batch.ids, batch.vectors, batch.texts, self._metadatas(batch))
        except Exception as error:
            try:
                self.cells.upsert(
                    [r.id for r in previous],
                    np.stack([r.vector for r in previous]),
                    [r.text for r in previous],
                    [{"cell": record_fields(r)} for r in previous],
                )
            except Exception as rollback_error:
                error.add_note(f"putting the previous cells back failed as well: {rollback_error}")
            raise
        self._next_seq += len(batch)

    def _metadatas(self, batch: CellBatch) -> list[dict[str, Any]]:
        """Each cell's metadata as this layout stores it, numbered from the next `seq`."""
        return [
            {
                "seq": self._next_seq + i,
                "cell": fields_of(batch, i),
                "vec": base64.b64encode(batch.vectors[i].astype("<f4").tobytes()).decode("ascii"),
            }
            for i in range(len(batch))
        ]

    def update(self, records: Sequence[CellRecord]) -> None:
        metadatas = [{"cell": record_fields(r)} for r in records]
        self.cells.update_metadata([r.id for r in records], metadatas)

    def delete(self, ids: Sequence[str]) -> None:
        self.cells.delete(ids)

    def _drop_unfinished_batches(self, result: dict[str, Any]) -> dict[str, Any]:
        """Delete the cells of split batches whose writer died before marking them all committed (never
        acknowledged: `put` returns after the marking), and leave them out."""
        metas = result["metadatas"]
        unfinished = {m["batch"] for m in metas if m.get("committed") is False}
        if not unfinished:
            return result
        keep = [i for i, m in enumerate(metas) if m.get("batch") not in unfinished]
        doomed = sorted(set(result["ids"]) - {result["ids"][i] for i in keep})
        log.warning(
            "%s: removing %d cells of %d batches whose write never finished",
            self.cells.name,
            len(doomed),
            len(unfinished),
        )
        self.delete(doomed)
        return {key: [result[key][i] for i in keep] for key in ("ids", "documents", "metadatas")}


_NOT_BY_SCOPE = InvalidInputError(
    "a memory on a Chroma server loads every cell on open: resident_cells needs an embedded store (path=...)"
)


def fields_of(batch: CellBatch, i: int) -> str:
    """The engine's fields of cell i of a batch, as stored: JSON (floats exactly: JSON writes their repr)."""
    return _fields_json(
        int(batch.groups[i]),
        batch.kinds[i],
        float(batch.importance[i]),
        float(batch.timestamps[i]),
        int(batch.access[i]),
        batch.metadata[i],
        batch.conflicts[i],
        batch.episodes[i],
        batch.scopes[i],
        batch.histories[i],
    )


def record_fields(record: CellRecord) -> str:
    """The stored fields of one record (as `fields_of`)."""
    return _fields_json(
        record.group_id,
        record.kind,
        record.importance,
        record.timestamp,
        record.access_count,
        record.metadata,
        record.conflicts,
        record.episode,
        record.scope,
        record.history,
    )


def _fields_json(
    group: int,
    kind: str,
    importance: float,
    timestamp: float,
    access: int,
    metadata: dict[str, Any],
    conflicts: Sequence[ConflictNote],
    episode: str,
    scope: str,
    history: Sequence[dict[str, Any]],
) -> str:
    fields = {"group": group, "kind": kind, "importance": importance, "timestamp": timestamp, "access": access}
    fields |= {"meta": metadata, "conflicts": [c.to_json() for c in conflicts], "episode": episode}
    fields |= {"scope": scope, "history": list(history)}
    return json.dumps(fields, ensure_ascii=False)


FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "group": int,
    "kind": str,
    "importance": (int, float),
    "timestamp": (int, float),
    "access": int,
    "meta": dict,
    "conflicts": list,
}


def decoded_fields(cell_id: str, text: str) -> dict[str, Any]:
    """A cell's stored fields; damage is a `StoreDamagedError` naming the cell."""
    try:
        fields = json.loads(text)
        wrong = [name for name, kind in FIELD_TYPES.items() if not isinstance(fields.get(name), kind)]
        optional = {"episode": ("", str), "scope": ("", str), "history": ([], list)}  # added by later versions
        wrong += [key for key, (empty, kind) in optional.items() if not isinstance(fields.setdefault(key, empty), kind)]
        if wrong:
            raise ValueError(f"missing or mistyped: {', '.join(wrong)}")
        fields["conflicts"] = [ConflictNote.from_json(c) for c in fields["conflicts"]]
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise StoreDamagedError(f"cell {cell_id!r}: its stored fields cannot be read ({error})") from error
    return dict(fields)


def batch_of(ids: list[str], texts: list[str], cells: list[tuple[dict[str, Any], np.ndarray]]) -> CellBatch:
    """Loaded cells (their fields and vectors, in order) as one batch."""
    fields = [f for f, _ in cells]
    return CellBatch(
        ids=ids,
        texts=texts,
        vectors=np.stack([v for _, v in cells]),
        groups=np.asarray([f["group"] for f in fields], dtype=np.int64),
        kinds=[str(f["kind"]) for f in fields],
        importance=np.asarray([f["importance"] for f in fields], dtype=np.float64),
        timestamps=np.asarray([f["timestamp"] for f in fields], dtype=np.float64),
        access=np.asarray([f["access"] for f in fields], dtype=np.int64),
        metadata=[f["meta"] for f in fields],
        conflicts=[f["conflicts"] for f in fields],
        episodes=[f.get("episode") or INFERRED + cell_id for f, cell_id in zip(fields, ids)],
        scopes=[f["scope"] for f in fields],
        histories=[f["history"] for f in fields],
    )


def decoded_vector(cell_id: str, data: bytes, dim: int) -> np.ndarray:
    """A stored float32 vector; damage is a `StoreDamagedError` naming the cell."""
    vector = np.frombuffer(data, dtype="<f4")
    if vector.shape != (dim,) or not np.isfinite(vector).all():
        raise StoreDamagedError(f"cell {cell_id!r}: its stored vector is damaged ({len(data)} bytes, {dim}-d expected)")
    return vector


def _decoded(cell_id: str, metadata: dict[str, Any], dim: int) -> tuple[dict[str, Any], np.ndarray]:
    """A server cell's fields and vector from its metadata (also as stores before the sidecar wrote them: a
    metadata key per field)."""
    try:
        vector = base64.b64decode(metadata["vec"], validate=True)
        if "cell" in metadata:
            return decoded_fields(cell_id, metadata["cell"]), decoded_vector(cell_id, vector, dim)
        fields = {name: metadata[name] for name in ("group", "kind", "importance", "timestamp", "access")}
        fields |= {"meta": json.loads(metadata["meta"]), "conflicts": json.loads(metadata.get("conflicts", "[]"))}
        return decoded_fields(cell_id, json.dumps(fields)), decoded_vector(cell_id, vector, dim)
    except (KeyError, ValueError, TypeError) as error:
        raise StoreDamagedError(f"cell {cell_id!r}: its stored fields cannot be read ({error})") from error
