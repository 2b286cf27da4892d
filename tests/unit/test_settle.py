"""Settling: a write that grows the memory fourfold ends with k-means steps over every cell of its scopes."""

import numpy as np
import pytest

from harness.generators.vectors import clustered_unit_vectors
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.ingest import settle_due
from tests.grouping import group_fit

DIM = 32


def memory(settle: bool = True, path=None) -> CellularMemory:
    return CellularMemory(path=path, encoder=MockEncoder(DIM), config=MemoryConfig(lexical=False, settle=settle))


def test_a_settled_write_leaves_tighter_groups_than_online_grouping_alone():
    data = clustered_unit_vectors(6_000, DIM, clusters=30, spread=1.0, queries=0, seed=3)
    ids = [f"c{i}" for i in range(len(data.vectors))]
    found = {}
    for settle in (False, True):
        with memory(settle) as mem:
            mem.add([f"cell {i}" for i in range(len(ids))], vectors=data.vectors, ids=ids)
            mem.check_invariants()
            found[settle], _ = group_fit(mem, ids, data.vectors)
    assert found[True] > found[False] + 0.005


def test_a_write_settles_with_steps_until_few_cells_move():
    data = clustered_unit_vectors(6_000, DIM, clusters=30, spread=1.2, queries=0, seed=6)
    ids = [f"c{i}" for i in range(len(data.vectors))]
    found = {}
    for rounds in (1, MemoryConfig().sleep_rounds):
        config = MemoryConfig(lexical=False, sleep_rounds=rounds)
        with CellularMemory(encoder=MockEncoder(DIM), config=config) as mem:
            mem.add([f"cell {i}" for i in range(len(ids))], vectors=data.vectors, ids=ids)
            mem.check_invariants()
            _, found[rounds] = group_fit(mem, ids, data.vectors)
    one_step, settled = found.values()
    assert settled < one_step / 2


def test_settling_moves_stored_cells_and_the_store_keeps_where_they_went(tmp_path):
    data = clustered_unit_vectors(12_000, DIM, clusters=40, spread=1.0, queries=0, seed=4)
    ids = [f"c{i}" for i in range(len(data.vectors))]
    texts = [f"cell {i}" for i in range(len(ids))]
    with memory(path=str(tmp_path)) as mem:
        mem.add(texts[:3_000], vectors=data.vectors[:3_000], ids=ids[:3_000])
        before = [record.group_id for record in mem.get_many(ids[:3_000])]
        mem.add(texts[3_000:], vectors=data.vectors[3_000:], ids=ids[3_000:])  # 4x: settles the stored cells too
        after = [record.group_id for record in mem.get_many(ids)]
        mem.check_invariants()
    assert sum(b != a for b, a in zip(before, after[:3_000])) > 0
    with memory(path=str(tmp_path)) as reopened:
        assert [record.group_id for record in reopened.get_many(ids)] == after
        reopened.check_invariants()


def test_a_settled_group_holds_one_scope():
    data = clustered_unit_vectors(6_000, DIM, clusters=20, spread=1.0, queries=0, seed=5)
    scopes = ["alice" if i % 2 else "bob" for i in range(len(data.vectors))]
    ids = [f"c{i}" for i in range(len(data.vectors))]
    with memory() as mem:
        mem.add([f"cell {i}" for i in range(len(ids))], vectors=data.vectors, ids=ids, scope=scopes)
        mem.check_invariants()
        scope_of_group: dict[int, set[str]] = {}
        for record in mem.get_many(ids):
            scope_of_group.setdefault(record.group_id, set()).add(record.scope)
    assert all(len(found) == 1 for found in scope_of_group.values())


@pytest.mark.parametrize(
    ("config", "cells", "settled", "due"),
    [
        (MemoryConfig(), 8_000, 2_000, True),
        (MemoryConfig(), 7_999, 2_000, False),  # not yet grown fourfold
        (MemoryConfig(), 500, 0, False),  # searched flat: its groups decide nothing
        (MemoryConfig(settle=False), 8_000, 2_000, False),
        (MemoryConfig.prototype(), 8_000, 2_000, False),  # threshold grouping does not settle
    ],
)
def test_when_a_write_settles(config, cells, settled, due):
    assert settle_due(config, cells, settled) is due


def test_a_step_among_neighbouring_groups_finds_what_scoring_every_centroid_finds(monkeypatch):
    """Past `EXACT_STEP_UP_TO` groups a k-means step looks among the groups nearest a cell's own; on separated
    clusters that is where its nearest is, and a cell whose group is empty now is scored against every one."""
    from reference import clustering
    from reference.clustering import GroupState, nearest_groups

    data = clustered_unit_vectors(4_000, DIM, clusters=40, spread=0.5, queries=0, seed=6)
    state = GroupState.empty(DIM)
    state.new_slots(41)
    truth = np.asarray(data.labels)
    state.add_members(truth, data.vectors)  # group 40 stays empty
    centroids = state.active_centroids()
    similarity = centroids @ centroids.T
    np.fill_diagonal(similarity, -np.inf)
    neighbour = similarity.argmax(axis=1)  # each group's nearest other group
    current = np.where(np.arange(len(truth)) % 7 == 0, neighbour[truth], truth)  # some cells in the group next door
    current[:5] = 40  # and a few in the empty group
    exact = nearest_groups(data.vectors, current, state)
    monkeypatch.setattr(clustering, "EXACT_STEP_UP_TO", 8)
    monkeypatch.setattr(clustering, "NEAREST_AMONG", 6)
    among = nearest_groups(data.vectors, current, state)
    assert np.mean(among == exact) > 0.99 and (among[:5] == exact[:5]).all()
