"""Leader clustering: hand-computed cases on 2-D unit vectors."""

import numpy as np
import pytest

from reference.groups.clustering import GroupState, LeaderClustering
from reference.kernels.quantize import quantized


def unit(*angles_degrees: float) -> np.ndarray:
    radians = np.radians(angles_degrees)
    return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


class Threshold(LeaderClustering):
    """The seed rule alone (a constant cap on founding, no splits); `assign` as (groups, state)."""

    def __init__(self, threshold: float, max_groups: int, chunk: int) -> None:
        super().__init__(join_threshold=threshold, chunk=chunk, target=lambda cells: max_groups)

    def assign(self, state, vectors, scopes=None):
        planned = super().assign(state, vectors, scopes=scopes)
        return planned.groups, planned.state


def clustering(threshold: float = 0.6, max_groups: int = 100, chunk: int = 64) -> Threshold:
    return Threshold(threshold, max_groups, chunk)


def test_close_vectors_share_a_group_and_far_ones_found_new_groups():
    # cos(0°,30°)=0.87 > 0.6 joins; cos(0°,90°)=0 founds; cos(90°,100°)=0.98 joins the second
    groups, state = clustering().assign(GroupState.empty(2), unit(0, 30, 90, 100))
    assert groups.tolist() == [0, 0, 1, 1]
    assert state.counts.tolist() == [2, 2]


def test_threshold_is_strict():
    # cos(0°, 60°) = 0.5 exactly: with threshold 0.5 it must NOT join
    groups, _ = clustering(threshold=0.5).assign(GroupState.empty(2), unit(0, 60))
    assert groups.tolist() == [0, 1]


def test_centroid_is_the_normalised_true_mean():
    _, state = clustering().assign(GroupState.empty(2), unit(0, 40))
    mean = unit(0, 40).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(state.sums[0], mean, rtol=1e-6)
    np.testing.assert_allclose(state.active_centroids()[0], unit(20)[0], atol=1e-6)


def test_later_item_in_a_batch_joins_a_group_founded_earlier_in_the_batch():
    state = clustering().assign(GroupState.empty(2), unit(0))[1]
    groups, state = clustering().assign(state, unit(180, 170, 5))
    assert groups.tolist() == [1, 1, 0]


def test_assign_is_pure_until_the_caller_commits():
    before = clustering().assign(GroupState.empty(2), unit(0))[1]
    counts, sums = before.counts.copy(), before.sums.copy()
    clustering().assign(before, unit(10, 120))
    assert before.counts.tolist() == counts.tolist()
    np.testing.assert_array_equal(before.sums, sums)


def test_chunks_see_the_groups_of_earlier_chunks():
    groups, _ = clustering(chunk=1).assign(GroupState.empty(2), unit(0, 10, 20, 90))
    assert groups.tolist() == [0, 0, 0, 1]


def test_group_count_never_exceeds_max_groups_and_extra_cells_join_the_nearest():
    groups, state = clustering(max_groups=2).assign(GroupState.empty(2), unit(0, 90, 180, 265))
    assert state.n_active() == 2
    # 180°: cos 0 to 90° beats cos -1 to 0°; 265°: cos(265°) = -0.09 to 0° beats cos(175°) = -0.996 to 90°
    assert groups.tolist() == [0, 1, 1, 0]


def test_bound_holds_across_calls():
    state = clustering(max_groups=3).assign(GroupState.empty(2), unit(0, 120))[1]
    groups, state = clustering(max_groups=3).assign(state, unit(250, 60, 190))
    assert state.n_active() == 3
    # 250° founds group 2 (the last room); 60° is 0.5 from both 0° and 120° (the first wins);
    # 190° is 0.5 from the new 250° group and 0.34 from 120°: the new group is nearer
    assert groups.tolist() == [2, 0, 2]


def test_removing_members_updates_the_mean_and_empties_groups_exactly():
    groups, state = clustering().assign(GroupState.empty(2), unit(0, 40, 90))
    vectors = unit(0, 40, 90)
    state.remove_members(groups[:1], vectors[:1])
    np.testing.assert_allclose(state.active_centroids()[0], unit(40)[0], atol=1e-6)
    state.remove_members(groups[1:2], vectors[1:2])
    assert state.counts[0] == 0 and not state.sums[0].any()
    assert state.active_ids().tolist() == [1]


def codes_agree(state: GroupState, *scopes: int) -> None:
    """The cached centroid codes (of each scope; none given: of every scope) are those of the centroids now."""
    for scope in scopes or (None,):
        codes, scales = state.active_centroid_codes(scope)
        expected_codes, expected_scales = quantized(state.active_centroids(scope))
        np.testing.assert_array_equal(codes, expected_codes)
        np.testing.assert_array_equal(scales, expected_scales)


