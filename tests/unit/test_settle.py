"""Settling: a write of at least a quarter of the cells it leaves ends with k-means steps over every cell of its scopes;
any other write refines a window of the stored cells with one step, so a memory written a little at a time
stays settled without a write that costs as much as the whole memory."""

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.write import ingest
from reference.write.ingest import refining, settle_due
from tests.grouping import group_fit

DIM = 32


def memory(settle: bool = True, path=None) -> CellularMemory:
    return CellularMemory(path=path, encoder=MockEncoder(DIM), config=MemoryConfig(lexical=False, settle=settle))


@pytest.mark.parametrize("per_write", [6_000, 100])  # one write that settles; writes that refine a window each
def test_settled_writes_leave_tighter_groups_than_online_grouping_alone(per_write):
    data = clustered_unit_vectors(6_000, DIM, clusters=30, spread=1.0, queries=0, seed=3)
    ids = [f"c{i}" for i in range(len(data.vectors))]
    texts = [f"cell {i}" for i in range(len(ids))]
    found = {}
    for settle in (False, True):
        with memory(settle) as mem:
            for start in range(0, len(ids), per_write):
                part = slice(start, start + per_write)
                mem.add(texts[part], vectors=data.vectors[part], ids=ids[part])
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


@pytest.mark.parametrize("per_write", [9_000, 300])  # one write that settles; writes that refine a window each
def test_stored_cells_moved_by_writes_keep_where_they_went_in_the_store(tmp_path, per_write):
    data = clustered_unit_vectors(12_000, DIM, clusters=40, spread=1.0, queries=0, seed=4)
    ids = [f"c{i}" for i in range(len(data.vectors))]
    texts = [f"cell {i}" for i in range(len(ids))]
    with memory(path=str(tmp_path)) as mem:
        mem.add(texts[:3_000], vectors=data.vectors[:3_000], ids=ids[:3_000])
        before = [record.group_id for record in mem.get_many(ids[:3_000])]
        for start in range(3_000, 12_000, per_write):
            part = slice(start, start + per_write)
            mem.add(texts[part], vectors=data.vectors[part], ids=ids[part])
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
    ("config", "cells", "written", "due"),
    [
        (MemoryConfig(), 8_000, 2_000, True),
        (MemoryConfig(), 8_001, 2_000, False),  # the write is less than a quarter of the cells it leaves
        (MemoryConfig(), 8_000, 1, False),  # one cell: never a write as costly as the whole memory
        (MemoryConfig(), 500, 500, False),  # searched flat: its groups decide nothing
        (MemoryConfig(settle=False), 8_000, 8_000, False),
        (MemoryConfig.prototype(), 8_000, 8_000, False),  # threshold grouping does not settle
    ],
)
def test_when_a_write_settles(config, cells, written, due):
    assert settle_due(config, cells, written) is due


def test_the_refining_window_goes_round_its_scopes_live_rows():
    data = clustered_unit_vectors(3_500, DIM, clusters=10, spread=1.0, queries=0, seed=7)
    with memory() as mem:
        ids = mem.add([f"cell {i}" for i in range(3_000)], vectors=data.vectors[:3_000])
        mem.add([f"other {i}" for i in range(500)], vectors=data.vectors[3_000:], scope="other")
        mem.delete(ids[2_995:2_997])
        state = mem._state
        live = [row for row in range(3_000) if row not in (2_995, 2_996)]
        state.commit_refine_start(0, 2_990)
        rows = refining(state, mem.config, 0, 3)
        span = ingest.REFINED_PER_CELL * 3
        assert rows.tolist() == sorted(live[(2_990 + i) % len(live)] for i in range(span))
        assert state.refine_start(0) == (2_990 + span) % len(live)
        assert len(refining(state, MemoryConfig(lexical=False, settle=False), 0, 3)) == 0


def test_a_step_among_neighbouring_groups_finds_what_scoring_every_centroid_finds(monkeypatch):
    """Past `EXACT_STEP_UP_TO` groups a k-means step looks among the groups nearest a cell's own; on separated
    clusters that is where its nearest is, and a cell whose group is empty now is scored against every one."""
    from reference.groups import clustering
    from reference.groups.clustering import GroupState, nearest_groups

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
