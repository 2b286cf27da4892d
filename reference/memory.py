"""`CellularMemory`: the public facade over clustering, indexes, search, scoring and storage."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

import numpy as np

from .cells import CellBatch, CellRecord, CellTable
from .chroma import persistent_client
from .clustering import GroupState, LeaderClustering
from .config import MemoryConfig
from .encoders import Encoder, make_encoder
from .entities import EntityIndex, extract_entities
from .errors import InvalidInputError, NotFoundError
from .hit import Hit
from .index import ChromaGroupIndex, GroupIndex, NumpyGroupIndex
from .scoring import Clock, memory_scores, system_clock
from .search import ThreeStageSearch
from .stats import MemoryStats, memory_stats
from .store import CellStore, ChromaCellStore, NullStore
from .validation import check_ids, check_k, check_same_length, check_text, check_texts, unit_rows

Mode = Literal["similarity", "memory"]
DEFAULT_CONFIG = MemoryConfig()
SEARCH_OPTIONS = frozenset(
    {
        "group_top_k",
        "min_score",
        "entity_boost",
        "use_entities",
        "score_threshold",
        "weights",
        "half_life_days",
        "access_saturation",
        "parallel_min_cells",
    }
)
MEMORY_MODE_POOL = 4
"""In memory mode the similarity stage fetches this many times k candidates to re-rank."""


class CellularMemory:
    """Cells (text + unit vector) grouped online under centroids and searched group-first.

    `path=None` and no `client`: in memory, nothing persisted. `path="dir"`: embedded Chroma.
    `client=...`: any chromadb client (e.g. `chromadb.HttpClient` for a Chroma server).
    """

    def __init__(
        self,
        path: str | None = None,
        encoder: Encoder | None = None,
        config: MemoryConfig = DEFAULT_CONFIG,
        client: Any = None,
        *,
        clock: Clock = system_clock,
    ) -> None:
        if path is not None and client is not None:
            raise InvalidInputError("pass either path (embedded Chroma) or client, not both")
        self.config = config
        self.encoder = encoder if encoder is not None else make_encoder("auto")
        self.clock = clock
        self.dim = self.encoder.dim
        self._lock = threading.RLock()
        self._pool = ThreadPoolExecutor(max_workers=config.search_threads, thread_name_prefix="cellular-search")
        self._clustering = LeaderClustering(
            join_threshold=config.join_threshold, max_groups=config.max_groups, chunk=config.ingest_chunk
        )
        self._search = ThreeStageSearch(config, self._pool)
        self._table = CellTable(self.dim)
        self._groups = GroupState.empty(self.dim)
        self._entities = EntityIndex()
        self._index = self._make_index()
        self._dirty: set[int] = set()
        self._closed = False
        if client is None and path is not None:
            client = persistent_client(path)
        self._store: CellStore = NullStore() if client is None else ChromaCellStore(client, config.namespace, self.dim)
        self._restore(self._store.load())

    # ---- writing -------------------------------------------------------------------------

    def add(
        self,
        texts: str | Sequence[str],
        *,
        vectors: Any = None,
        kind: str = "episodic",
        importance: float | Sequence[float] | None = None,
        metadata: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        timestamps: Sequence[float | datetime] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Store texts as cells (all or nothing) and return their ids."""
        texts = check_texts(texts)
        count = len(texts)
        for name, values in (("vectors", vectors), ("timestamps", timestamps), ("ids", ids)):
            check_same_length(name, values, count)
        default_importance = self.config.importance_of(kind)
        importances = _per_item("importance", importance, count, default_importance, _check_importance)
        metadatas = _per_item("metadata", metadata, count, {}, _check_metadata)
        times = [self.clock()] * count if timestamps is None else [_check_timestamp(t) for t in timestamps]
        self._check_new_ids(ids)
        matrix = unit_rows(self.encoder.encode(texts) if vectors is None else vectors, dim=self.dim)
        cell_ids = list(ids) if ids is not None else _new_ids(count)
        found = [extract_entities(text) for text in texts]
        with self._guard():
            self._check_new_ids(cell_ids)
            groups, state = self._clustering.assign(self._groups, matrix)
            batch = CellBatch(
                ids=cell_ids,
                texts=texts,
                vectors=matrix,
                groups=groups,
                kinds=[kind] * count,
                importance=np.asarray(importances),
                timestamps=np.asarray(times),
                access=np.zeros(count, dtype=np.int64),
                metadata=metadatas,
            )
            self._store.put(batch)
            self._groups = state
            self._insert(batch, found)
        return cell_ids

    def delete(self, ids: str | Sequence[str]) -> int:
        """Delete cells by id (all or nothing: an unknown id deletes nothing); returns how many."""
        ids = check_ids(ids)
        with self._guard():
            rows = self._rows_of(ids)
            self._store.delete(ids)
            groups = self._table.group[rows]
            self._groups.remove_members(groups, self._table.vectors[rows])
            self._index.remove(groups, rows)
            for row in rows.tolist():
                self._entities.remove(row)
                self._dirty.discard(row)
            self._table.kill(rows.tolist())
        return len(rows)

    # ---- reading -------------------------------------------------------------------------

    def search(self, query: str | Any, k: int = 10, *, mode: Mode = "similarity", vector: Any = None) -> list[Hit]:
        """The best `k` cells for a text or a vector; scores are higher-is-better, sorted, ids unique.

        With a text query, `vector` (its embedding, if you already have it) skips the encoder; the
        text still feeds the entity index.
        """
        vectors = None if vector is None else [vector]
        return self.search_batch([query], k, mode=mode, vectors=vectors)[0]

    def search_batch(
        self, queries: Sequence[str | Any], k: int = 10, *, mode: Mode = "similarity", vectors: Any = None
    ) -> list[list[Hit]]:
        """`search` for many queries; texts without given `vectors` are encoded in one batch."""
        k = check_k(k)
        if mode not in ("similarity", "memory"):
            raise InvalidInputError(f"mode must be 'similarity' or 'memory', got {mode!r}")
        if isinstance(queries, str) or not isinstance(queries, Sequence) or len(queries) == 0:
            raise InvalidInputError("queries must be a non-empty list of strings or vectors")
        check_same_length("vectors", vectors, len(queries))
        matrix, query_entities = self._encode_queries(queries, vectors)
        with self._guard():
            return [self._search_one(row, k, entities, mode) for row, entities in zip(matrix, query_entities)]

    def get(self, cell_id: str) -> CellRecord:
        """The full record of one cell."""
        with self._guard():
            return self._table.record(int(self._rows_of(check_ids(cell_id))[0]))

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, cell_id: object) -> bool:
        return cell_id in self._table.row_of

    def ids(self) -> list[str]:
        """Every cell id, in insertion order."""
        with self._guard():
            return [self._table.ids[row] for row in self._table.live_rows().tolist()]

    def stats(self) -> MemoryStats:
        """Counts, group-size distribution and configuration, for reports and dashboards."""
        with self._guard():
            return memory_stats(self)

    def set_search_options(self, **changes: Any) -> None:
        """Change query-time settings (e.g. `group_top_k`, `entity_boost`, `use_entities`, `min_score`)."""
        unknown = set(changes) - SEARCH_OPTIONS
        if unknown:
            raise InvalidInputError(f"not a query-time option: {sorted(unknown)}; use {sorted(SEARCH_OPTIONS)}")
        with self._guard():
            self.config = replace(self.config, **changes)
            self._search = ThreeStageSearch(self.config, self._pool)

    # ---- lifecycle -----------------------------------------------------------------------

    def flush(self) -> None:
        """Persist access counts gathered since the last flush."""
        with self._guard():
            rows = sorted(self._dirty)
            self._store.update([self._table.record(row) for row in rows])
            self._dirty.clear()

    def close(self) -> None:
        """Flush and release threads and indexes; further calls raise."""
        with self._lock:
            if self._closed:
                return
            try:
                self.flush()
            finally:
                self._closed = True
                self._pool.shutdown(wait=True)
                self._index.close()

    def __enter__(self) -> CellularMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- internals -----------------------------------------------------------------------

    def _guard(self) -> threading.RLock:
        if self._closed:
            raise InvalidInputError("this CellularMemory is closed; open a new one")
        return self._lock

    def _make_index(self) -> GroupIndex:
        if self.config.group_backend == "chroma":
            return ChromaGroupIndex(self.config.namespace)
        return NumpyGroupIndex(self.dim)

    def _restore(self, batch: CellBatch | None) -> None:
        """Rebuild every derived structure from the master store's cells."""
        if batch is None:
            return
        self._groups.new_slots(int(batch.groups.max()) + 1)
        self._groups.add_members(batch.groups, batch.vectors)
        self._insert(batch, [extract_entities(text) for text in batch.texts])

    def _insert(self, batch: CellBatch, found: list[frozenset[str]]) -> None:
        rows = self._table.append(batch)
        self._index.add(batch.groups, rows, batch.vectors)
        for row, entities in zip(rows.tolist(), found):
            self._entities.add(row, entities)

    def _check_new_ids(self, ids: Sequence[str] | None) -> None:
        if ids is None:
            return
        check_ids(ids)
        if len(set(ids)) != len(ids):
            raise InvalidInputError("ids contain duplicates; every cell needs its own id")
        taken = [i for i in ids if i in self._table.row_of]
        if taken:
            raise InvalidInputError(f"ids already stored: {taken[:5]}; delete them first or pick new ids")

    def _rows_of(self, ids: Sequence[str]) -> np.ndarray:
        missing = [i for i in ids if i not in self._table.row_of]
        if missing:
            raise NotFoundError(f"unknown ids: {missing[:5]}{' …' if len(missing) > 5 else ''}")
        return np.asarray([self._table.row_of[i] for i in dict.fromkeys(ids)], dtype=np.int64)

    def _encode_queries(self, queries: Sequence[str | Any], vectors: Any) -> tuple[np.ndarray, list[frozenset[str]]]:
        """Unit query vectors (given, else encoded in one batch) and each text query's entities."""
        texts = [q for q in queries if isinstance(q, str)]
        for position, text in enumerate(texts):
            check_text(text, what=f"query {position}")
        if vectors is not None:
            matrix = unit_rows(vectors, dim=self.dim, what="query vectors")
        else:
            encoded = iter(unit_rows(self.encoder.encode(texts), dim=self.dim)) if texts else iter(())
            matrix = np.stack(
                [
                    next(encoded) if isinstance(q, str) else unit_rows(q, dim=self.dim, what="query vector")[0]
                    for q in queries
                ]
            )
        entities = [extract_entities(q) if isinstance(q, str) else frozenset() for q in queries]
        return matrix, entities

    def _search_one(self, query: np.ndarray, k: int, query_entities: frozenset[str], mode: Mode) -> list[Hit]:
        if len(self._table) == 0:
            return []
        pool = k * MEMORY_MODE_POOL if mode == "memory" else k
        found = self._search.run(
            query,
            pool,
            query_entities,
            table=self._table,
            groups=self._groups,
            index=self._index,
            entities=self._entities,
        )
        rows, scores = found.rows, found.scores
        if mode == "memory":
            table = self._table
            scores = memory_scores(
                scores,
                table.importance[rows],
                table.timestamp[rows],
                table.access[rows],
                now=self.clock(),
                config=self.config,
            )
            keep = scores >= self.config.score_threshold
            order = np.argsort(-scores[keep], kind="stable")[:k]
            rows, scores = rows[keep][order], scores[keep][order]
        table = self._table
        table.access[rows] += 1
        row_list = rows.tolist()
        self._dirty.update(row_list)
        return [
            Hit(table.ids[row], table.texts[row], score, group, dict(table.metadata[row]))
            for row, score, group in zip(row_list, scores.tolist(), table.group[rows].tolist())
        ]


def _new_ids(count: int) -> list[str]:
    """Random 128-bit hex ids (one system call for the whole batch)."""
    pool = os.urandom(16 * count).hex()
    return [pool[32 * i : 32 * i + 32] for i in range(count)]


def _per_item(name: str, value: Any, count: int, default: Any, check: Any) -> list[Any]:
    """Broadcast one value (or None → default) to every item, or check a per-item list."""
    if value is None:
        return [default] * count
    if isinstance(value, (Mapping, int, float)):
        return [check(value)] * count
    check_same_length(name, value, count)
    return [check(v) for v in value]


def _check_importance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInputError(f"importance must be a number in [0, 1], got {value!r}")
    return float(value)


def _check_metadata(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise InvalidInputError("metadata must be a mapping with string keys")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {error}") from None
    return dict(value)


def _check_timestamp(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise InvalidInputError(f"timestamps must be datetimes or finite epoch seconds, got {value!r}")
    return float(value)
