"""Recall as a setting: budget probing's margin chosen so that the memory meets `MemoryConfig.target_recall`.

How far the probe reads past the groups of its first candidates (`probe_margin`) decides its recall, and the
margin a target needs depends on the text. So the memory measures itself:

- a sample of its own cells, each held back from its group's centroid, is searched for its `K` nearest other
  cells, against exact search over every cell (a hit counts when it scores at least the `K`-th exact similarity,
  as ann-benchmarks counts it: a memory of near-copies has many ties);
- that estimates the recall@10 new text would have (each miss of a sampled cell counted `MISS_FACTOR` times: the
  groups were formed around the sampled cells, so they read their recall too high) at the configured margin,
  then at each wider one of `MARGINS`;
- the first margin that meets the target with `CONFIDENCE` is taken (the estimate's one-sided lower bound
  reaches it, as one aimed at the target itself would fall below it about half the time), then the step from
  the last margin short of it is narrowed by halving;
- where no margin meets it, the candidate budget (which then ends the probes) is doubled until one does, and the
  margin narrowed again at that budget (a larger budget often needs less of the widest margin).

The configured margin is a floor. An estimate is made at one size and holds only roughly as the memory grows, so
it is made again when the cells written or deleted since reach `TURNOVER` times the cells it was made over (and
on an open that finds none kept from the last close, `kept_estimates.py`), and after every sleep pass, which
regroups.

Only the `numpy` group index probes by this rule. Each scope large enough to be probed has an estimate of its
own, made over its own cells and groups (a scoped search probes only them), and a memory of several scopes one
more for a search of every scope (`EngineState.probe_of`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from ..common.config import MemoryConfig
from ..indexes.vectors import NumpyGroupIndex, ProbeLimits
from ..kernels.jit import rows32
from ..kernels.quantize import quantized
from ..kernels.scan import keep_best

if TYPE_CHECKING:
    from .engine import EngineState
    from .residency import Residency, Wanted

K = 10
"""Recall is estimated at k = 10, as the harness measures it."""
SAMPLE = 1000
"""Cells searched per estimate: with `CONFIDENCE`, the margin an estimate chooses varies little from one sample to
another, so new text's recall stays above the target without a wide margin bought for an unlucky sample."""
CONFIDENCE = 0.99
"""How sure the estimate must be that the chosen margin meets the target."""
MARGINS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.8)
MAX_REACH = 8
"""The largest multiple of the candidate budget tried, doubling, when the widest margin falls short of the
target (before sleep, a high target can be out of reach of every margin)."""
REFINEMENTS = 3
"""Halvings of the step between the last margin short of the target and the first that meets it: a margin
wider than the target needs costs speed."""
TURNOVER = 0.25
"""A new estimate once the cells written or deleted since the last one reach this share of the cells it was made
over (`EngineState.turnover`): a memory that only grows is estimated again at each 1.25 times its size; counted by
growth alone, a memory that deletes as much as it writes would never be estimated again. An estimate costs one
exact scan of the memory per sampled cell, so it grows with the memory; the estimates of a memory grown write by
write cost five times its last one in all, and a write, however large, is estimated once, after it. A fresh
estimate may choose a wider margin than an old one that happened to hold: the price of an estimate that holds for
the memory as it is."""
MISS_FACTOR = 1.2
"""How many of new text's misses each miss of a sampled cell stands for. Held back from its group's centroid, a
sampled cell is still an easier query than new text: the memory's groups were formed with it among them, so its
neighbours tend to share its group; new text, which the groups never saw, misses a neighbour more often. Learned
from the gap: the largest ratio of held-out text's misses to the sampled cells' that `harness.measure.recall_floor`
printed on BEAM chats (its `needed factor`), rounded up, set on chats other than those the floor is checked on."""
TIE_TOLERANCE = 1e-5
"""Float32 scores of the same pair from the compiled probe and from NumPy differ in their last bits."""
EXACT_SCORES = 200 * 8192
"""Scores the exact search holds at a time (the sample's queries by a chunk of cells): they stay in cache for the
heaps that read them."""


@dataclass(frozen=True)
class ProbeSetting:
    """The margin budget probing uses, and the recall estimate that chose it (None: not estimated)."""

    margin: float
    estimated_recall: float | None = None
    recall_low: float | None = None
    """The estimate's one-sided lower bound at `CONFIDENCE`: the engine is that sure new text's recall is at least
    this (None: not estimated)."""
    cells: int = 0
    """The cell count when it was estimated."""
    reach: int = 1
    """The multiple of the candidate budget (`MemoryConfig.probe_candidates`) in force."""
    turnover: int = 0
    """`EngineState.turnover` of its scope when it was estimated."""
    scope: int | None = None
    """The scope it was estimated over (None: every scope)."""


