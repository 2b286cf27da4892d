"""Episodes: named or inferred, linked in write order, persisted, and context for text searches."""

import numpy as np
import pytest

from reference import CellularMemory, InvalidInputError, MemoryConfig
from reference.cells.episodes import EpisodeIndex, inferred_names
from reference.encoders import MockEncoder
from reference.kernels.context import with_context

SESSION_A = ["we planned the trip to Lisbon", "flights are booked for May", "the hotel is near the river"]
SESSION_B = ["the quarterly report is late", "finance wants the numbers by Friday", "the audit starts next week"]


class Blind(MockEncoder):
    """Every text gets the same vector: only words and context can rank."""

    def encode(self, texts):
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


def test_named_episodes_are_kept_and_shown_by_get():
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        ids = memory.add(SESSION_A, episode="trip") + memory.add(SESSION_B, episode=["work"] * 3)
        assert [memory.get(i).episode for i in ids] == ["trip"] * 3 + ["work"] * 3
        assert memory.stats().episodes == 2
        memory.check_invariants()


def test_episodes_are_inferred_from_the_time_between_writes():
    now = [1_000_000.0]
    config = MemoryConfig(episode_gap_s=60)
    with CellularMemory(encoder=MockEncoder(32), clock=lambda: now[0], config=config) as memory:
        first = memory.add(SESSION_A[:2])
        now[0] += 30  # within the gap: the same episode
        second = memory.add(SESSION_A[2])
        now[0] += 3600  # a new session
        third = memory.add(SESSION_B)
        episodes = [memory.get(i).episode for i in first + second + third]
        assert episodes[:3] == [f"@{first[0]}"] * 3 and episodes[3:] == [f"@{third[0]}"] * 3


def test_inference_continues_only_inferred_episodes_and_never_goes_back_in_time():
    assert inferred_names(["a", "b"], [10.0, 20.0], ("session", 5.0), gap=60) == ["@a", "@a"]
    assert inferred_names(["a", "b"], [10.0, 200.0], ("@z", 5.0), gap=60) == ["@z", "@b"]
    assert inferred_names(["a"], [1.0], ("@z", 5.0), gap=60) == ["@a"]  # earlier than the last write
    assert inferred_names(["a", "b"], [65.0, 125.0], ("@z", 5.0), gap=60) == ["@z", "@z"]  # the gap itself continues


@pytest.mark.parametrize("store", ["in_memory", pytest.param("embedded", marks=pytest.mark.embedded)])
def test_deletes_relink_the_neighbours_and_reopen_restores_episodes(tmp_path, store):
    path = str(tmp_path) if store == "embedded" else None
    memory = CellularMemory(path=path, encoder=MockEncoder(32))
    ids = memory.add(SESSION_A, episode="trip")
    memory.add(SESSION_B, episode="work")
    memory.delete(ids[1])
    memory.check_invariants()
    if path:  # reopened: the episodes come back from the store
        memory.close()
        memory = CellularMemory(path=path, encoder=MockEncoder(32))
    with memory:
        assert memory.get(ids[2]).episode == "trip" and memory.stats().episodes == 2
        memory.add("one more about the trip", episode="trip")
        memory.check_invariants()


def test_the_index_links_cells_in_write_order_within_each_episode():
    index = EpisodeIndex()
    index.add(np.arange(5), ["x", "y", "x", "x", "y"], np.zeros(5, dtype=np.int32))
    assert index.before[[0, 2, 3]].tolist() == [-1, 0, 2] and index.after[[0, 2, 3]].tolist() == [2, 3, -1]
    index.remove(np.asarray([2]))
    assert index.after[0] == 3 and index.before[3] == 0 and index.problems() == []
    index.remove(np.asarray([1, 4]))
    assert len(index) == 1 and index.rows() == {0, 3}


def test_links_follow_the_order_of_writing_not_row_numbers_and_row_0_links_like_any_row():
    index = EpisodeIndex()
    index.add(np.asarray([5]), ["x"], np.zeros(1, dtype=np.int32))
    index.add(np.asarray([0, 2]), ["x", "x"], np.zeros(2, dtype=np.int32))  # written after row 5
    assert index.before[[5, 0, 2]].tolist() == [-1, 5, 0] and index.problems() == []
    index.remove(np.asarray([5]))  # the first cell: row 0 now starts the episode
    assert index.before[0] == -1 and index.after[0] == 2 and index.problems() == []
    index.remove(np.asarray([2]))  # the last cell: row 0 now ends it too
    index.add(np.asarray([7]), ["x"], np.zeros(1, dtype=np.int32))
    assert index.before[7] == 0 and index.after[0] == 7 and index.problems() == [] and len(index) == 1
    assert [values.tolist() for values in index.neighbours(np.asarray([5, 2]))] == [[-1, -1], [-1, -1]]
    index.add(np.zeros(0, dtype=np.int64), [], np.zeros(0, dtype=np.int32))  # an empty write changes nothing
    assert index.rows() == {0, 7}


