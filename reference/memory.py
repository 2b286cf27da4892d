"""`CellularMemory`: the public API of the engine and the orchestration of its parts.

What the engine holds is `state/engine.py`'s `EngineState`; writing is `write/ingest.py` (a cell updated in place:
`write/updates.py`), search and ranking are `search/pipeline.py` (a call's queries and hits: `search/queries.py`), a
sleep pass is `sleep/passes.py`, input checks are `common/validation.py`. This module validates a call, takes the
lock, and hands the state to the part that does the work.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Unpack

import numpy as np

from .cells.entities import EntityIndex
from .cells.table import CellRecord, CellTable
from .common import collector
from .common.config import SEARCH_OPTIONS, MemoryConfig
from .common.errors import InvalidInputError, NotFoundError
from .common.validation import (
    check_ids,
    check_interval,
    check_metadata,
    check_result_count,
    check_scope,
    check_text,
    check_texts,
    unit_vector,
)
from .encoders import Encoder, make_encoder
from .groups.clustering import GroupState, LeaderClustering
from .groups.concepts import Concept, concepts_of
from .indexes.lexical import LexicalIndex
from .indexes.vectors import group_index
from .judges import Conflict, ConflictJudge, OfflineJudge
from .score.scoring import Clock, system_clock
from .search.hit import Hit
from .search.pipeline import Mode, SearchPipeline
from .search.queries import SearchRestriction, check_batch, checked_restriction, encoded_queries, hit_list, hits_of
from .sleep import passes as sleep
from .sleep.regrouping import ConsolidationReport
from .state import calibration, kept_estimates
from .state.engine import EngineState
from .state.residency import Residency
from .stats import MemoryStats, memory_stats
from .store import StoreIdentity, open_store
from .write import ingest, updates

DEFAULT_CONFIG = MemoryConfig()


class CellularMemory:
    """Cells (text + unit vector) grouped online under centroids and searched group-first.

    Args:
        path: a folder for an embedded Chroma store (persisted); with no `client` or `dsn` either, the memory
            lives in this process only.
        encoder: what embeds texts (`reference.encoders`); None picks one (`make_encoder("auto")`).
        config: the engine's settings (`MemoryConfig`).
        client: any chromadb client, e.g. `chromadb.HttpClient` for a Chroma server.
        clock: the time source for timestamps, recency and episodes (tests pass a fake one).
        judge: what sleep asks whether two cells contradict each other (default: `OfflineJudge`).
        check_encoder: a store remembers which encoder made its vectors; False opens it with another one.
        dsn: a PostgreSQL connection string (extra `postgres`; `docs/tenants.md`).

    Raises:
        InvalidInputError: more than one of `path`, `client` and `dsn`, or `resident_cells` without a store.
        EncoderMismatchError: the store's vectors were made by another encoder (and `check_encoder` is True).
        NamespaceOwnedError: another live process owns the store's namespace.
        BackendUnavailableError: the Chroma server or database cannot be reached.

    Example:
        ```python
        with CellularMemory(path="memory") as memory:
            memory.add(["Alice lives in Lisbon"], scope="user:alice", metadata={"source": "chat"})
            hits = memory.search("where does Alice live?", k=3, scope="user:alice", where={"source": "chat"})
        ```
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
        dsn: str | None = None,
    ) -> None:
        if sum(where is not None for where in (path, client, dsn)) > 1:
            raise InvalidInputError("pass one of path (embedded Chroma), client or dsn (PostgreSQL), not several")
        bounded = config.resident_cells is not None
        if bounded and path is None and client is None and dsn is None:
            raise InvalidInputError("resident_cells loads scopes from a store: pass path=..., client=... or dsn=...")
        self.config = config
        self.encoder = encoder if encoder is not None else make_encoder("auto")
        self.clock = clock
        self.judge = judge if judge is not None else OfflineJudge()
        self.dim = self.encoder.dim
        self._sleep_mutex = threading.Lock()
        self._sleeper = sleep.Sleeper()
        self.sleep_reports, self.sleep_errors = self._sleeper.reports, self._sleeper.errors
        self._clustering = LeaderClustering.of(config)
        self._search = SearchPipeline(config)
        identity = StoreIdentity(self.dim, self.encoder.name, check_encoder)
        with collector.paused():  # every stored cell read and indexed: objects that are all kept
            self._store, cells = open_store(
                path, client, config.namespace, identity, lease_seconds=config.lease_seconds, load=not bounded, dsn=dsn
            )
            store = self._store.store
            table = CellTable(self.dim, keep_vectors=config.group_backend == "chroma", speaker_key=config.speaker_key)
            self._state = EngineState(
                table=table,
                groups=GroupState.empty(self.dim),
                index=group_index(config.group_backend, config.namespace, self.dim, table),
                entities=EntityIndex(),
                lexical=LexicalIndex() if config.lexical else None,
                store=store,
                probe=calibration.initial(config),
                fence=None if self._store.lease is None else self._store.lease.check,
                reuse_rows=bounded,
            )
            self._state.restore(cells, groups=store.group_bound() if bounded else 0)
        if not bounded:
            kept_estimates.restore(self._state, config, self._store.kept_estimates())
        self._resident = Residency(
            self._state, store, config.resident_cells, lambda: calibration.commit_due(self._state, self.config)
        )
        """Every public method reaches the state through it (`reading` / `writing`), the close alone excepted."""
        calibration.commit_due(self._state, config)

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
        episode: str | Sequence[str] | None = None,
        scope: str | Sequence[str] = "",
        upsert: bool = False,
    ) -> list[str]:
        """Store texts as cells (all or nothing) and return their ids.

        A write of more than `config.ingest_chunk` texts pauses Python's cyclic garbage collector while it runs
        (for the process; resumed after it if it was running: `ingest.large_write`).

        Args:
            texts: one text or a list of them (non-blank strings).
            vectors: their embeddings, one row per text (the encoder is then not called); any dimension other
                than the memory's is refused.
            kind: the kind of memory, one of `config.kind_importance` ("episodic", "fact"); it sets the default
                importance.
            importance: a number in [0, 1], or one per text, weighing memory-mode scores; None: the kind's.
            metadata: one mapping for every text, or one per text, of JSON's types (what `where` filters on).
            timestamps: one per text, epoch seconds or datetimes; None: now (`clock`).
            ids: one per text, new ones; None: generated.
            context: one string, or one per text (e.g. a session date "[8 May 2023]"), prepended to each text
                for the encoder and the lexical index and kept in `metadata["context"]`; the text stays as given.
            episode: one name, or one per text (e.g. a conversation's session), grouping cells written together;
                None: inferred from the time between writes (`episodes.py`).
            scope: one name, or one per text ("user:alice"): whose memory a cell is. Searches, deletes and
                sleep in a scope see only its cells.
            upsert: replace a cell already stored under an id (as `update` does, its old text kept in its
                history) instead of refusing it.

        Returns:
            The cells' ids, in the order of `texts`.

        Raises:
            InvalidInputError: a bad text, vector, id, kind, importance, metadata, timestamp, episode or scope,
                lists of different lengths, or (without `upsert`) an id already stored; nothing is written.
            DimensionMismatchError: vectors of another dimension.
        """
        texts = check_texts(texts)
        count = len(texts)
        with ingest.large_write(count > self.config.ingest_chunk):
            state = self._state
            cells = ingest.checked_cells(
                texts, vectors=vectors, kind=kind, importance=importance, metadata=metadata, timestamps=timestamps,
                ids=ids, context=context, episode=episode, scope=scope, config=self.config, encoder=self.encoder,
                clock=self.clock, taken=None if upsert else state.table.row_of,
            )  # fmt: skip
            with self._resident.writing(cells.scopes, ids or ()):
                ingest.commit(
                    state, self._clustering, self.config, cells, upsert=upsert, keep_episode=episode is None,
                    now=self.clock(),
                )  # fmt: skip
            written = cells.ids
            del cells  # this write's temporaries, freed before the trim
            return written

    def update(
        self,
        cell_id: str,
        *,
        text: str | None = None,
        vector: Any = None,
        metadata: Mapping[str, Any] | None = None,
        scope: str | None = None,
    ) -> CellRecord:
        """Replace a cell in place; the rest (kind, importance, timestamp, episode, scope) stays, and its old
        text is kept in its history. Searches never return the old version once this returns.

        The new version is made from the cell as read (encoding outside the lock) and written only if the cell
        is still that version; if another write changed it meanwhile, it is made again from what that write left,
        so concurrent updates of different fields all hold. A cell deleted meanwhile stays deleted.

        Args:
            cell_id: the cell's id.
            text: its new text (re-embedded, unless `vector` is given too).
            vector: its new vector.
            metadata: its new metadata (replacing the old mapping whole).
            scope: the scope the cell must be of.

        Returns:
            The new record.

        Raises:
            InvalidInputError: no text, vector or metadata given, or one of them bad.
            NotFoundError: no such cell (in `scope`, when given).
            DimensionMismatchError: a vector of another dimension.
        """
        if not isinstance(cell_id, str):
            raise InvalidInputError(f"update takes one id (a str), got {type(cell_id).__name__}")
        if text is None and vector is None and metadata is None:
            raise InvalidInputError("update needs a new text, vector or metadata")
        check_ids(cell_id)
        scope = None if scope is None else check_scope(scope)
        new_text = None if text is None else check_text(text)
        new_metadata = None if metadata is None else check_metadata(metadata)
        given = None if vector is None else unit_vector(vector, dim=self.dim, what="vector")
        return updates.update(
            self._state, self._resident, self._clustering, cell_id, scope=scope, text=new_text,
            metadata=new_metadata, vector=given, encoder=self.encoder, clock=self.clock,
        )  # fmt: skip

    def delete(self, ids: str | Sequence[str] | None = None, *, scope: str | None = None) -> int:
        """Delete cells by id, or every cell of a scope.

        Args:
            ids: one id or a list; all or nothing (an unknown id deletes nothing).
            scope: alone, delete every cell of this scope; with `ids`, the scope they must all be of.

        Returns:
            How many cells were deleted.

        Raises:
            InvalidInputError: neither `ids` nor `scope`, or a bad one.
            NotFoundError: an unknown id, or one of another scope; nothing was deleted.
        """
        if ids is None and scope is None:
            raise InvalidInputError("delete needs ids, a scope, or both")
        wanted = None if ids is None else list(dict.fromkeys(check_ids(ids)))
        scope = None if scope is None else check_scope(scope)
        state = self._state
        with self._resident.writing([] if scope is None else [scope], wanted or ()):
            code = None if scope is None else state.table.known_scope(scope)
            if wanted is None:
                rows = state.live_in(scope)
            else:
                rows = state.rows_of(wanted)
                if scope is not None and (code is None or (state.table.scope[rows] != code).any()):
                    raise NotFoundError(f"not every id given is of scope {scope!r}; nothing was deleted")
            if len(rows):
                state.commit_delete(rows)
        return len(rows)

    def apply_supersessions(self) -> list[Conflict]:
        """Apply the contradictions sleep recorded as updates: the newer cell keeps its text and takes the
        older one's (and its history) into its history; the older cell goes. Covers every scope (with
        `resident_cells`, one scope at a time: a conflict never spans two).

        Returns:
            The conflicts applied.
        """
        applied = []
        for hold in self._resident.each_scope():
            with self._resident.writing(hold):
                code = None if hold is None else self._state.table.known_scope(hold[0])
                if hold is None or code is not None:
                    applied += updates.apply_recorded(self._state, self._clustering, self.clock(), code)
        return applied

    # ---- reading -------------------------------------------------------------------------

    def search(
        self,
        query: str | Any,
        k: int = 10,
        *,
        mode: Mode = "similarity",
        vector: Any = None,
        **within: Unpack[SearchRestriction],
    ) -> list[Hit]:
        """The best `k` cells for a text or a vector.

        Args:
            query: a text (encoded, and read for entities and words) or a vector.
            k: how many hits at most, a positive integer.
            mode: "similarity" ranks by cosine (fused with the lexical rank for texts); "memory" also weighs
                importance, recency and access (`MemoryConfig.weights`).
            vector: with a text query, its embedding if you already have it (the encoder is then not called).
            scope: search this scope's cells only (None: every scope).
            where: a metadata filter in Chroma's `where` syntax (`where_syntax`).
            since: the earliest timestamp (inclusive), epoch seconds or a datetime.
            until: the latest timestamp (inclusive).

        Returns:
            Up to `k` hits, best first, ids unique, scores higher-is-better; `k` of them whenever `k` cells match
            the restriction (in memory mode, `score_threshold` may drop weak ones).

        Raises:
            InvalidInputError: a bad query, `k`, mode, scope, filter or time bound.
            DimensionMismatchError: a vector of another dimension.
        """
        if mode == "similarity" and not within and not isinstance(query, str):
            hits = self._searched_vector(query if vector is None else vector, k)
            if hits is not None:
                return hits
        vectors = None if vector is None else [vector]
        return self.search_batch([query], k, mode=mode, vectors=vectors, **within)[0]

    def _searched_vector(self, vector: Any, k: Any) -> list[Hit] | None:
        """`search` of one query vector over every scope in similarity mode, when the compiled probe answers it
        (`SearchPipeline.probed`; a 1-D float32 vector of the memory's dimension, C-contiguous and writeable): the
        hits `search_batch` finds, without its layers. None when it does not: `search_batch` then answers."""
        if type(vector) is not np.ndarray or vector.shape != (self.dim,) or vector.dtype.char != "f":
            return None
        flags = vector.flags
        if not (flags.c_contiguous and flags.writeable):
            return None
        k = check_result_count(k)
        state = self._state
        calibration.refresh_every_scope(self._resident, state, self.config)
        with self._resident.reading(None):
            found = self._search.probed(state, vector, k)
            return None if found is None else hit_list(state.table, found.rows, found.scores)

    def search_batch(
        self,
        queries: Sequence[str | Any],
        k: int = 10,
        *,
        mode: Mode = "similarity",
        vectors: Any = None,
        scope: str | None = None,
        where: Mapping[str, Any] | None = None,
        since: float | datetime | None = None,
        until: float | datetime | None = None,
    ) -> list[list[Hit]]:
        """`search` for many queries at once (one lock, texts without given `vectors` encoded in one batch).

        Args:
            queries: texts or vectors, mixed as you like.
            k, mode, scope, where, since, until: as for `search`, the same for every query.
            vectors: one embedding for every query (a text's, when you already have it; a vector query's own), or
                None: the texts are encoded.

        Returns:
            One list of hits per query, in the order of `queries`.

        Raises:
            InvalidInputError, DimensionMismatchError: as for `search`.
        """
        k = check_batch(queries, k, mode, vectors)
        restriction = checked_restriction(scope, where, since, until)
        units, query_entities, texts = encoded_queries(queries, vectors, self.encoder, self.dim)
        state = self._state
        if restriction.scope is None:
            calibration.refresh_every_scope(self._resident, state, self.config)
        with self._resident.reading(None if restriction.scope is None else [restriction.scope]):
            within = state.within(*restriction)
            if within is None:
                return [[] for _ in queries]
            found = self._search.answered(state, units, k, query_entities, texts, within, mode=mode, clock=self.clock)
            return hits_of(state.table, found)

    def get(self, cell_id: str) -> CellRecord:
        """The full record of one cell (text, vector, group, kind, importance, timestamp, access count, metadata,
        conflicts, episode, scope, history).

        Raises:
            InvalidInputError: not one id (a str).
            NotFoundError: no such cell.
        """
        if not isinstance(cell_id, str):
            raise InvalidInputError(f"get takes one id (a str), got {type(cell_id).__name__}")
        with self._resident.reading((), check_ids(cell_id)):
            return self._state.record(int(self._state.rows_of([cell_id])[0]))

    def get_many(self, ids: Sequence[str]) -> list[CellRecord]:
        """The records of these cells, in the order asked; unknown ids are skipped.

        Raises:
            InvalidInputError: one id (a str: use `get`) or a bad one.
        """
        if isinstance(ids, str):
            raise InvalidInputError("get_many takes a list of ids; get(id) reads one")
        wanted = check_ids(ids) if len(ids) else []
        with self._resident.reading((), wanted):
            row_of = self._state.table.row_of
            return self._state.records([row_of[i] for i in wanted if i in row_of])

    def __len__(self) -> int:
        with self._resident.reading(()):
            return self._resident.count(None)

    def __contains__(self, cell_id: object) -> bool:
        return isinstance(cell_id, str) and self._resident.holds(cell_id)

    def count(self, *, scope: str | None = None) -> int:
        """How many cells the memory holds (in `scope`, when given), in RAM or not.

        Raises:
            InvalidInputError: a bad scope name.
        """
        name = None if scope is None else check_scope(scope)
        with self._resident.reading(()):
            return self._resident.count(name)

    def ids(self, *, scope: str | None = None) -> list[str]:
        """Every cell id (of `scope`, when given), in insertion order (with `resident_cells`: each scope's; every
        scope is loaded for the call).

        Raises:
            InvalidInputError: a bad scope name.
        """
        scope = None if scope is None else check_scope(scope)
        with self._resident.reading(None if scope is None else [scope]):
            table = self._state.table
            return [table.ids[row] for row in self._state.live_in(scope).tolist()]

    def concepts(self) -> list[Concept]:
        """The memory's topics: groups gathered by their centroids (`concepts.py`), numbered in order
        of their first group. Computed on each call, O(G²) in the groups linked; covers every scope (with
        `resident_cells`, every scope is loaded for the call)."""
        with self._resident.reading(None):
            return concepts_of(self._state.groups, limit=self.config.concept_limit)

    def stats(self) -> MemoryStats:
        """Counts, group-size distribution and configuration, for reports and dashboards. `cells` counts every cell
        held; with `resident_cells`, the figures of groups, entities, episodes and recall are those of the scopes
        in RAM (loading every scope for a dashboard would undo the budget)."""
        with self._resident.reading(()):
            shape = memory_stats(self._state, self.config, encoder=self.encoder.name, dim=self.dim)
            return shape if not self._resident.bounded else replace(shape, cells=self._resident.count(None))

    def check_invariants(self) -> None:
        """Check that groups, centroids, the group index and the entity and lexical indexes agree with
        the cells. Raises `InvariantError` naming each disagreement. Costs one pass over every cell (with
        `resident_cells`: over the scopes in RAM)."""
        with self._resident.reading(()):
            self._state.check_invariants()

    def set_search_options(self, **changes: Any) -> None:
        """Change query-time settings (`config.SEARCH_OPTIONS`: e.g. `group_top_k`, `entity_boost`,
        `use_entities`, `min_score`); the next search uses them.

        Raises:
            InvalidInputError: a name that is not a query-time setting, or a value `MemoryConfig` refuses.
        """
        unknown = set(changes) - SEARCH_OPTIONS
        if unknown:
            raise InvalidInputError(f"not a query-time option: {sorted(unknown)}; use {sorted(SEARCH_OPTIONS)}")
        with self._resident.writing(()):
            self.config = replace(self.config, **changes)
            if self.config.lexical and self._state.lexical is None:  # switched on later: index what is stored
                self._state.enable_lexical()
            if {"target_recall", "probe_margin"} & changes.keys():
                calibration.commit_all(self._state, self.config)
            self._search = SearchPipeline(self.config)

    # ---- sleep ---------------------------------------------------------------------------

    def consolidate(
        self,
        judge: ConflictJudge | None = None,
        *,
        labels: Mapping[str, Hashable] | None = None,
        scope: str | None = None,
    ) -> ConsolidationReport:
        """One sleep pass: regroup (merge, move cells to their nearest centroid, split), then judge changed groups
        for conflicts.

        The plan is made under the read lock (searches go on); only applying it takes the write
        lock. Groups that gained cells or changed since the last pass are judged; conflicts are
        recorded on both cells (nothing is deleted) and judge failures are reported.

        Args:
            judge: the judge of this pass (default: the memory's).
            labels: cell id → true class, to add ARI before and after to the report.
            scope: sleep this scope alone (at the cost of its cells). Without it, with `resident_cells`, the
                pass covers the scopes in RAM (a scope out of RAM is slept by name: it loads).

        Returns:
            What the pass changed and found (`ConsolidationReport`).

        Raises:
            InvalidInputError: `labels` not a mapping, or a bad scope name.
        """
        if labels is not None and not isinstance(labels, Mapping):
            raise InvalidInputError(f"labels must map cell ids to classes, got {type(labels).__name__}")
        name = None if scope is None else check_scope(scope)
        with self._sleep_mutex:
            report = sleep.consolidate(
                self._state, self._resident, self.config, judge or self.judge, self.clock, labels, name
            )
            calibration.estimate_after_sleep(self._resident, self._state, self.config, name)
            return report

    def start_sleep(self, interval: float, *, judge: ConflictJudge | None = None) -> None:
        """Consolidate every `interval` seconds on a background thread until `stop_sleep()`; a pass's errors are
        kept in `sleep_errors`, its reports in `sleep_reports`.

        Args:
            interval: seconds between passes, positive and at most a week.
            judge: the judge of the passes (default: the memory's).

        Raises:
            InvalidInputError: a bad interval.
        """
        interval = check_interval(interval)
        self._state.check_open()
        self._sleeper.start(interval, lambda: self.consolidate(judge))

    @property
    def sleeping(self) -> bool:
        """Whether background sleep is running (`start_sleep`)."""
        return self._sleeper.running

    def stop_sleep(self) -> None:
        """Stop the background sleep (waits for a running pass to finish)."""
        self._sleeper.stop()

    def conflicts(self) -> list[Conflict]:
        """Every recorded conflict once, older cell first (with `resident_cells`: scope by scope, each scope loaded
        in turn; a conflict never spans two)."""
        found = []
        for hold in self._resident.each_scope():
            with self._resident.reading(hold):
                code = None if hold is None else self._state.table.known_scope(hold[0])
                if hold is None or code is not None:
                    found += sleep.recorded_conflicts(self._state, code)
        return found

    # ---- lifecycle -----------------------------------------------------------------------

    def flush(self) -> None:
        """Persist access counts and moves gathered since the last flush."""
        with self._resident.writing(()):
            self._state.flush()

    def close(self) -> None:
        """Flush and release the indexes and the store; further calls raise."""
        state = self._state
        if state.closed:
            return
        self.stop_sleep()
        with state.lock.write():
            try:
                state.close()
                if not self._resident.bounded:  # a memory that loads scopes as used estimates each as it loads
                    self._store.keep_estimates(kept_estimates.saved(state, self.config))
            finally:
                self._store.close()

    def __enter__(self) -> CellularMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
