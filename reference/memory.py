"""`CellularMemory`: the public facade over clustering, indexes, search, scoring and storage."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Hashable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

import numpy as np

from .cells import CellBatch, CellRecord, CellTable, ConflictNote, superseded
from .clustering import GroupState, LeaderClustering
from .config import MemoryConfig
from .consolidation import ConsolidationReport, GroupSizes, Regrouping, final_groups, plan_merges, plan_regrouping
from .embedded import EmbeddedStore, open_embedded
from .encoders import Encoder, make_encoder
from .entities import EntityIndex, extract_entities
from .errors import BackendUnavailableError, InvalidInputError, InvariantError, MagneticError, NotFoundError
from .hit import Hit
from .index import ChromaGroupIndex, GroupIndex, NumpyGroupIndex
from .judges import Conflict, ConflictJudge, JudgeError, OfflineJudge, Statement
from .lexical import LexicalIndex
from .locks import ReadWriteLock
from .scoring import Clock, memory_scores, system_clock
from .search import SearchCounters, ThreeStageSearch
from .stats import MemoryStats, memory_stats
from .store import CellStore, ChromaCellStore, NullStore, StoreIdentity
from .validation import check_ids, check_k, check_same_length, check_text, check_texts, unit_rows, unit_vector

Mode = Literal["similarity", "memory"]
DEFAULT_CONFIG = MemoryConfig()
SEARCH_OPTIONS = frozenset(
    {
        "probing",
        "probe_per_k",
        "probe_margin",
        "probe_per_sqrt_n",
        "group_top_k",
        "min_score",
        "entity_boost",
        "use_entities",
        "lexical",
        "fusion",
        "fusion_depth",
        "rrf_k",
        "lexical_weight",
        "score_threshold",
        "weights",
        "half_life_days",
        "access_saturation",
        "parallel_min_cells",
        "superseded_penalty",
    }
)
MEMORY_MODE_POOL = 4
"""In memory mode the similarity stage fetches this many times k candidates to re-rank."""
log = logging.getLogger(__name__)


class CellularMemory:
    """Cells (text + unit vector) grouped online under centroids and searched group-first.

    `path=None` and no `client`: in memory, nothing persisted. `path="dir"`: embedded Chroma.
    `client=...`: any chromadb client (e.g. `chromadb.HttpClient` for a Chroma server).
    A store remembers which encoder made its vectors and refuses another one (`EncoderMismatchError`);
    `check_encoder=False` opens it anyway.
    """

    def __init__(
        self,
        path: str | None = None,
        encoder: Encoder | None = None,
        config: MemoryConfig = DEFAULT_CONFIG,
        client: Any = None,
        *,
        clock: Clock = system_clock,
        judge: ConflictJudge | None = None,
        check_encoder: bool = True,
    ) -> None:
        if path is not None and client is not None:
            raise InvalidInputError("pass either path (embedded Chroma) or client, not both")
        self.config = config
        self.encoder = encoder if encoder is not None else make_encoder("auto")
        self.clock = clock
        self.judge = judge if judge is not None else OfflineJudge()
        self.dim = self.encoder.dim
        self._lock = ReadWriteLock()
        self._access_lock = threading.Lock()
        self._sleep_mutex = threading.Lock()
        self._sleeper: tuple[threading.Thread, threading.Event] | None = None
        self.sleep_reports: deque[ConsolidationReport] = deque(maxlen=100)
        self.sleep_errors: deque[MagneticError] = deque(maxlen=100)
        self._pool = ThreadPoolExecutor(max_workers=config.search_threads, thread_name_prefix="cellular-search")
        self._clustering = LeaderClustering(
            join_threshold=config.join_threshold,
            chunk=config.ingest_chunk,
            bound=config.group_bound,
            capacity=config.group_capacity,
            max_groups=config.max_groups,
        )
        self._counters = SearchCounters()
        self._search = ThreeStageSearch(config, self._pool, self._counters)
        self._table = CellTable(self.dim)
        self._groups = GroupState.empty(self.dim)
        self._entities = EntityIndex()
        self._lexical = LexicalIndex() if config.lexical else None
        self._index = self._make_index()
        self._dirty: set[int] = set()
        self._touched: set[int] = set()
        self._version = 0
        self._closed = False
        self._embedded: EmbeddedStore | None = None
        self._store: CellStore = NullStore()
        identity = StoreIdentity(self.dim, self.encoder.name if check_encoder else None)
        if path is not None:
            self._embedded, cells = open_embedded(path, config.namespace, identity)
            self._store = self._embedded.store
        elif client is not None:
            self._store = ChromaCellStore(client, config.namespace, identity)
            cells = self._store.load()
        else:
            cells = None
        self._restore(cells)

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
        context: str | Sequence[str] | None = None,
    ) -> list[str]:
        """Store texts as cells (all or nothing) and return their ids.

        `context` (one string, or one per text: e.g. a session date "[8 May 2023]") is prepended to
        each text for the encoder and the lexical index, and kept in `metadata["context"]`; the
        cell's text stays as given.
        """
        texts = check_texts(texts)
        count = len(texts)
        for name, values in (("vectors", vectors), ("timestamps", timestamps), ("ids", ids)):
            check_same_length(name, values, count)
        default_importance = self.config.importance_of(kind)
        importances = _per_item("importance", importance, count, default_importance, _check_importance)
        metadatas = _per_item("metadata", metadata, count, {}, _check_metadata)
        if context is not None:
            contexts = [context] * count if isinstance(context, str) else list(context)
            check_same_length("context", contexts, count)
            metadatas = [{**m, "context": check_text(c, what="context")} for m, c in zip(metadatas, contexts)]
        times = [self.clock()] * count if timestamps is None else [_check_timestamp(t) for t in timestamps]
        self._check_new_ids(ids)
        seen = [_seen_text(text, meta) for text, meta in zip(texts, metadatas)]
        matrix = unit_rows(self.encoder.encode(seen) if vectors is None else vectors, dim=self.dim)
        cell_ids = list(ids) if ids is not None else _new_ids(count)
        found = [extract_entities(text) for text in texts]
        with self._writing():
            self._check_new_ids(cell_ids)
            plan = self._clustering.assign(self._groups, matrix, members=self._members)
            batch = CellBatch(
                ids=cell_ids,
                texts=texts,
                vectors=matrix,
                groups=plan.groups,
                kinds=[kind] * count,
                importance=np.asarray(importances),
                timestamps=np.asarray(times),
                access=np.zeros(count, dtype=np.int64),
                metadata=metadatas,
                conflicts=[[] for _ in range(count)],
            )
            self._store.put(batch)
            self._move(plan.moved_rows, plan.moved_to)
            self._dirty.update(plan.moved_rows.tolist())  # split moves are persisted with the next flush
            self._groups = plan.state
            self._insert(batch, found)
            self._touched.update(np.unique(plan.groups).tolist())
            self._touched.update(np.unique(plan.moved_to).tolist())
            self._version += 1
        return cell_ids

    def delete(self, ids: str | Sequence[str]) -> int:
        """Delete cells by id (all or nothing: an unknown id deletes nothing); returns how many."""
        ids = list(dict.fromkeys(check_ids(ids)))
        with self._writing():
            rows = self._rows_of(ids)
            self._store.delete(ids)
            groups = self._table.group[rows]
            self._groups.remove_members(groups, self._table.vectors[rows])
            self._index.remove(groups, rows)
            if self._lexical is not None:
                self._lexical.remove(rows)
            for row in rows.tolist():
                self._entities.remove(row)
                self._dirty.discard(row)
            self._table.kill(rows.tolist())
            self._version += 1
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
        texts = [q if isinstance(q, str) else None for q in queries]
        with self._reading():
            return [
                self._search_one(row, k, entities, mode, text)
                for row, entities, text in zip(matrix, query_entities, texts)
            ]

    def get(self, cell_id: str) -> CellRecord:
        """The full record of one cell."""
        if not isinstance(cell_id, str):
            raise InvalidInputError(f"get takes one id (a str), got {type(cell_id).__name__}")
        with self._reading():
            return self._table.record(int(self._rows_of(check_ids(cell_id))[0]))

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, cell_id: object) -> bool:
        return cell_id in self._table.row_of

    def ids(self) -> list[str]:
        """Every cell id, in insertion order."""
        with self._reading():
            return [self._table.ids[row] for row in self._table.live_rows().tolist()]

    def stats(self) -> MemoryStats:
        """Counts, group-size distribution and configuration, for reports and dashboards."""
        with self._reading():
            return memory_stats(
                cells=len(self._table),
                groups=self._groups,
                entities=len(self._entities),
                counters=self._counters,
                config=self.config,
                dim=self.dim,
                encoder=self.encoder.name,
                persistent=self._store.persistent,
            )

    def check_invariants(self) -> None:
        """Check that groups, centroids, the group index and the entity index agree with the cells.

        Raises `InvariantError` naming the first disagreement. Costs one pass over every cell.
        """
        with self._reading():
            table, groups = self._table, self._groups
            live = table.live_rows()
            problems = []
            if len(live) != len(table) or set(table.row_of.values()) != set(live.tolist()):
                problems.append("the id map and the live rows differ")
            counts = np.bincount(table.group[live], minlength=groups.n_slots)
            if len(counts) != groups.n_slots or (counts != groups.counts).any():
                problems.append("group member counts differ from the cells' groups")
            sums = np.zeros_like(groups.sums)
            np.add.at(sums, table.group[live], table.vectors[live].astype(np.float64))
            if not np.allclose(sums, groups.sums, atol=1e-3):
                problems.append("a centroid is not the mean of its group's cells")
            for group in groups.active_ids().tolist():
                members = np.sort(self._index.members(group))
                if not np.array_equal(members, live[table.group[live] == group]):
                    problems.append(f"the group index holds other cells than group {group}")
                    break
            if not self._entities.rows() <= set(live.tolist()):
                problems.append("the entity index names deleted cells")
            if self._lexical is not None and self._lexical.rows() != set(live.tolist()):
                problems.append("the lexical index holds other cells than the live ones")
        if problems:
            raise InvariantError("; ".join(problems))

    def set_search_options(self, **changes: Any) -> None:
        """Change query-time settings (e.g. `group_top_k`, `entity_boost`, `use_entities`, `min_score`)."""
        unknown = set(changes) - SEARCH_OPTIONS
        if unknown:
            raise InvalidInputError(f"not a query-time option: {sorted(unknown)}; use {sorted(SEARCH_OPTIONS)}")
        with self._writing():
            self.config = replace(self.config, **changes)
            if self.config.lexical and self._lexical is None:  # switched on later: index what is stored
                self._lexical = LexicalIndex()
                live = self._table.live_rows()
                texts = [_seen_text(self._table.texts[r], self._table.metadata[r]) for r in live.tolist()]
                self._lexical.add(live, texts)
            self._search = ThreeStageSearch(self.config, self._pool, self._counters)

    # ---- sleep ---------------------------------------------------------------------------

    def consolidate(
        self, judge: ConflictJudge | None = None, *, labels: Mapping[str, Hashable] | None = None
    ) -> ConsolidationReport:
        """One sleep pass: regroup (merge, move cells to their nearest centroid, split), then judge
        changed groups for conflicts. `labels` (cell id → true class) adds ARI before and after.

        The plan is made under the read lock (searches go on); only applying it takes the write
        lock. Groups that gained cells or changed since the last pass are judged; conflicts are
        recorded on both cells (nothing is deleted) and judge failures are reported.
        """
        started = time.perf_counter()
        with self._sleep_mutex:
            with self._reading():
                version, sizes_before = self._version, GroupSizes.of(self._groups.counts)
                ari_before = self._agreement(labels)
                plan = self._plan_sleep()
            with self._writing():
                if self._version != version:  # written to meanwhile: plan again, now that nothing can change
                    plan = self._plan_sleep()
                moved = self._regroup(plan)
                touched, self._touched = self._touched, set()
                sizes_after = GroupSizes.of(self._groups.counts)
            with self._reading():
                ari_after = self._agreement(labels)
            conflicts, errors = self._find_conflicts(touched, judge or self.judge)
        return ConsolidationReport(
            plan.merges,
            sizes_before.groups,
            sizes_after.groups,
            moved,
            len(touched),
            conflicts,
            errors,
            time.perf_counter() - started,
            plan.splits,
            sizes_before,
            sizes_after,
            ari_before,
            ari_after,
        )

    def start_sleep(self, interval: float, *, judge: ConflictJudge | None = None) -> None:
        """Consolidate every `interval` seconds on a background thread until `stop_sleep()`."""
        if interval <= 0:
            raise InvalidInputError("the sleep interval must be > 0 seconds")
        self._check_open()
        if self._sleeper is not None:
            raise InvalidInputError("sleep is already running; stop_sleep() first")
        stop = threading.Event()

        def sleep_loop() -> None:
            while not stop.wait(interval):
                try:
                    self.sleep_reports.append(self.consolidate(judge))
                except MagneticError as error:  # kept for the caller (sleep_errors) and logged, never lost
                    self.sleep_errors.append(error)
                    log.error("sleep pass failed: %s", error)

        thread = threading.Thread(target=sleep_loop, name="cellular-sleep", daemon=True)
        self._sleeper = (thread, stop)
        thread.start()

    def stop_sleep(self) -> None:
        """Stop the background sleep (waits for a running pass to finish)."""
        if self._sleeper is not None:
            thread, stop = self._sleeper
            stop.set()
            thread.join()
            self._sleeper = None

    def conflicts(self) -> list[Conflict]:
        """Every recorded conflict once, older cell first."""
        with self._reading():
            table = self._table
            return [
                Conflict(table.ids[row], c.other, c.reason, c.judge)
                for row in table.live_rows().tolist()
                for c in table.conflicts[row]
                if c.other_is_newer
            ]

    def _plan_sleep(self) -> Regrouping:
        """The regrouping plan for the current state (adaptive: merges, k-means step, splits)."""
        config, table = self.config, self._table
        live = table.live_rows()
        groups = table.group[live]
        if not config.adaptive:
            merges = plan_merges(self._groups, config.merge_threshold)
            target = final_groups(merges)
            after = np.asarray([target.get(g, g) for g in groups.tolist()], dtype=np.int64)
            moved = after != groups
            return Regrouping(merges, live[moved], after[moved], 0)
        cells = len(table)
        return plan_regrouping(
            self._groups,
            live,
            table.vectors[live],
            groups,
            threshold=config.merge_threshold,
            capacity=config.group_capacity(cells),
            fragment=int(config.target_group_size(cells) / config.fragment_divisor),
            max_groups=config.max_groups,
        )

    def _regroup(self, plan: Regrouping) -> int:
        """Move cells to their planned groups (store first, then memory); returns how many moved."""
        rows, after = plan.rows, plan.groups
        if not len(rows):
            return 0
        table = self._table
        self._store.update([replace(table.record(r), group_id=g) for r, g in zip(rows.tolist(), after.tolist())])
        before, vectors = table.group[rows].copy(), table.vectors[rows]
        state = self._groups.copy()
        state.new_slots(max(0, int(after.max()) + 1 - state.n_slots))
        state.remove_members(before, vectors)
        state.add_members(after, vectors)
        self._groups = state
        self._move(rows, after)
        self._touched.update(np.unique(after).tolist())
        self._version += 1
        return len(rows)

    def _move(self, rows: np.ndarray, groups: np.ndarray) -> None:
        """Point cells at other groups in the table and the group index (the group state is the caller's)."""
        if not len(rows):
            return
        self._index.remove(self._table.group[rows], rows)
        self._table.group[rows] = groups
        self._index.add(groups, rows, self._table.vectors[rows])

    def _members(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self._index.members(group)
        return rows, self._table.vectors[rows]

    def _agreement(self, labels: Mapping[str, Hashable] | None) -> float | None:
        """ARI of the groups of the labelled live cells against their labels."""
        if labels is None:
            return None
        from sklearn.metrics import adjusted_rand_score

        table = self._table
        known = [(table.group[table.row_of[i]], label) for i, label in labels.items() if i in table.row_of]
        if not known:
            raise InvalidInputError("labels name no stored cell")
        found, true = zip(*known)
        return float(adjusted_rand_score([str(t) for t in true], list(found)))

    def _find_conflicts(self, groups: set[int], judge: ConflictJudge) -> tuple[list[Conflict], list[str]]:
        with self._reading():
            table = self._table
            live = table.live_rows()
            members = {g: live[table.group[live] == g] for g in groups}
            batches = {
                g: [Statement(table.ids[r], table.texts[r], float(table.timestamp[r])) for r in rows.tolist()]
                for g, rows in members.items()
                if len(rows) > 1
            }
        found, errors = [], []
        for group, statements in batches.items():
            try:
                found += judge.judge(statements)
            except (JudgeError, BackendUnavailableError) as error:
                errors.append(f"group {group}: {error}")
        return self._record_conflicts(found), errors

    def _record_conflicts(self, conflicts: list[Conflict]) -> list[Conflict]:
        """Note each new conflict on both cells (the older one as superseded); returns the new ones."""
        with self._writing():
            table, now, new, changed = self._table, self.clock(), [], set()
            for conflict in conflicts:
                if conflict.first not in table.row_of or conflict.second not in table.row_of:
                    continue  # deleted meanwhile
                older, newer = table.row_of[conflict.first], table.row_of[conflict.second]
                if any(c.other == conflict.second for c in table.conflicts[older]):
                    continue
                table.conflicts[older].append(ConflictNote(conflict.second, True, conflict.reason, conflict.judge, now))
                table.conflicts[newer].append(ConflictNote(conflict.first, False, conflict.reason, conflict.judge, now))
                table.superseded[older] = superseded(table.conflicts[older])
                changed |= {older, newer}
                new.append(conflict)
            self._store.update([table.record(row) for row in sorted(changed)])
        return new

    # ---- lifecycle -----------------------------------------------------------------------

    def flush(self) -> None:
        """Persist access counts gathered since the last flush."""
        with self._writing():
            rows = sorted(self._dirty)
            self._store.update([self._table.record(row) for row in rows])
            self._dirty.clear()

    def close(self) -> None:
        """Flush and release threads and indexes; further calls raise."""
        if self._closed:
            return
        self.stop_sleep()
        with self._lock.write():
            try:
                self.flush()
            finally:
                self._closed = True
                self._pool.shutdown(wait=True)
                self._index.close()
                if self._embedded is not None:  # a client passed in stays open: it is the caller's
                    self._embedded.close()

    def __enter__(self) -> CellularMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- internals -----------------------------------------------------------------------

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with self._lock.read():
            self._check_open()
            yield

    @contextmanager
    def _writing(self) -> Iterator[None]:
        with self._lock.write():
            self._check_open()
            yield

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInputError("this CellularMemory is closed; open a new one")

    def _make_index(self) -> GroupIndex:
        if self.config.group_backend == "chroma":
            return ChromaGroupIndex(self.config.namespace, lambda rows: self._table.vectors[rows])
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
        if self._lexical is not None:
            self._lexical.add(rows, [_seen_text(t, m) for t, m in zip(batch.texts, batch.metadata)])

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
        return np.asarray([self._table.row_of[i] for i in ids], dtype=np.int64)

    def _encode_queries(self, queries: Sequence[str | Any], vectors: Any) -> tuple[np.ndarray, list[frozenset[str]]]:
        """Unit query vectors (given, else encoded in one batch) and each text query's entities."""
        texts = [q for q in queries if isinstance(q, str)]
        for position, text in enumerate(texts):
            check_text(text, what=f"query {position}")
        if vectors is not None:
            matrix = np.stack([unit_vector(v, dim=self.dim, what="query vectors") for v in vectors])
        else:
            encoded = iter(unit_rows(self.encoder.encode(texts), dim=self.dim)) if texts else iter(())
            matrix = np.stack([next(encoded) if isinstance(q, str) else unit_vector(q, dim=self.dim) for q in queries])
        entities = [extract_entities(q) if isinstance(q, str) else frozenset() for q in queries]
        return matrix, entities

    def _search_one(
        self, query: np.ndarray, k: int, query_entities: frozenset[str], mode: Mode, text: str | None
    ) -> list[Hit]:
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
            lexical=self._lexical if self.config.lexical else None,
            query_text=text,
        )
        rows, scores = found.rows, found.scores
        if mode == "memory":
            table = self._table
            scores = (
                memory_scores(
                    scores,
                    table.importance[rows],
                    table.timestamp[rows],
                    table.access[rows],
                    now=self.clock(),
                    config=self.config,
                )
                - self.config.superseded_penalty * table.superseded[rows]
            )
            keep = scores >= self.config.score_threshold
            order = np.argsort(-scores[keep], kind="stable")[:k]
            rows, scores = rows[keep][order], scores[keep][order]
        table = self._table
        row_list = rows.tolist()
        with self._access_lock:  # searches run in parallel under the read lock
            table.access[rows] += 1
            self._dirty.update(row_list)
        return [
            Hit(table.ids[row], table.texts[row], score, group, dict(table.metadata[row]))
            for row, score, group in zip(row_list, scores.tolist(), table.group[rows].tolist())
        ]


def _seen_text(text: str, metadata: Mapping[str, Any]) -> str:
    """What the encoder and the lexical index see: the cell's context (if any), then its text."""
    context = metadata.get("context")
    return f"{context} {text}" if isinstance(context, str) else text


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
