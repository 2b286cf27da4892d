"""The streaming section: runbooks as data, every system through them, faults caught."""

from dataclasses import replace

import numpy as np
import pytest

from harness.data.evalset import EvalSet
from harness.measure.replay import run_streams
from harness.measure.runbooks import Checkpoint, Forget, Search, Sleep, Write, agent_loop, agent_stream
from harness.output.results import RunResults, StreamRow, Verdict
from harness.protocol import Document, Query
from harness.verdicts.claims import evaluate
from tests.faults import FIRST_WRITE_S
from tests.results_factory import run_info


def stream_data(cells: int, queries: int, *, seed: int = 0, dim: int = 16) -> EvalSet:
    """Random unit vectors (no ties) with a word of their own each, as a stream and held-out queries."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(cells + queries, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    docs = [Document(f"c{i}", f"cell number w{i} about topic t{i % 7}", vectors[i]) for i in range(cells)]
    asked = [Query(f"q{j}", f"what about topic t{j % 7}", vectors[cells + j]) for j in range(queries)]
    return EvalSet("random-stream", docs, asked, {})


def test_the_agent_stream_writes_every_cell_once_in_order_and_deletes_only_live_cells():
    book = agent_stream(900, 30, seed=3)
    writes = [s.cells for s in book.steps if isinstance(s, Write)]
    assert [c for r in writes for c in r] == list(range(900))
    assert all(1 <= len(r) <= 50 for r in writes)
    live: set[int] = set()
    for step in book.steps:
        if isinstance(step, Write):
            live.update(step.cells)
        elif isinstance(step, Forget):
            assert set(step.cells) <= live
            live -= set(step.cells)
    assert [s.label for s in book.steps if isinstance(s, Checkpoint)] == ["25%", "50%", "75%", "100%"]
    assert sum(isinstance(s, Sleep) for s in book.steps) == 2
    assert {why for s in book.steps if isinstance(s, Forget) for why in [s.why]} == {"window", "random"}
    assert agent_stream(900, 30, seed=3) == book  # data: the same arguments give the same runbook


def test_an_exact_system_scores_one_at_every_checkpoint_and_returns_nothing_deleted():
    data = stream_data(600, 20)
    [row] = run_streams(agent_stream(600, 20), data, ["flat-numpy"], "test")
    assert [c.recall_at_10 for c in row.checkpoints] == [1.0] * 4
    assert row.deleted_returned == 0 and not row.skipped
    assert {o.kind for o in row.operations} >= {"write", "delete", "search_after_write", "search", "checkpoint"}
    assert row.operation("write").cells == 600


def verdict_as(row: StreamRow, system: str, claim: str) -> Verdict:
    """The verdict a target gives `row` when it is labelled as the system the target judges."""
    results = RunResults(run=run_info(), streaming=[replace(row, system=system)])
    return next(v for v in evaluate(results)[1] if v.claim == claim)


def test_a_system_that_returns_deleted_cells_fails_its_row_and_the_recall_target():
    data = stream_data(600, 20)
    [row] = run_streams(agent_stream(600, 20), data, ["tests.faults:KeepsDeletedCells"], "test")
    assert row.deleted_returned > 0
    verdict = verdict_as(row, "reference-dense", "streaming-recall")
    assert verdict.verdict == "NOT SUPPORTED" and "deleted cells" in verdict.measured
    [good] = run_streams(agent_stream(600, 20), data, ["flat-numpy"], "test")
    assert verdict_as(good, "reference-dense", "streaming-recall").verdict == "SUPPORTED"


def test_a_system_that_slows_after_writes_fails_the_agent_loop_target():
    rounds = 120  # enough that an exact scan's ratio of 1 is told from the bar on a loaded machine
    data = stream_data(2_000 + rounds, 2 * rounds)
    book = agent_loop(2_000, rounds, 2 * rounds)
    fine, slow = run_streams(book, data, ["flat-numpy", "tests.faults:SlowAfterWrites"], "test")
    # an exact scan reads 1.03-1.09x right after a write here (interval to about 1.2x): under a parallel test run
    # a loaded core has lifted it into the indifference zone (seen once), so the fine system is only
    # required not to be refuted; the slow one must be
    assert verdict_as(fine, "reference", "agent-loop").verdict in ("SUPPORTED", "INCONCLUSIVE")
    assert verdict_as(slow, "reference", "agent-loop").verdict == "NOT SUPPORTED"
    assert fine.found_own_at_1 == slow.found_own_at_1 == 1.0


def test_what_a_process_pays_once_is_paid_before_any_step_is_timed():
    data = stream_data(300, 10)
    [row] = run_streams(agent_stream(300, 10), data, ["tests.faults:SlowFirstWrite"], "test")
    assert max(row.operation("write").latencies_ns) < FIRST_WRITE_S / 2 * 1e9  # the slow first write was a warm-up


def test_a_system_that_cannot_delete_skips_a_runbook_that_deletes():
    data = stream_data(300, 10)
    [row] = run_streams(agent_stream(300, 10), data, ["kmeans"], "test")
    assert row.skipped == "cannot delete" and not row.operations


def test_the_engine_keeps_its_recall_and_returns_nothing_deleted_through_a_stream():
    data = stream_data(1_500, 40)
    rows = run_streams(agent_stream(1_500, 40), data, ["reference-dense", "reference"], "test")
    for row in rows:
        assert row.deleted_returned == 0
        assert row.operation("sleep").latencies_ns  # it consolidates, in its time
    assert min(c.recall_at_10 for c in rows[0].checkpoints) >= 0.95


@pytest.mark.parametrize("kind", [Search, Checkpoint])
def test_steps_are_plain_data(kind):
    assert kind.__dataclass_params__.frozen
