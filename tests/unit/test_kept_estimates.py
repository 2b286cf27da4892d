"""Recall estimates kept from a close to the next open: a memory reopened unchanged probes by the estimates it closed
with, counting the turnover on from where it closed; one changed since its close, or opened with other settings,
estimates again."""

from dataclasses import replace

import pytest

from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.state import calibration
from tests.unit.test_calibration import DIM, mixture

VECTORS = mixture(5000, 1.0, seed=5)
QUERIES = mixture(20, 1.0, seed=6)


def opened(path, **config) -> CellularMemory:
    return CellularMemory(path=str(path), encoder=MockEncoder(DIM), config=MemoryConfig(lexical=False, **config))


def write(memory: CellularMemory, start: int, end: int) -> None:
    """Cells `start` .. `end` − 1 of `VECTORS`, 1,000 a write."""
    for first in range(start, end, 1000):
        names = [f"cell {i}" for i in range(first, min(end, first + 1000))]
        memory.add(names, vectors=VECTORS[first : first + len(names)], ids=names)


def answers(memory: CellularMemory) -> list[list[str]]:
    return [[hit.id for hit in memory.search(query, k=10)] for query in QUERIES]


def died(memory: CellularMemory) -> None:
    """What a process that dies leaves: nothing more written, its lock released."""
    memory._state.abandon()
    memory._store.embedded.close()


@pytest.fixture
def estimated_at(monkeypatch) -> list[int]:
    """The cells each recall estimate was made over, in order."""
    made: list[int] = []
    real = calibration.calibrated

    def counted(state, config, scope=None):
        made.append(len(state.table))
        return real(state, config, scope)

    monkeypatch.setattr(calibration, "calibrated", counted)
    return made


def test_an_unchanged_memory_reopens_with_the_estimates_it_closed_with_and_searches_alike(tmp_path, estimated_at):
    with opened(tmp_path) as memory:
        write(memory, 0, 5000)
        assert estimated_at[-1] == 5000
        closed_with, before = memory._state.probe, answers(memory)
    estimated_at.clear()
    with opened(tmp_path) as reopened:
        assert estimated_at == [] and reopened._state.probe == closed_with
        assert closed_with.estimated_recall is not None
        assert calibration.calibrated(reopened._state, reopened.config, closed_with.scope) == closed_with  # made afresh
        assert answers(reopened) == before


def test_the_turnover_since_an_estimate_counts_on_across_a_close(tmp_path, estimated_at):
    with opened(tmp_path) as memory:
        write(memory, 0, 4000)
        write(memory, 4000, 4600)  # 600 written since the estimate over 4,000: short of a quarter
        assert estimated_at[-1] == 4000
    estimated_at.clear()
    with opened(tmp_path) as reopened:
        assert estimated_at == []
        write(reopened, 4600, 5000)  # 1,000 since: due
        assert estimated_at == [5000]


def regrouped(memory: CellularMemory) -> None:
    state = memory._state
    record = state.record(0)
    state.store.update([replace(record, group_id=int(state.table.group[state.table.live_rows()[-1]]))])
    assert record.group_id != state.table.group[state.table.live_rows()[-1]]


CHANGES = {
    "written": lambda memory: memory.add(["one more"], vectors=VECTORS[:1]),
    "deleted": lambda memory: memory.delete(memory.ids()[-1]),
    "regrouped": regrouped,
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_memory_changed_by_a_process_that_died_before_closing_estimates_again(tmp_path, estimated_at, change):
    with opened(tmp_path) as memory:
        write(memory, 0, 5000)
    memory = opened(tmp_path)
    CHANGES[change](memory)
    died(memory)
    estimated_at.clear()
    with opened(tmp_path) as reopened:
        assert estimated_at == [len(reopened)]


def test_a_memory_opened_with_another_target_estimates_again(tmp_path, estimated_at):
    with opened(tmp_path) as memory:
        write(memory, 0, 5000)
    estimated_at.clear()
    with opened(tmp_path, target_recall=0.9) as reopened:
        assert estimated_at == [5000] and reopened.stats().target_recall == 0.9


def test_the_store_keeps_no_estimate_past_a_cell_written_after_it(tmp_path):
    """The store's own mark: a cell written again in place of the last one leaves the same ids in the same order
    (and may leave its group), so the engine's digest alone could miss it."""
    with opened(tmp_path) as memory:
        write(memory, 0, 2000)
    with opened(tmp_path) as reopened:
        store = reopened._store.embedded.store
        assert store.kept_estimates() is not None
        reopened.update(reopened.ids()[-1], vector=VECTORS[0])
        assert store.kept_estimates() is None


def test_each_scope_gets_back_its_own_estimates_under_the_codes_it_reopens_with(tmp_path, estimated_at):
    """Scope "a" written, deleted and written again after "b": it reopens with another code than it closed with."""
    vectors = mixture(7000, 1.0, seed=8)

    def add(memory: CellularMemory, scope: str, first: int, count: int, name: str) -> None:
        for start in range(first, first + count, 1000):
            names = [f"{name} {i}" for i in range(start, start + 1000)]
            memory.add(names, vectors=vectors[start : start + 1000], ids=names, scope=scope)

    def by_name(memory: CellularMemory) -> dict:
        state = memory._state
        return {None if s is None else state.table.scope_names[s]: p.cells for s, p in state.estimates().items()}

    with opened(tmp_path) as memory:
        add(memory, "a", 0, 3000, "first")
        add(memory, "b", 3000, 4000, "b")
        memory.delete(scope="a")
        add(memory, "a", 0, 3000, "again")
        memory.search(vectors[0], k=10)  # a search of every scope estimates its own
        closed_with, code = by_name(memory), memory._state.table.known_scope("a")
        assert closed_with == {"a": 3000, "b": 4000, None: 7000}
    estimated_at.clear()
    with opened(tmp_path) as reopened:
        assert estimated_at == [] and by_name(reopened) == closed_with
        assert reopened._state.table.known_scope("a") != code