def initial(config: MemoryConfig) -> ProbeSetting:
    return ProbeSetting(config.probe_margin)


def due(config: MemoryConfig, state: EngineState, scope: int | None) -> bool:
    """Whether the scope (None: the memory) has changed enough since its last estimate to make a new one."""
    setting = state.probe_of(scope)
    changed = state.turnover(scope) - (setting.turnover if setting.scope == scope else 0)
    return config.target_recall is not None and changed >= TURNOVER * max(setting.cells, 1)


def commit_due(state: EngineState, config: MemoryConfig) -> None:
    """New estimates for the scopes whose cells written or deleted since the last call made them due (under the
    write lock). A search of every scope estimates its own when it needs it (`refresh_every_scope`)."""
    for scope in state.take_changed_scopes():
        if due(config, state, scope):
            state.commit_probe(calibrated(state, config, scope), config.target_recall, config.probe_margin, scope)


def commit_all(state: EngineState, config: MemoryConfig) -> None:
    """Every estimate made (or known) again for the configured target (under the write lock, when it changes); a
    scope out of RAM is estimated when it loads."""
    state.forget_probes_out_of_ram()
    for scope in state.estimated_scopes():
        setting = state.known_probe(config.target_recall, config.probe_margin, scope)
        setting = setting or calibrated(state, config, scope)
        state.commit_probe(setting, config.target_recall, config.probe_margin, scope)


def refresh_every_scope(resident: Residency, state: EngineState, config: MemoryConfig) -> None:
    """In a memory of several scopes, the estimate a search of every scope probes by, made when such a search
    finds it due, not by the writes into one scope (in a memory of one scope, that scope's serves); with
    `resident_cells`, over every scope, each loaded for it. A memory of one scope takes no lock for it: a write
    can as well come in after the read lock is let go as before it is taken."""
    if len(state.scopes) < 2 and not resident.bounded:
        return
    with resident.reading(()):
        if not due(config, state, None):
            return
    estimate_again(resident, state, config, [None], None)


def estimate_after_sleep(resident: Residency, state: EngineState, config: MemoryConfig, scope: str | None) -> None:
    """The estimates a sleep pass (of `scope`; None: of every scope in RAM) regrouped, made again."""
    if config.target_recall is not None:
        held = () if scope is None else [scope]
        with resident.reading(held):
            code = None if scope is None else state.table.known_scope(scope)
            if scope is not None and code is None:
                return
            scopes: list[int | None] = state.estimated_scopes() if scope is None else [code]
        estimate_again(resident, state, config, scopes, held)


def estimate_again(
    resident: Residency, state: EngineState, config: MemoryConfig, scopes: list[int | None], held: Wanted
) -> None:
    """New estimates for these scopes (the scopes `held` in RAM for it): made under the read lock (searches go
    on), committed under the write lock, made again there if a write, a load or an eviction came in between."""
    with resident.reading(held):
        version = state.version
        settings = [calibrated(state, config, scope) for scope in scopes]
    with resident.writing(held):
        if state.version != version:  # changed meanwhile: estimated on what it holds now
            settings = [calibrated(state, config, scope) for scope in scopes]
        for scope, setting in zip(scopes, settings):
            if scope is None or state.scopes.count(scope):  # one let go meanwhile is estimated when it loads
                state.commit_probe(setting, config.target_recall, config.probe_margin, scope)


