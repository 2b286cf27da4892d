"""Adaptive grouping, budget probing and the sleep that repairs (the default `MemoryConfig`)."""

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.groups.clustering import split_in_two
from tests.grouping import group_fit

DIM = 32


def memory(config: MemoryConfig | None = None) -> CellularMemory:
    return CellularMemory(encoder=MockEncoder(DIM), config=config or MemoryConfig())


def diffuse(n: int, seed: int = 0):
    """Clusters as diffuse as real embeddings: no two cells pass the seed's 0.6 join threshold."""
    return clustered_unit_vectors(n, DIM, clusters=20, spread=1.6, queries=50, seed=seed)


def test_split_in_two_separates_two_clusters():
    data = clustered_unit_vectors(200, DIM, clusters=2, spread=0.3, seed=1)
    part = split_in_two(data.vectors)
    assert {(bool(p), int(label)) for p, label in zip(part, data.labels)} in (
        {(False, 0), (True, 1)},
        {(False, 1), (True, 0)},
    )


def test_split_in_two_halves_identical_vectors():
    part = split_in_two(np.ones((10, DIM), dtype=np.float32) / np.sqrt(DIM))
    assert part.sum() == 5


def test_groups_stay_bounded_and_below_capacity_on_diffuse_data():
    data = diffuse(12_000)
    config = MemoryConfig()
    with memory(config) as mem:
        for start in range(0, len(data.vectors), 1_500):  # several writes: splits move stored cells too
            batch = data.vectors[start : start + 1_500]
            mem.add([f"cell {i}" for i in range(len(batch))], vectors=batch)
            mem.check_invariants()
        stats = mem.stats()
    assert stats.group_size_max <= config.group_capacity(12_000)
    assert config.target_groups(12_000) <= stats.groups <= config.group_bound(12_000)
    with memory(MemoryConfig.prototype()) as seed_design:  # the seed's threshold: one group per cell
        seed_design.add([f"cell {i}" for i in range(2_000)], vectors=data.vectors[:2_000])
        assert seed_design.stats().groups > 0.5 * 2_000  # G ≈ N: the seed design's known failure


def test_splits_stop_at_the_group_bound_at_ingest_and_in_sleep():
    config = MemoryConfig(group_size=8, group_size_per_sqrt_n=0, split_factor=1.2)  # a tight bound splits reach
    data = diffuse(4_000)
    with memory(config) as mem:
        for start in range(0, len(data.vectors), 500):
            mem.add([f"cell {i}" for i in range(500)], vectors=data.vectors[start : start + 500])
            stats = mem.stats()
            assert stats.groups <= stats.group_bound == config.group_bound(len(mem))
        assert stats.groups == stats.group_bound == 600  # reached: the bound, not the data, stopped the splits
        assert stats.group_size_max > stats.group_capacity  # oversized groups wait
        report = mem.consolidate()
        assert report.sizes_after is not None and report.sizes_after.groups <= config.group_bound(4_000)
        mem.check_invariants()


def test_a_memory_within_the_budget_is_searched_flat_and_a_larger_one_is_probed():
    data = diffuse(6_000)
    with memory() as mem:
        mem.add([f"cell {i}" for i in range(500)], vectors=data.vectors[:500])
        for query in data.queries[:5]:
            mem.search(query, k=10)
        assert mem.stats().flat_searches == mem.stats().searches == 5
        mem.add([f"cell {i}" for i in range(5_500)], vectors=data.vectors[500:])
        for query in data.queries[:5]:
            mem.search(query, k=10)
        assert mem.stats().flat_searches == 5 and mem.stats().searches == 10


@pytest.mark.parametrize("spread", [0.8, 1.2])
def test_budget_probing_keeps_recall_against_exact_search(spread):
    data = clustered_unit_vectors(20_000, 64, clusters=40, spread=spread, queries=100, seed=4)
    truth = exact_top_k(data.vectors, data.queries, 10)
    with CellularMemory(encoder=MockEncoder(64)) as mem:
        ids = mem.add([f"cell {i}" for i in range(len(data.vectors))], vectors=data.vectors)
        row_of = {cell: row for row, cell in enumerate(ids)}
        found = [{row_of[h.id] for h in mem.search(q, k=10)} for q in data.queries]
        assert mem.stats().flat_searches == 0
    recall = np.mean([len(f & set(t.tolist())) / 10 for f, t in zip(found, truth)])
    assert recall >= 0.95


def test_sleep_moves_cells_to_better_groups_and_reports_sizes_and_agreement():
    data = clustered_unit_vectors(3_000, DIM, clusters=6, spread=0.5, seed=2)
    labels = {}
    config = MemoryConfig()
    with memory(config) as mem:
        for start in range(0, 3_000, 300):  # small writes: early founders serve later cells badly
            ids = mem.add([f"cell {i}" for i in range(300)], vectors=data.vectors[start : start + 300])
            labels |= dict(zip(ids, data.labels[start : start + 300].tolist()))
        report = mem.consolidate(labels=labels)
        mem.check_invariants()
        again = mem.consolidate(labels=labels)
    assert report.sizes_before is not None and report.sizes_after is not None
    assert report.sizes_after.cells == report.sizes_before.cells == 3_000
    assert report.cells_moved > 0 and report.sizes_after.size_max <= config.group_capacity(3_000)
    assert report.ari_after > report.ari_before
    assert again.ari_after >= report.ari_after - 0.01  # a second pass does not undo the first


def _fit(config: MemoryConfig, data) -> tuple[float, float]:
    """After one sleep: the mean cosine of a cell to its group's centroid, and the share of cells
    whose nearest centroid is another group's."""
    with memory(config) as mem:
        ids = mem.add([f"cell {i}" for i in range(len(data.vectors))], vectors=data.vectors)
        mem.consolidate()
        mem.check_invariants()
        return group_fit(mem, ids, data.vectors)


def test_sleep_runs_k_means_steps_until_few_cells_move():
    data = clustered_unit_vectors(6_000, DIM, clusters=20, spread=1.2, seed=5)
    one_step, off_after_one = _fit(MemoryConfig(sleep_rounds=1), data)
    settled, off_after_settling = _fit(MemoryConfig(), data)
    assert settled > one_step
    assert off_after_settling < off_after_one / 2


def test_sleep_merges_fragments_into_their_nearest_group():
    data = clustered_unit_vectors(2_000, DIM, clusters=4, spread=0.5, seed=3)
    with memory() as mem:
        ids = mem.add([f"cell {i}" for i in range(2_000)], vectors=data.vectors)
        mem.delete(ids[:1_900])  # what is left is spread over groups far too small for 100 cells
        before = mem.stats()
        report = mem.consolidate()
        mem.check_invariants()
        after = mem.stats()
    assert before.group_size_min < MemoryConfig().target_group_size(100) / MemoryConfig().fragment_divisor
    assert report.merges and after.groups < before.groups and after.cells == 100


def test_a_memory_where_probing_costs_more_than_a_scan_is_searched_flat():
    data = diffuse(1_500)  # budget max(60 · 10, 32 · √1500) = 1,240 cells
    with memory() as mem:
        mem.add([f"cell {i}" for i in range(1_500)], vectors=data.vectors)
        mem.set_search_options(probe_cost_cells=1_000)  # probing as dear as 1,000 more cells: flat
        mem.search(data.queries[0], k=10)
        assert mem.stats().flat_searches == 1
        # probing free (the default): only a memory within the budget is flat
        mem.set_search_options(probe_cost_cells=0)
        mem.search(data.queries[0], k=10)
        assert mem.stats().flat_searches == 1 and mem.stats().searches == 2
