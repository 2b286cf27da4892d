"""Recall as a setting: the memory estimates its own recall and chooses the probe margin that meets its target."""

import itertools
from statistics import NormalDist

import numpy as np
import pytest

from reference import CellularMemory, InvalidInputError, MemoryConfig
from reference.encoders import MockEncoder
from reference.state import calibration
from reference.state.calibration import MARGINS

DIM = 32


def mixture(count: int, spread: float, seed: int) -> np.ndarray:
    """Unit vectors around 40 centres; a larger `spread` is more diffuse (harder to probe)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIM))
    points = centres[rng.integers(0, 40, count)] + spread * rng.standard_normal((count, DIM))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def filled(vectors: np.ndarray, **config) -> CellularMemory:
    memory = CellularMemory(encoder=MockEncoder(DIM), config=MemoryConfig(lexical=False, **config))
    for start in range(0, len(vectors), 1000):
        part = vectors[start : start + 1000]
        names = [f"cell {i}" for i in range(start, start + len(part))]
        memory.add(names, vectors=part, ids=names)
    return memory


def measured_recall(memory: CellularMemory, cells: np.ndarray, queries: np.ndarray) -> float:
    """Recall@10 of held-out queries against exact search over `cells` (added in order)."""
    found = []
    for query in queries:
        exact = {f"cell {i}" for i in np.argsort(-(cells @ query))[:10]}
        found.append(len(exact & {hit.id for hit in memory.search(query, k=10)}) / 10)
    return float(np.mean(found))


@pytest.mark.parametrize("spread", [0.6, 1.4])
def test_the_estimate_tracks_the_recall_of_held_out_queries_and_meets_the_target(spread):
    vectors = mixture(8300, spread, seed=3)
    cells, queries = vectors[:8000], vectors[8000:]
    with filled(cells) as memory:
        stats = memory.stats()
        assert stats.target_recall == 0.95 and 0.2 <= stats.probe_margin <= MARGINS[-1]
        assert stats.estimated_recall >= 0.95 or stats.probe_margin == MARGINS[-1]
        assert abs(measured_recall(memory, cells, queries) - stats.estimated_recall) <= 0.03


def test_diffuse_data_gets_a_wider_margin_than_tight_clusters_and_a_higher_target_wider_still():
    tight, diffuse = mixture(5000, 0.4, seed=4), mixture(5000, 2.0, seed=4)  # 1.4 settled well enough for the floor
    with filled(tight) as easy, filled(diffuse) as hard, filled(diffuse, target_recall=0.99) as harder:
        assert easy.stats().probe_margin == MemoryConfig().probe_margin
        assert easy.stats().probe_margin < hard.stats().probe_margin < harder.stats().probe_margin


def test_the_margin_is_narrowed_between_the_grid_margin_short_of_the_target_and_the_one_that_meets_it(monkeypatch):
    """Recall estimated in steps: 0.9 below margin 0.3, 0.97 from 0.3 on, and 0.95 from 0.275 (a grid step
    of 0.05 halved three times can find 0.275, not 0.26)."""
    tried = []

    def recall_at(margin: float) -> float:
        tried.append(margin)
        return 0.97 if margin >= 0.3 else 0.95 if margin >= 0.275 else 0.9

    monkeypatch.setattr(calibration, "_recall", lambda rows, scores, itself, kth: recall_at(_margin_now[0]))
    real_limits = calibration.ProbeLimits
    _margin_now = [0.0]

    def limits(depth, floor, budget, margin):
        _margin_now[0] = margin
        return real_limits(depth, floor, budget, margin)

    monkeypatch.setattr(calibration, "ProbeLimits", limits)
    with filled(mixture(5000, 1.0, seed=9), target_recall=0.94) as memory:  # 0.95 for a sampled cell meets 0.94
        assert memory.stats().probe_margin == pytest.approx(0.275)
        assert memory.stats().estimated_recall == pytest.approx(1 - calibration.MISS_FACTOR * 0.05)
    assert sorted(set(tried)) == pytest.approx([0.2, 0.25, 0.2625, 0.26875, 0.275, 0.3])


def test_the_memory_estimates_again_when_turnover_times_the_cells_it_estimated_over_changed_and_after_sleep(
    monkeypatch,
):
    estimated_at = []
    real = calibration.calibrated

    def counted(state, config, scope=None):
        estimated_at.append(len(state.table))
        return real(state, config, scope)

    monkeypatch.setattr(calibration, "calibrated", counted)
    vectors = mixture(28_000, 1.0, seed=5)
    with filled(vectors[:4000]) as memory:  # 1,000 cells a write (1,000 is searched flat), each a quarter or more
        assert estimated_at == [1000, 2000, 3000, 4000]
        monkeypatch.setattr(calibration, "TURNOVER", 3)
        memory.add([f"more {i}" for i in range(11_000)], vectors=vectors[4000:15_000])  # 11,000 changed: < 3 x 4,000
        assert len(estimated_at) == 4
        memory.add([f"more {i}" for i in range(4_000)], vectors=vectors[15_000:19_000])  # 15,000 changed
        memory.consolidate()
        assert estimated_at[4:] == [19_000, 19_000] and memory.stats().estimated_recall >= 0.95
        monkeypatch.setattr(calibration, "TURNOVER", 1)
        memory.delete(memory.ids()[:10_000])  # a memory that forgets as it writes: 10,000 of 19,000 changed
        assert len(estimated_at) == 6
        memory.add([f"last {i}" for i in range(9_000)], vectors=vectors[19_000:])  # 19,000 changed, 18,000 left
        assert estimated_at[6:] == [18_000]


def test_a_memory_searched_flat_has_no_estimate_and_none_keeps_the_configured_margin():
    with filled(mixture(500, 1.0, seed=6)) as small:
        assert small.stats().estimated_recall is None and small.stats().probe_margin == MemoryConfig().probe_margin
    with filled(mixture(5000, 1.0, seed=6), target_recall=None, probe_margin=0.35) as fixed:
        assert fixed.stats().estimated_recall is None and fixed.stats().probe_margin == 0.35


def test_the_configured_margin_is_a_floor_that_the_estimate_only_widens_and_a_bad_target_is_refused():
    with filled(mixture(5000, 0.4, seed=7)) as memory:  # tight clusters: the floor already meets the target
        assert memory.stats().probe_margin == MemoryConfig().probe_margin
        memory.set_search_options(probe_margin=0.35)
        assert memory.stats().probe_margin == 0.35 and memory.stats().estimated_recall >= 0.95
        memory.set_search_options(target_recall=None, probe_margin=0.05)
        assert memory.stats().probe_margin == 0.05 and memory.stats().estimated_recall is None
    for bad in (0, 1.5, "high"):
        with pytest.raises(InvalidInputError, match=r"target_recall must be None or in \(0, 1\]"):
            MemoryConfig(target_recall=bad)
    with pytest.raises(InvalidInputError, match="target_recall applies only with"):
        MemoryConfig(group_backend="chroma", target_recall=0.9)


def test_neighbours_tied_with_the_kth_count_so_a_memory_of_copies_is_not_called_inexact():
    copies = np.repeat(mixture(100, 1.0, seed=8), 50, axis=0)  # each vector 50 times: any 10 of a copy's are exact
    with filled(copies) as memory:
        assert memory.stats().estimated_recall == 1.0 and memory.stats().probe_margin == MemoryConfig().probe_margin


def test_switching_between_targets_estimates_each_once_until_the_cells_change(monkeypatch):
    estimates = []
    real = calibration.calibrated
    monkeypatch.setattr(
        calibration, "calibrated", lambda state, config, scope=None: estimates.append(1) or real(state, config, scope)
    )
    with filled(mixture(5000, 1.0, seed=10)) as memory:
        estimates.clear()
        margins = []
        for target in (0.97, 0.95, 0.97, 0.95):
            memory.set_search_options(target_recall=target)
            margins.append(memory.stats().probe_margin)
        assert len(estimates) == 1  # 0.97; the setting for 0.95 is the one the last write estimated
        assert margins[0] == margins[2] and margins[1] == margins[3]
        memory.add(["one more"], vectors=mixture(1, 1.0, seed=11))
        memory.set_search_options(target_recall=0.97)
        memory.set_search_options(target_recall=0.95)
        assert len(estimates) == 3


def test_a_target_the_widest_margin_misses_doubles_the_budget_until_met_at_the_narrowest_margin_or_flat(monkeypatch):
    budgets = []
    real_limits = calibration.ProbeLimits

    def limits(depth, floor, budget, margin):
        budgets.append(budget)
        return real_limits(depth, floor, budget, margin)

    monkeypatch.setattr(calibration, "ProbeLimits", limits)
    budget = MemoryConfig().probe_candidates(10, 20_000)  # 4,526 cells
    # recall grows only with the budget: met at four times it (18,104 cells, fewer than the memory's 20,000)
    monkeypatch.setattr(
        calibration, "_recall", lambda rows, scores, itself, kth: 0.99 if budgets[-1] > 3 * budget else 0.9
    )
    vectors = mixture(20_000, 1.0, seed=12)
    with filled(vectors[:1000]) as memory:
        memory.add([f"more {i}" for i in range(19_000)], vectors=vectors[1000:])
        stats = memory.stats()
        assert stats.probe_reach == 4  # where the budget alone sets recall, the narrowest margin at it
        assert stats.probe_margin == MemoryConfig().probe_margin
        assert stats.estimated_recall == pytest.approx(1 - calibration.MISS_FACTOR * 0.01)
        memory.search(vectors[0], k=10)
        assert memory.stats().flat_searches == 0
    monkeypatch.setattr(calibration, "_recall", lambda rows, scores, itself, kth: 0.9)  # never met
    with filled(vectors[:4000]) as small:  # 4,000 cells: twice the budget (4,048) reads them all
        assert small.stats().probe_reach == 2 and small.stats().estimated_recall == 1.0
        small.search(vectors[0], k=10)
        assert small.stats().flat_searches == 1


def test_sampled_cells_are_held_back_from_their_groups_centroids():
    vectors = mixture(3000, 1.0, seed=21)
    with filled(vectors) as memory:
        state = memory._state
        groups = state.groups.active_ids(None)
        rows = state.table.live_rows()
        lone = groups[np.argmin(state.groups.counts[groups])]
        sample = np.sort(np.r_[rows[state.table.group[rows] == lone], rows[:50]])  # one group's every cell, and more
        codes, scales = calibration._held_back_centroids(state, groups, sample, state.index.vectors_of(sample))
        kept = np.setdiff1d(rows, sample)
        for position, group in enumerate(groups.tolist()):
            members = kept[state.table.group[kept] == group]
            if not len(members):  # every cell held back: nothing to route a query to
                assert not codes[position].any()
                continue
            centroid = state.index.vectors_of(members).sum(axis=0)
            centroid /= np.linalg.norm(centroid)
            assert codes[position] * scales[position] == pytest.approx(centroid, abs=0.02)


def test_stats_give_the_estimates_lower_bound_at_the_stated_confidence_and_the_margin_makes_it_meet_the_target(
    monkeypatch,
):
    """Self-queries alternately found every neighbour and missed one: the bound is the mean less the one-sided
    normal quantile of `CONFIDENCE` times the standard error over the sample."""
    calls = itertools.count()
    monkeypatch.setattr(calibration, "_recall", lambda rows, scores, itself, kth: 1.0 - 0.1 * (next(calls) % 2))
    with filled(mixture(5000, 1.0, seed=13), target_recall=0.93) as memory:
        stats = memory.stats()
        misses = calibration.MISS_FACTOR * np.tile([0.0, 0.1], calibration.SAMPLE // 2)
        low = (
            1 - misses.mean() - NormalDist().inv_cdf(calibration.CONFIDENCE) * misses.std(ddof=1) / np.sqrt(len(misses))
        )
        assert stats.recall_confidence == calibration.CONFIDENCE
        assert stats.estimated_recall == pytest.approx(1 - misses.mean())
        assert stats.estimated_recall_low == pytest.approx(low) and 0.93 <= low < stats.estimated_recall
        assert stats.probe_margin == MemoryConfig().probe_margin  # the bound met the target at the first margin
        memory.set_search_options(target_recall=low + 0.001)  # the bound falls short of it at every margin
        assert memory.stats().probe_reach > 1 or memory.stats().estimated_recall_low == 1.0
    with filled(mixture(500, 1.0, seed=13)) as flat:
        assert flat.stats().estimated_recall is None and flat.stats().estimated_recall_low is None


def test_a_search_of_every_scope_estimates_the_memory_once_it_holds_two_scopes(monkeypatch):
    """A memory of one scope probes by that scope's estimate: a search of every scope estimates nothing. Once a second
    scope holds cells, the first such search estimates the memory as a whole, and the next finds it current."""
    estimated = []
    real = calibration.calibrated

    def counted(state, config, scope=None):
        estimated.append(scope)
        return real(state, config, scope)

    vectors = mixture(4000, 1.0, seed=7)
    with filled(vectors[:2000]) as memory:
        monkeypatch.setattr(calibration, "calibrated", counted)
        memory.search(vectors[0], k=10)
        assert estimated == []
        memory.add([f"other {i}" for i in range(2000)], vectors=vectors[2000:], scope="user:b")
        assert estimated == [memory._state.table.known_scope("user:b")]  # the write's own scope
        memory.search(vectors[0], k=10)
        memory.search(vectors[1], k=10)
        assert estimated[1:] == [None]
        assert memory._state.probe_of(None).estimated_recall is not None