def calibrated(state: EngineState, config: MemoryConfig, scope: int | None = None) -> ProbeSetting:
    """The configured margin or the first wider one of `MARGINS` that meets the target with `CONFIDENCE`,
    narrowed toward the last one short of it; when even the widest falls short, the widest with the budget
    doubled until it meets the target, reaches the whole memory (searched flat: exact) or `MAX_REACH`. The
    configured margin, unestimated, when probing would not run (a memory searched flat). Over the cells and groups
    of `scope` (None: of every scope), against exact search over them."""
    rows = state.table.live_rows() if scope is None else np.sort(state.scope_rows(scope))
    cells, turnover = len(rows), state.turnover(scope)
    index = state.index
    if (
        config.target_recall is None
        or not isinstance(index, NumpyGroupIndex)
        or config.flat_is_cheaper(K, cells)
        or cells <= K + 1
    ):
        return ProbeSetting(config.probe_margin, None, None, cells, turnover=turnover, scope=scope)
    sample = np.sort(np.random.default_rng(cells).choice(rows, min(SAMPLE, len(rows)), replace=False))
    queries = rows32(index.vectors_of(sample))
    kth = _kth_exact_scores(index, rows, queries, sample)
    groups = state.groups.active_ids(scope)
    centroids = _held_back_centroids(state, groups, sample, queries)
    spread = NormalDist().inv_cdf(CONFIDENCE) / math.sqrt(len(sample))

    def estimate(margin: float, reach: int = 1) -> tuple[float, float]:
        """The recall new text would have at this margin and budget multiple (the sample's, each miss counted
        `MISS_FACTOR` times), and its lower bound."""
        limits = ProbeLimits(K + 1, config.probe_per_k * K, config.probe_candidates(K, cells, reach), margin)
        found = index.probe_many(groups, centroids, queries, K + 1, limits)
        ends = found.ends.tolist()
        misses = MISS_FACTOR * np.asarray(
            [
                1 - _recall(found.rows[start:end], found.scores[start:end], row, bar)
                for start, end, row, bar in zip([0, *ends[:-1]], ends, sample.tolist(), kth.tolist())
            ]
        )
        recall = 1 - float(misses.mean())
        return recall, recall - spread * float(misses.std(ddof=1))

    def narrowest(reach: int) -> tuple[float, float, float]:
        """At this budget multiple, the configured margin or the first wider one of `MARGINS` whose bound meets the
        target, narrowed toward the last one short of it (the widest, when none meets it): margin, estimate, bound."""
        short = config.probe_margin
        for margin in (config.probe_margin, *(m for m in MARGINS if m > config.probe_margin)):
            recall, low = estimate(margin, reach)
            if low >= target:
                break
            short = margin
        if low >= target and margin > short:  # between the last margin short of the target and the first that meets it
            for _ in range(REFINEMENTS):
                middle = (short + margin) / 2
                middle_recall, middle_low = estimate(middle, reach)
                if middle_low >= target:
                    margin, recall, low = middle, middle_recall, middle_low
                else:
                    short = middle
        return margin, recall, low

    target = config.target_recall
    margin, recall, low = narrowest(1)
    reach = 1
    while low < target and reach < MAX_REACH:  # the widest margin falls short: the budget ends the probes
        reach *= 2
        if config.flat_is_cheaper(K, cells, reach):  # searched flat at this reach: exact
            return ProbeSetting(margin, 1.0, 1.0, cells, reach, turnover=turnover, scope=scope)
        recall, low = estimate(margin, reach)
        if low >= target:  # a larger budget may need less of the widest margin
            margin, recall, low = narrowest(reach)
    return ProbeSetting(margin, recall, low, cells, reach, turnover=turnover, scope=scope)


def _held_back_centroids(
    state: EngineState, groups: np.ndarray, sample: np.ndarray, queries: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The centroids of `groups` with the sampled cells left out of their groups, as int8 codes and scales: a
    sampled cell is then a query its group was not formed around, as new text is."""
    sums = state.groups.sums[groups].astype(np.float64)
    np.add.at(sums, np.searchsorted(groups, state.table.group[sample]), -queries)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    codes: tuple[np.ndarray, np.ndarray] = quantized(rows32(sums / np.where(norms > 0, norms, 1.0)))
    return codes


def _kth_exact_scores(index: NumpyGroupIndex, rows: np.ndarray, queries: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Each query cell's `K`-th best similarity to another live cell, by exact search in chunks of cells."""
    best_scores = np.full((len(queries), K), -np.inf, dtype=np.float32)
    best_rows = np.full((len(queries), K), -1, dtype=np.int64)
    step = max(1, EXACT_SCORES // len(queries))
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        scores = rows32(queries @ index.vectors_of(chunk).T)
        keep_best(best_scores, best_rows, scores, chunk, sample)  # a cell is not its own neighbour
    kth: np.ndarray = best_scores.min(axis=1)
    return kth


def _recall(rows: np.ndarray, scores: np.ndarray, itself: int, kth: float) -> float:
    """Recall@K of one self-query as ann-benchmarks counts it: the share of its first `K` other hits that
    score at least the `K`-th exact similarity (so a hit tied with an exact neighbour counts)."""
    others = scores[rows != itself][:K]
    return int(np.count_nonzero(others >= kth - TIE_TOLERANCE)) / K
