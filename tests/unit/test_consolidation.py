"""Sleep consolidation: the greedy merge plan by hand, and the engine's bookkeeping after it."""

import numpy as np
import pytest

from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.groups.clustering import GroupState
from reference.sleep.regrouping import final_groups, plan_merges


def state_of(*groups: list[float]) -> GroupState:
    """Groups from 2-D member angles in degrees (one list per group)."""
    state = GroupState.empty(2)
    state.new_slots(len(groups))
    for group, angles in enumerate(groups):
        radians = np.radians(angles)
        vectors = np.stack([np.cos(radians), np.sin(radians)], axis=1)
        state.add_members(np.full(len(angles), group), vectors)
    return state


def test_nothing_merges_below_the_threshold():
    assert plan_merges(state_of([0], [60], [120]), 0.85) == []


def test_the_larger_group_absorbs_the_smaller():
    [merge] = plan_merges(state_of([0], [10, 12], [90]), 0.85)
    assert (merge.kept, merge.absorbed) == (1, 0)
    assert merge.similarity == pytest.approx(np.cos(np.radians(11)), abs=1e-6)


def test_chains_are_merged_against_recomputed_centroids():
    # A(0°) ~ B(18°) ~ C(40°): cos 18° = 0.951 is the best pair (B~C: cos 22° = 0.927), sizes tie: A keeps.
    # After A+B (mean at 9°), C is 31° away: cos 31° = 0.857 < 0.9, so C stays apart …
    merges = plan_merges(state_of([0], [18], [40]), 0.9)
    assert [(m.kept, m.absorbed) for m in merges] == [(0, 1)]
    # … but above 0.85 the recomputed centroid pulls C in: the chain A~B~C becomes one group.
    merges = plan_merges(state_of([0], [18], [40]), 0.85)
    assert [(m.kept, m.absorbed) for m in merges] == [(0, 1), (0, 2)]
    assert merges[1].similarity == pytest.approx(np.cos(np.radians(31)), abs=1e-6)
    assert final_groups(merges) == {1: 0, 2: 0}


def test_final_groups_follow_chains():
    from reference.sleep.regrouping import Merge

    assert final_groups([Merge(1, 2, 0.9), Merge(0, 1, 0.9)]) == {2: 0, 1: 0}


FRAGMENTING = MemoryConfig.prototype(join_threshold=0.99, merge_threshold=0.85)
"""The seed's fixed threshold, set so high that ingest fragments and sleep's merges have work."""


def make_fragmented_memory(path=None) -> tuple[CellularMemory, list[str]]:
    """Near-duplicate cells kept in separate groups at ingest (join threshold 0.99), merged by sleep."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((4, 32))
    vectors = np.repeat(centres, 5, axis=0) + 0.15 * rng.standard_normal((20, 32))
    memory = CellularMemory(path=path, encoder=MockEncoder(32), config=FRAGMENTING)
    ids = memory.add([f"note {i}" for i in range(20)], vectors=vectors)
    return memory, ids


def assert_consistent(memory: CellularMemory) -> None:
    memory.check_invariants()  # among others: no cell points at a deleted group


def test_consolidate_merges_and_reports_with_correct_bookkeeping():
    memory, ids = make_fragmented_memory()
    with memory:
        before = memory.stats().groups
        report = memory.consolidate()
        assert report.groups_before == before and report.groups_after == memory.stats().groups == 4
        assert len(report.merges) == before - 4 and report.cells_moved > 0
        assert all(m.similarity > 0.85 for m in report.merges)
        assert_consistent(memory)
        for cell in ids:  # every stored vector still finds itself through the group stage
            assert memory.search(memory.get(cell).vector, k=1)[0].id == cell
        assert memory.consolidate().merges == []  # a second pass has nothing left to merge


def test_merges_survive_reopen(tmp_path):
    memory, _ = make_fragmented_memory(str(tmp_path))
    memory.consolidate()
    groups = {i: memory.get(i).group_id for i in memory.ids()}
    memory.close()
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(32), config=FRAGMENTING) as reopened:
        assert {i: reopened.get(i).group_id for i in reopened.ids()} == groups
        assert_consistent(reopened)


def test_a_crash_in_the_middle_of_a_merge_leaves_a_consistent_store(tmp_path, monkeypatch):
    memory, ids = make_fragmented_memory(str(tmp_path))
    sidecar = memory._state.store.sidecar
    real_update = sidecar.update

    def crash_after_a_partial_write(records):
        real_update(records[:3])
        raise RuntimeError("power cut")

    monkeypatch.setattr(sidecar, "update", crash_after_a_partial_write)
    with pytest.raises(Exception, match="power cut"):
        memory.consolidate()
    assert_consistent(memory)  # memory is unchanged: the store is written first
    memory._state.abandon()  # the process "dies": nothing more is written
    memory._store.embedded.close()  # and the OS releases its lock
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(32), config=FRAGMENTING) as reopened:
        assert sorted(reopened.ids()) == sorted(ids)
        assert_consistent(reopened)
        reopened.consolidate()
        assert reopened.stats().groups == 4


def test_conflicts_are_recorded_on_both_cells_and_nothing_is_deleted():
    now = [1_000_000.0]
    with CellularMemory(encoder=MockEncoder(), clock=lambda: now[0]) as memory:
        [old] = memory.add("Maria Lopez lives in Lisbon.", kind="fact", timestamps=[now[0] - 100])
        [new] = memory.add("Maria Lopez lives in Porto.", kind="fact")
        memory.add("Maria Lopez likes tea.")
        report = memory.consolidate()
        assert [(c.first, c.second) for c in report.conflicts] == [(old, new)]
        assert len(memory) == 3
        assert memory.get(old).conflicts[0].other == new and memory.get(old).conflicts[0].other_is_newer
        assert memory.get(new).conflicts[0].other == old and not memory.get(new).conflicts[0].other_is_newer
        assert [(c.first, c.second) for c in memory.conflicts()] == [(old, new)]
        hits = memory.search("Where does Maria Lopez live?", k=2, mode="memory")
        assert hits[0].id == new  # the newer fact outranks the older one
        assert memory.consolidate().conflicts == []  # recorded once


def test_judge_failures_are_reported_not_raised():
    from reference.judges import JudgeError

    class Broken:
        name = "broken"

        def judge(self, statements):
            raise JudgeError("model returned nonsense twice")

    with CellularMemory(encoder=MockEncoder()) as memory:
        same = MockEncoder().encode(["Ana"]).repeat(2, axis=0)  # one group, so the judge is asked
        memory.add(["Ana is a nurse.", "Ana is a pilot."], vectors=same)
        report = memory.consolidate(judge=Broken())
        assert report.conflicts == [] and len(report.judge_errors) == 1
        assert "nonsense" in report.judge_errors[0]
        assert len(memory) == 2