def test_problems_name_each_kind_of_broken_link():
    def linked(*names):
        index = EpisodeIndex()
        index.add(np.arange(len(names)), list(names), np.zeros(len(names), dtype=np.int32))
        return index

    index = linked("x", "x", "x")
    index.before[2] = -1  # row 1 still points on to row 2, which no longer points back
    assert index.problems() == ["an episode's links disagree"]
    index = linked("x", "x", "y", "y")
    index.after[1], index.before[3] = 3, 1  # a link from x into y
    assert "an episode link crosses episodes" in index.problems()
    index = linked("x", "x", "x")
    index._last_row[0] = 1  # the links end at row 2
    assert index.problems() == ["an episode's last cell is not where its links end"]


def test_context_adds_the_episodes_best_and_the_better_neighbour_then_rescales():
    rows, scores = np.asarray([1, 2, 5, 8]), np.asarray([0.9, 0.2, 0.4, -0.1])
    episodes, before, after = np.asarray([0, 0, 1, 2]), np.asarray([-1, 1, -1, 7]), np.asarray([2, 3, 6, -1])
    scored = with_context(rows, scores, episodes, before, after, 0.5, 0.25)
    expected = [0.9 + 0.5 * 0.9 + 0.25 * 0.2, 0.2 + 0.5 * 0.9 + 0.25 * 0.9, 0.4 + 0.5 * 0.4, -0.1 + 0.0]
    assert scored.tolist() == pytest.approx([value / 1.75 for value in expected])  # an episode's best is at least 0
    lifted = with_context(rows, np.asarray([0.5, 0.45, 0.1, 0.1]), episodes, before, after, 4.0, 0.0)
    assert np.argmax(lifted) == 0  # context never lifts another above the best match
    alone = with_context(rows, scores, episodes, np.full(4, -1), np.full(4, -1), 0.5, 0.25)
    assert alone.tolist() == pytest.approx([1.35 / 1.5, 0.65 / 1.5, 0.6 / 1.5, -0.1 / 1.5])  # no neighbour: no share


def test_neighbours_are_given_only_within_named_episodes():
    """An inferred episode's order of writing says nothing about its cells: no neighbours there."""
    index = EpisodeIndex()
    index.add(np.arange(5), ["x", "x", "@a", "@a", "x"], np.zeros(5, dtype=np.int32))
    before, after = index.neighbours(np.arange(5))
    assert before.tolist() == [-1, 0, -1, -1, 1] and after.tolist() == [1, 4, -1, -1, -1]
    assert index.before[3] == 2 and index.after[2] == 3  # linked all the same, for deletes and reopening


def test_a_turn_is_found_through_its_episode_and_its_neighbours():
    """A question about the trip whose words only the first turn shares: the episode context lifts the
    trip's other turns above the work session's."""
    with CellularMemory(encoder=Blind(16)) as memory:
        memory.add(SESSION_B, episode="work")  # first: blind dense ranks ties by the order of writing
        trip = memory.add(SESSION_A, episode="trip")
        found = [h.id for h in memory.search("when is the trip to Lisbon", k=3)]
        assert found[0] == trip[0] and set(found) == set(trip)
        memory.set_search_options(episode_weight=0, neighbour_weight=0)  # the ablation: fusion alone
        alone = [h.id for h in memory.search("when is the trip to Lisbon", k=3)]
        assert alone[0] == trip[0] and set(alone) != set(trip)


def test_vector_queries_are_untouched_by_episodes():
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        memory.add(SESSION_A, episode="trip")
        vector = MockEncoder(32).encode([SESSION_A[1]])[0]
        [hit] = memory.search(vector, k=1)
        assert hit.text == SESSION_A[1] and hit.score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("episode", ["", "   ", "@mine", 5, ["a", "b"], "x" * 201])
def test_bad_episodes_are_typed_errors_and_add_nothing(episode):
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        with pytest.raises(InvalidInputError):
            memory.add(SESSION_A, episode=episode)
        assert len(memory) == 0
