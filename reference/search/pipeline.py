"""The search pipeline: centroids → per-group searches → entity boost → lexical fusion → context and turn form →
ranking. Every ranking rule of the engine is here.

1. Centroids. With budget probing (the default) groups are taken in centroid order until they hold
   `MemoryConfig.probe_candidates(k, N)` cells, and past the first `probe_per_k` · k cells only while a group's
   centroid scores at least the k-th best cell so far minus the margin in force (`EngineState.probe`, chosen for
   `target_recall` by `calibration.py`). A memory small enough that probing would cost more
   (`MemoryConfig.flat_is_cheaper`) is searched flat, which is also exact. With `top_k` probing the best
   `group_top_k` groups are taken, and a flat search fills in when fewer than `k` candidates score above
   `min_score` (the seed design).
2. Cells of the chosen groups. The `numpy` index runs stages 1 and 2 as one compiled call over its arena
   (`kernels.probe.probe_for`), taking the k-th best score as each group is read; a batch of vector queries is
   one call for them all, which holds no GIL (`SearchPipeline.ranked_many`), so searches from several threads run
   at once, and a search of one vector is one call from the vector as given to its candidates
   (`SearchPipeline.probed`). The `chroma` index queries one group at a time (its calls are serialised by the
   index, so a thread pool would only add hand-offs).
3. Entities. Cells that mention the query's entities (the exact-match index) are scored directly and boosted by
   `entity_boost` times the share of the query's entities they mention.
4. Lexical fusion, for text queries: the best `fusion_depth` dense candidates are fused with the lexical index's
   (BM25) best (`fusion.py`); vector-only queries stay dense.
5. Context and form, for text queries: each candidate is scored with its episode's and its neighbouring turns'
   evidence (`_with_context`), then less if it asks a question, more if a speaker the query names wrote it
   (`turns.py`).
6. Ranking: in similarity mode the best k as they stand; in memory mode `MEMORY_MODE_POOL` · k candidates
   re-scored by importance, recency and access (`scoring.py`), superseded cells penalised, scores under
   `score_threshold` dropped.

A search restricted to a scope or by a filter (`filters.Within`) applies the restriction in every stage
(`SearchPipeline.run`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Literal, NamedTuple

import numpy as np

from ..cells.episodes import EpisodeIndex
from ..cells.turns import with_turn_form
from ..common.config import MemoryConfig
from ..indexes.filters import EVERYTHING, Within
from ..indexes.vectors import (
    GroupIndex,
    NumpyGroupIndex,
    Probed,
    ProbeLimits,
    VectorProbe,
    probe_vector,
    similarities,
    top_k,
)
from ..kernels.context import with_context
from ..kernels.jit import rows32
from ..score.fusion import calibrated_scores, reciprocal_rank
from ..score.scoring import Clock, memory_scores
from ..state.calibration import ProbeSetting
from ..state.engine import EngineState

Mode = Literal["similarity", "memory"]
MEMORY_MODE_POOL = 4
"""In memory mode the dense and lexical stages fetch this many times k candidates to re-rank."""


class Candidates(NamedTuple):
    """Rows and their scores, best first, rows unique: as the stage that made them scores (a cosine plus
    entity boost for dense candidates, a fused and context score for text queries, the memory-mode score
    after ranking in that mode). A named tuple: cheaper to make on every search than a frozen dataclass."""

    rows: np.ndarray
    scores: np.ndarray


NOTHING = Candidates(np.empty(0, dtype=np.int64), np.empty(0))
"""No candidates: what every search of an empty memory returns (one value, shared: its arrays hold no element to
change; left writeable, so the kernels that read them need no read-only variant compiled)."""


class Route(NamedTuple):
    """How stages 1–2 find one scope's candidates for one k and depth: the probe setting it was made for, the
    scope's cells, where its budget probing stops (`limits.budget` 0: `top_k` probing), whether a flat search is
    cheaper than a probe, its live groups, and their centroid codes when the compiled probe reads them (else
    None), with the one-vector probe over them bound (`NumpyGroupIndex.vector_probe`)."""

    setting: ProbeSetting
    cells: int
    limits: ProbeLimits
    flat: bool
    groups: np.ndarray
    centroid_codes: tuple[np.ndarray, np.ndarray] | None
    vector_probe: VectorProbe | None


class SearchPipeline:
    """Runs the pipeline over the engine's derived state (read-only)."""

    def __init__(self, config: MemoryConfig) -> None:
        self.config = config

    def answered(
        self,
        state: EngineState,
        queries: Sequence[np.ndarray],
        k: int,
        query_entities: Sequence[frozenset[str]],
        query_texts: Sequence[str | None],
        within: Within,
        *,
        mode: Mode,
        clock: Clock,
    ) -> list[Candidates]:
        """Each query's candidates ranked for `mode`, their reads noted in the access counts (call under the
        state's read lock). No similarity score reads the access counts, so a batch's are noted once; in memory
        mode each query's reads are noted before the next is scored, which they may lift."""
        if mode == "similarity":
            found = self.ranked_many(state, queries, k, query_entities, query_texts, within)
            state.note_access(found[0].rows if len(found) == 1 else np.concatenate([f.rows for f in found]))
            return found
        found = []
        for query, entities, text in zip(queries, query_entities, query_texts):
            found.append(self.ranked(state, query, k, entities, mode=mode, query_text=text, clock=clock, within=within))
            state.note_access(found[-1].rows)
        return found

    def ranked(
        self,
        state: EngineState,
        query: np.ndarray,
        k: int,
        query_entities: frozenset[str],
        *,
        mode: Mode,
        query_text: str | None,
        clock: Clock,
        within: Within = EVERYTHING,
    ) -> Candidates:
        """The best `k` cells for one query among those `within` allows, ranked for `mode` (call under the
        state's read lock)."""
        if not len(state.table):
            return NOTHING
        if mode == "similarity":
            return self.run(state, query, k, query_entities, query_text, within)
        found = self.run(state, query, k * MEMORY_MODE_POOL, query_entities, query_text, within)
        config, table, rows = self.config, state.table, found.rows
        scores = (
            memory_scores(
                found.scores,
                table.importance[rows],
                table.timestamp[rows],
                table.access[rows],
                now=clock(),
                config=config,
            )
            - config.superseded_penalty * table.superseded[rows]
        )
        keep = scores >= config.score_threshold
        order = np.argsort(-scores[keep], kind="stable")[:k]
        return Candidates(rows[keep][order], scores[keep][order])

    def ranked_many(
        self,
        state: EngineState,
        queries: Sequence[np.ndarray],
        k: int,
        query_entities: Sequence[frozenset[str]],
        query_texts: Sequence[str | None],
        within: Within = EVERYTHING,
    ) -> list[Candidates]:
        """`ranked` in similarity mode for each query (call under the state's read lock): the same candidates.
        The vector queries that stages 1–2 alone answer (no text, no entities, no filter, the compiled probe's
        route) are probed in one compiled call, the GIL released throughout; the others run one by one."""
        if not len(state.table):
            return [NOTHING] * len(queries)
        probed = [i for i, text in enumerate(query_texts) if text is None and not query_entities[i]]
        route = self._route(state, k, k, within.scope) if probed and within.rows is None else None
        if route is None or route.centroid_codes is None:
            return [self.run(state, *each, within) for each in zip(queries, repeat(k), query_entities, query_texts)]
        assert isinstance(state.index, NumpyGroupIndex)
        matrix = queries[probed[0]][None, :] if len(probed) == 1 else np.stack([queries[i] for i in probed])
        many = state.index.probe_many(route.groups, route.centroid_codes, rows32(matrix), k, route.limits)
        state.counters.count(flat=False, searches=len(probed), bytes_read=many.bytes_read)
        if len(queries) == 1 and not within.restricts:
            return [Candidates(many.rows, many.scores)]
        found: list[Candidates | None] = [None] * len(queries)
        ends = many.ends.tolist()
        for i, start, end in zip(probed, [0, *ends], ends):
            rows, scores = many.rows[start:end], many.scores[start:end]
            if within.restricts:  # as `run` does after stage 2
                keep = within.allows(state.table.scope, rows)
                rows, scores = rows[keep], scores[keep]
            found[i] = Candidates(rows, scores)
        return [
            done if done is not None else self.run(state, query, k, entities, text, within)
            for done, query, entities, text in zip(found, queries, query_entities, query_texts)
        ]

    def probed(self, state: EngineState, vector: np.ndarray, k: int) -> Probed | None:
        """`ranked` in similarity mode for one query vector over every scope, counted as a search and its reads in
        the access counts (call under the state's read lock), when the compiled probe's route answers it: one
        compiled call from the vector as the caller gave it (1-D float32, C-contiguous, writeable:
        `indexes.vectors.probe_vector`) to its candidates, which also counts them. None when it does not (another
        route, an empty memory, a vector with no direction): `answered` then answers, with the checks it makes."""
        if not len(state.table):
            return None
        route = self._route(state, k, k, None)
        if route.vector_probe is None:
            return None
        found = probe_vector(route.vector_probe, vector, k, route.limits)
        if found is not None and state.store.persistent:
            state.mark_accessed(found.rows)
        return found

    def run(
        self,
        state: EngineState,
        query: np.ndarray,
        k: int,
        query_entities: frozenset[str],
        query_text: str | None = None,
        within: Within = EVERYTHING,
    ) -> Candidates:
        """Stages 1–4: similarity-mode candidates (cosine, entity boost, lexical fusion), best first.

        Restricted to a scope, the groups probed are the scope's (a group holds one scope's cells). Filtered,
        a filter that leaves no more cells than the probe would read is searched exactly over them; a wider
        one probes, drops what it excludes, and is searched exactly when fewer than k candidates remain, so
        a filtered search has k hits whenever k cells match."""
        config, table, lexical = self.config, state.table, state.lexical
        fusing = config.lexical and lexical is not None and query_text is not None
        depth = max(k, config.fusion_depth) if fusing else k
        matching = None if within.rows is None else len(within.rows)
        route = self._route(state, k, depth, within.scope)
        flat = route.flat or (matching is not None and matching <= route.limits.budget)
        if flat:
            rows, scores = flat_search(query, depth, state, within)
        else:
            limits = route.limits
            if matching is not None:  # probe deeper: the filter drops most of what is read
                limits = limits._replace(depth=min(route.cells, depth * max(1, route.cells // max(matching, 1))))
            rows, scores = self._group_stage(query, k, limits, route, state, within.scope)
        if within.restricts and not flat:  # both stages give their candidates best first
            keep = within.allows(table.scope, rows)
            rows, scores = rows[keep][:depth], scores[keep][:depth]
        if config.use_entities and query_entities:
            entity_rows, entity_scores = self._entity_stage(query, query_entities, state, within)
            rows, scores = _best(*_merge_best(rows, scores, entity_rows, entity_scores), depth)
        shortfall = matching is not None and len(rows) < min(k, matching)
        top_k_short = config.probing == "top_k" and np.count_nonzero(scores[:k] > config.min_score) < k
        if not flat and (shortfall or top_k_short):
            flat = True
            rows, scores = _best(*_merge_best(rows, scores, *flat_search(query, depth, state, within)), depth)
        if fusing:
            assert lexical is not None and query_text is not None
            allowed = (lambda found: within.allows(table.scope, found)) if within.rows is not None else None
            lexical_rows, lexical_scores = lexical.search(query_text, config.fusion_depth, allowed, within.scope)
            if config.fusion == "rrf":
                rows, scores = reciprocal_rank((rows, scores), (lexical_rows, lexical_scores), rrf_k=config.rrf_k)
            else:
                rows, scores = calibrated_scores(
                    (rows, scores),
                    (lexical_rows, lexical_scores),
                    lambda chosen: similarities(state.index.vectors_of(chosen), query).astype(np.float64),
                    lexical_weight=config.lexical_weight,
                )
            scores = with_turn_form(
                rows,
                self._with_context(rows, scores, state.episodes),
                table,
                query_text,
                asking_penalty=config.asking_penalty,
                speaker_weight=config.speaker_weight,
            )
            rows, scores = _best(rows, scores, k)
        state.counters.count(flat=flat)
        return Candidates(rows, scores)

    def _with_context(self, rows: np.ndarray, scores: np.ndarray, episodes: EpisodeIndex) -> np.ndarray:
        """Stage 5 (text queries): each fused candidate (rows ascending) plus `episode_weight` times the best
        fused score among the candidates of its episode, plus, in an episode the caller named, `neighbour_weight`
        times the better fused score of the cells written just before and after it (0 for one that is not a
        candidate); divided by the largest value that can reach, so scores stay within the fused scores'
        range (fused by reciprocal rank, a hit first in both lists of a memory without named episodes still
        scores 1). The best fused candidate stays first: context reorders what follows the best match, it never
        hides it."""
        config = self.config
        if not len(rows) or not (config.episode_weight or config.neighbour_weight):
            return scores
        before, after = episodes.neighbours(rows)
        scored: np.ndarray = with_context(
            rows, scores, episodes.code[rows], before, after, config.episode_weight, config.neighbour_weight
        )
        return scored

    def _route(self, state: EngineState, k: int, depth: int, scope: int | None) -> Route:
        """Stages 1–2's route for this scope, k and depth by this pipeline's settings, made once until the memory
        or the scope's probe setting changes (`EngineState.routes`, `EngineState.probe_of`): worked out in every
        search, it would be a noticeable share of a probe's cost. Readers may share the routes: none changes the
        state."""
        setting = state.probe_of(scope)
        key = (self, scope, k, depth)
        route: Route | None = state.routes.get(key)
        if route is None or route.setting is not setting:
            route = self._new_route(state, k, depth, scope, setting)
            state.keep_route(key, route)
        return route

    def _new_route(self, state: EngineState, k: int, depth: int, scope: int | None, setting: ProbeSetting) -> Route:
        """The route as the memory stands (see `Route`)."""
        config, groups = self.config, state.groups
        cells = len(state.table) if scope is None else state.scopes.count(scope)
        budget = config.probe_candidates(k, cells, setting.reach) if config.probing == "budget" else 0
        limits = ProbeLimits(depth, config.probe_per_k * k, budget, setting.margin)
        flat = bool(budget) and config.flat_is_cheaper(k, cells, setting.reach)
        compiled = bool(budget) and not flat and isinstance(state.index, NumpyGroupIndex)
        active = groups.active_ids(scope)
        if not compiled:
            return Route(setting, cells, limits, flat, active, None, None)
        assert isinstance(state.index, NumpyGroupIndex)
        codes, table = groups.active_centroid_codes(scope), state.table
        probe = state.index.vector_probe(
            active, codes, table.addresses, table.item_arrays, table.access, state.counters.tallies
        )
        return Route(setting, cells, limits, flat, active, codes, probe)

    def _group_stage(
        self, query: np.ndarray, k: int, limits: ProbeLimits, route: Route, state: EngineState, scope: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best `limits.depth` candidates of the probed groups (`route.groups`, of `scope`), best first: of
        the cells read (budget probing over the `numpy` index), of every cell of the chosen groups (its `top_k`
        probing), or of each group's best `depth`."""
        config, groups, index = self.config, state.groups, state.index
        active, depth, floor, budget = route.groups, limits.depth, limits.floor, limits.budget
        if route.centroid_codes is not None:  # the rule below, compiled with a running k-th score
            assert isinstance(index, NumpyGroupIndex)
            found = index.probe(active, route.centroid_codes, query, k, limits)
            state.counters.read(found.bytes_read)
            return found.rows, found.scores
        centroids = groups.active_centroids(scope)
        centroid_scores = similarities(centroids, query)
        if not budget:
            chosen = active[top_k(centroid_scores, config.group_top_k)]
            return _best(*self._search_groups(chosen, query, depth, index), depth)
        ranked, reached = _probe_order(centroid_scores, groups.active_sizes(scope), budget)
        first = int(np.searchsorted(reached, floor)) + 1
        rows, scores = self._search_groups(active[ranked[:first]], query, depth, index)
        rest = ranked[first:]
        if len(rest) and len(scores) >= k:  # past the floor: only groups that may still hold a top-k cell
            kth = float(np.partition(scores, len(scores) - k)[len(scores) - k])
            rest = rest[centroid_scores[rest] >= kth - limits.margin]
        if len(rest):
            more_rows, more_scores = self._search_groups(active[rest], query, depth, index)
            rows, scores = np.concatenate([rows, more_rows]), np.concatenate([scores, more_scores])
        return _best(rows, scores, depth)

    def _search_groups(
        self, chosen: np.ndarray, query: np.ndarray, k: int, index: GroupIndex
    ) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(index, NumpyGroupIndex):
            return index.scan(chosen, query)
        results = [index.search(group, query, k) for group in chosen.tolist()]
        return np.concatenate([r for r, _ in results]), np.concatenate([s for _, s in results])

    def _entity_stage(
        self, query: np.ndarray, query_entities: frozenset[str], state: EngineState, within: Within
    ) -> tuple[np.ndarray, np.ndarray]:
        matched = state.entities.matches(query_entities, within.scope)
        rows = np.fromiter(matched, dtype=np.int64, count=len(matched))
        shares = np.fromiter(matched.values(), dtype=np.float64, count=len(matched)) / len(query_entities)
        if within.restricts:
            keep = within.allows(state.table.scope, rows)
            rows, shares = rows[keep], shares[keep]
        cosines = similarities(state.index.vectors_of(rows), query).astype(np.float64)
        return rows, cosines + self.config.entity_boost * shares


def _probe_order(centroid_scores: np.ndarray, sizes: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the best groups, in centroid order, until their sizes reach `budget` cells, and the
    running total of their sizes."""
    guess = min(len(sizes), max(8, 4 * budget * len(sizes) // max(1, int(sizes.sum()))))
    while True:
        ranked = top_k(centroid_scores, guess)
        reached = np.cumsum(sizes[ranked])
        enough = int(np.searchsorted(reached, budget)) + 1
        if enough <= len(ranked) or guess == len(sizes):
            return ranked[:enough], reached[:enough]
        guess = min(len(sizes), 2 * guess)


def flat_search(
    query: np.ndarray, k: int, state: EngineState, within: Within = EVERYTHING
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k over every live cell `within` allows (ties go to the earlier row): over a filter's rows
    or a scope's groups directly; else one pass over every row's vectors."""
    table, index = state.table, state.index
    if within.rows is not None:
        rows = within.rows
        scores = similarities(index.vectors_of(rows), query)
    elif within.scope is not None:  # the scope's groups hold its cells
        groups = state.groups.active_ids(within.scope)
        if isinstance(index, NumpyGroupIndex):
            rows, scores = index.scan(groups, query)
        else:
            rows = np.concatenate([index.members(group) for group in groups.tolist()] or [np.zeros(0, np.int64)])
            scores = similarities(index.vectors_of(rows), query)
        order = np.argsort(rows, kind="stable")
        rows, scores = rows[order], scores[order]
    else:  # every row, dead ones masked: the table's vectors, or the NumPy index's (the one that holds them)
        if table.keep_vectors:
            vectors = table.vectors
        else:
            assert isinstance(index, NumpyGroupIndex)
            vectors = index.by_row
        rows = np.arange(table.size)
        scores = similarities(vectors[: table.size], query)
        scores[~table.alive[: table.size]] = -np.inf
    state.counters.read(len(rows) * query.size * np.dtype(np.float32).itemsize)
    best = top_k(scores, min(k, len(rows)))
    best = best[np.isfinite(scores[best])]
    return rows[best], scores[best]


def _best(rows: np.ndarray, scores: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The best `count` of these candidates, best first."""
    best = top_k(scores, count)
    return rows[best], scores[best]


def _merge_best(
    rows: np.ndarray, scores: np.ndarray, more_rows: np.ndarray, more_scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The union of two candidate lists; a row in both keeps its higher score."""
    rows, scores = np.concatenate([rows, more_rows]), np.concatenate([scores, more_scores])
    order = np.lexsort((-scores, rows))
    first = np.r_[True, rows[order][1:] != rows[order][:-1]][: len(rows)]
    keep = order[first]
    return rows[keep], scores[keep]
