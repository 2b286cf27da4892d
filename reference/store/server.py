"""Cells on a Chroma server: the engine's fields (group, kind, importance, timestamp, access count, metadata,
conflicts, episode, scope, history) and each cell's exact vector (base64) in its Chroma metadata, beside its
document. An embedded store keeps them in its sidecar instead (`sidecar.py`)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..cells.episodes import INFERRED
from ..cells.table import CellBatch, CellRecord, ConflictNote
from ..common.errors import StoreDamagedError
from .collection import ChromaCells
from .ledger import Ledger
from .protocol import StoreIdentity

log = logging.getLogger(__name__)


class ServerCellStore:
    """Cells in a Chroma server's collection, the engine's fields in each cell's metadata: its order
    (`seq`), its scope (`scope`: one scope's cells are read by a metadata filter), a JSON object of the fields
    (`cell`: floats exact) and the exact float32 vector (`vec`, base64). The scopes and the bounds of `seq` and
    group ids are kept in the namespace's ledger (`ledger.py`), so a memory that loads scopes as they are used
    reads no cell on open. A batch larger than one Chroma write is marked unfinished until every chunk is in, and
    a writer that dies before then leaves cells that the next open removes."""

    persistent = True

    def __init__(self, client: Any, namespace: str, identity: StoreIdentity) -> None:
        self.cells = ChromaCells(client, namespace, identity)
        self.ledger = Ledger(client, namespace)
        self.dim = identity.dim
        self._next_seq = 0

    def open(self, *, load: bool) -> CellBatch | None:
        """Remove what a writer that died left (`drop_unfinished_batches`), bring a store of the earlier layout up to
        this one, and read every cell (with `load`; without, none: they are read scope by scope)."""
        drop_unfinished_batches(self.cells)
        if not self.ledger.current:
            self._migrate()
        self._next_seq = self.ledger.seq_bound
        return self.load() if load else None

    def _migrate(self) -> None:
        """Give every cell of an earlier layout its `scope` key, record the scopes and set the bounds; the layout
        is marked current last, so a migration that is cut short is done again (each step writes the same)."""
        found = self.cells.read(["metadatas"])
        fields = [_decoded(cell, metadata, self.dim)[0] for cell, metadata in zip(found["ids"], found["metadatas"])]
        self.ledger.hold({f["scope"] for f in fields}, 0, 0)
        keyless = [i for i, metadata in enumerate(found["metadatas"]) if "scope" not in metadata]
        self.cells.update_metadata([found["ids"][i] for i in keyless], [{"scope": fields[i]["scope"]} for i in keyless])
        seqs = max((int(m["seq"]) + 1 for m in found["metadatas"]), default=0)
        self.ledger.settle(seqs, max((int(f["group"]) + 1 for f in fields), default=0))
        if keyless:
            log.warning("%s: gave %d cells of an earlier layout their scope key", self.cells.name, len(keyless))

    def load(self) -> CellBatch | None:
        """Every cell, from documents and metadata only (a cell that cannot be read is named), in order."""
        return decoded_cells(self.cells.read(["documents", "metadatas"]), self.dim)

    def load_scope(self, scope: str) -> CellBatch | None:
        return decoded_cells(self.cells.read(["documents", "metadatas"], where={"scope": scope}), self.dim)

    def count(self, scope: str | None = None) -> int:
        if scope is None:
            return self.cells.count()
        return len(self.cells.read([], where={"scope": scope})["ids"])

    def scopes(self) -> list[str]:
        return self.ledger.scopes()

    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]:
        found = self.cells.records(ids, ["metadatas"])
        return {cell: _scope(cell, metadata) for cell, metadata in zip(found["ids"], found["metadatas"])}

    def group_bound(self) -> int:
        return self.ledger.group_bound

    def put(self, batch: CellBatch) -> None:
        self._hold(batch)
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
        self._hold(batch)
        try:
            self.cells.upsert(batch.ids, batch.vectors, batch.texts, self._metadatas(batch))
        except Exception as error:
            try:
                self.cells.upsert(
                    [r.id for r in previous],
                    np.stack([r.vector for r in previous]),
                    [r.text for r in previous],
                    [{"cell": record_fields(r), "scope": r.scope, "vec": _encoded(r.vector)} for r in previous],
                )
            except Exception as rollback_error:
                error.add_note(f"putting the previous cells back failed as well: {rollback_error}")
            raise
        self._next_seq += len(batch)

    def _hold(self, batch: CellBatch) -> None:
        """The ledger made ready for a batch: its scopes recorded, the bounds above its `seq`s and groups."""
        self.ledger.hold(batch.scopes, self._next_seq + len(batch), int(batch.groups.max(initial=-1)) + 1)

    def _metadatas(self, batch: CellBatch) -> list[dict[str, Any]]:
        """Each cell's metadata as this layout stores it, numbered from the next `seq`."""
        return [
            {
                "seq": self._next_seq + i,
                "scope": batch.scopes[i],
                "cell": fields_of(batch, i),
                "vec": _encoded(batch.vectors[i]),
            }
            for i in range(len(batch))
        ]

    def update(self, records: Sequence[CellRecord]) -> None:
        self.ledger.hold((), 0, max((r.group_id + 1 for r in records), default=0))
        metadatas = [{"cell": record_fields(r)} for r in records]
        self.cells.update_metadata([r.id for r in records], metadatas)

    def delete(self, ids: Sequence[str], scopes: Iterable[str]) -> None:
        """Delete these cells (of `scopes`), and forget the scopes they leave empty."""
        self.cells.delete(ids)
        self.ledger.forget([scope for scope in set(scopes) if not self.cells.holds({"scope": scope})])


def _encoded(vector: np.ndarray) -> str:
    """A vector as the `vec` metadata holds it: its exact float32 bytes in base64."""
    return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")


def drop_unfinished_batches(cells: ChromaCells) -> None:
    """Delete the cells of split batches whose writer died before marking them all committed (never
    acknowledged: `put` returns after the marking), found by their metadata."""
    unfinished = {m["batch"] for m in cells.read(["metadatas"], where={"committed": False})["metadatas"]}
    if not unfinished:
        return
    doomed = cells.read([], where={"batch": {"$in": sorted(unfinished)}})["ids"]
    log.warning(
        "%s: removing %d cells of %d batches whose write never finished", cells.name, len(doomed), len(unfinished)
    )
    cells.delete(doomed)


def decoded_cells(result: dict[str, Any], dim: int) -> CellBatch | None:
    """Cells read from the collection (documents and metadata) as one batch in order; None for none."""
    if not result["ids"]:
        return None
    order = np.argsort([m["seq"] for m in result["metadatas"]], kind="stable").tolist()
    ids = [result["ids"][i] for i in order]
    fields = [_decoded(result["ids"][i], result["metadatas"][i], dim) for i in order]
    return batch_of(ids, [result["documents"][i] for i in order], fields)


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


def _scope(cell_id: str, metadata: dict[str, Any]) -> str:
    scope = metadata.get("scope")
    if not isinstance(scope, str):
        raise StoreDamagedError(f"cell {cell_id!r}: its stored scope cannot be read ({scope!r})")
    return scope