def test_centroid_codes_follow_every_change_of_the_centroids():
    """The probe's int8 centroid codes are cached beside the centroids: a change of members (stale rows), a
    founded or emptied group (a cleared cache) must each leave them the codes of the centroids now."""
    groups, state = clustering().assign(GroupState.empty(2), unit(0, 40, 90, 100))
    codes_agree(state)
    state.add_members(groups[:1], unit(60))  # group 0 moves: its rows are stale
    codes_agree(state)
    state.remove_members(groups[2:4], unit(90, 100))  # group 1 empties: everything is recomputed
    codes_agree(state)
    assert len(state.active_centroid_codes()[0]) == 1


def test_a_scopes_centroid_codes_follow_every_change_of_its_centroids():
    """A search in one of several scopes probes that scope's rows of the codes, cut out once and kept: a change
    of members and a founded group must each leave them the codes of the scope's centroids now."""
    scopes = np.array([0, 0, 1, 1, 0, 1], dtype=np.int32)
    groups, state = clustering().assign(GroupState.empty(2), unit(0, 40, 90, 100, 180, 220), scopes=scopes)
    codes_agree(state, 0, 1)
    state.add_members(groups[2:3], unit(60))  # a group of scope 1 moves: its rows are stale
    codes_agree(state, 0, 1)
    state.new_slots(1, scope=1)
    state.add_members(np.asarray([state.n_slots - 1]), unit(300))  # a group founded in scope 1
    codes_agree(state, 0, 1)
    assert len(state.active_centroid_codes(1)[0]) == state.n_active(1) == 3


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_clustered_data_recovers_the_true_clusters(chunk):
    from harness.data.generators.vectors import clustered_unit_vectors

    data = clustered_unit_vectors(600, dim=64, clusters=6, spread=0.5, seed=3)
    vectors, labels = data.vectors, data.labels
    groups, state = clustering(chunk=chunk).assign(GroupState.empty(64), vectors)
    assert state.n_active() == 6
    pairs = {(int(g), int(label)) for g, label in zip(groups, labels)}
    assert len(pairs) == 6  # a one-to-one map between groups and true clusters


def test_a_part_taken_back_remakes_only_the_centroids_of_the_groups_it_changed(monkeypatch):
    """A write plans on a part holding every group of its scopes; taking it back must not mark the groups it left
    as they were, or the next search remakes every centroid of the memory after a one-cell write."""
    import reference.groups.clustering as clustering

    rng = np.random.default_rng(5)
    state = GroupState.empty(8)
    state.new_slots(6)
    state.add_members(np.repeat(np.arange(6), 4), rng.normal(size=(24, 8)))
    before = state.active_centroids().copy()
    part = state.part([0])
    part.state.add_members(np.asarray([2]), rng.normal(size=(1, 8)))
    remade: list[int] = []
    centroids = clustering.centroids_from_sums
    monkeypatch.setattr(
        clustering, "centroids_from_sums", lambda sums, ids: remade.append(len(ids)) or centroids(sums, ids)
    )
    state.absorb(part)
    after = state.active_centroids()
    assert remade == [1]
    assert np.allclose(np.delete(after, 2, axis=0), np.delete(before, 2, axis=0))
    assert not np.allclose(after[2], before[2])
    assert np.allclose(after, centroids(state.sums, state.active_ids()))


def test_a_part_starts_from_its_scopes_cached_centroids(monkeypatch):
    """A write plans on a part of its scope's groups: the part takes the scope's cached centroids, brought up to date
    (only the groups changed since are remade), instead of remaking every centroid of the scope on each write."""
    import reference.groups.clustering as clustering

    rng = np.random.default_rng(7)
    state = GroupState.empty(8)
    state.new_slots(6)
    state.add_members(np.repeat(np.arange(6), 4), rng.normal(size=(24, 8)))
    state.active_centroids(0)  # cached, as a search leaves them
    state.add_members(np.asarray([2]), rng.normal(size=(1, 8)))  # the last write changed group 2
    remade: list[int] = []
    centroids = clustering.centroids_from_sums
    monkeypatch.setattr(
        clustering, "centroids_from_sums", lambda sums, ids: remade.append(len(ids)) or centroids(sums, ids)
    )
    part = state.part([0])
    made = part.state.active_centroids()
    assert remade == [1]
    assert np.allclose(made, centroids(part.state.sums, np.arange(6)))
