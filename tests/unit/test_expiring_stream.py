"""The expiring stream: replaces and expiry as runbook data (big-ann-benchmarks' shape), replayed and scored."""

import numpy as np
import pytest

from harness.measure.checking import ContractViolation
from harness.measure.replay import run_streams
from harness.measure.runbooks import Checkpoint, Forget, Replace, Write, expiring_stream
from tests.unit.test_streaming import stream_data


def test_each_timestep_writes_part_of_its_batch_and_replaces_and_expires_only_live_cells():
    book = expiring_stream(1_000, 30, seed=4)
    live: dict[int, int] = {}  # cell -> the position whose text it holds
    written_or_used: set[int] = set()
    replaced = expired = 0
    for step in book.steps:
        if isinstance(step, Write):
            assert not set(step.cells) & written_or_used
            written_or_used.update(step.cells)
            live.update((c, c) for c in step.cells)
        elif isinstance(step, Replace):
            assert set(step.cells) <= live.keys() and len(step.cells) == len(step.sources)
            assert not set(step.sources) & written_or_used  # held back: never written under their own ids
            written_or_used.update(step.sources)
            live.update(zip(step.cells, step.sources))
            replaced += 1
        elif isinstance(step, Forget):
            assert set(step.cells) <= live.keys() and step.why.startswith("expired after")
            for cell in step.cells:
                del live[cell]
            expired += 1
        elif isinstance(step, Checkpoint):
            assert list(book.live_at_checkpoints()[step.label]) == sorted(live.values())
    assert replaced and expired
    assert [s.label for s in book.steps if isinstance(s, Checkpoint)] == [f"t{i}" for i in range(1, 11)]
    assert expiring_stream(1_000, 30, seed=4) == book  # data: the same arguments give the same runbook


def test_too_few_cells_for_the_timesteps_are_refused():
    with pytest.raises(ValueError, match="too few"):
        expiring_stream(15, 5)


def test_an_exact_system_scores_one_at_every_checkpoint_and_its_mean_is_the_checkpoints_mean():
    data = stream_data(800, 20)
    rows = run_streams(expiring_stream(800, 20), data, ["flat-numpy", "reference-dense"], "test")
    exact, engine = rows
    assert [c.recall_at_10 for c in exact.checkpoints] == [1.0] * 10 and exact.mean_recall == 1.0
    assert exact.operation("replace").cells == sum(
        len(s.cells) for s in expiring_stream(800, 20).steps if isinstance(s, Replace)
    )
    assert engine.operation("replace").latencies_ns  # the engine upserts; flat-numpy deletes and adds
    assert engine.deleted_returned == exact.deleted_returned == 0
    assert engine.mean_recall == pytest.approx(np.mean([c.recall_at_10 for c in engine.checkpoints]))
    assert engine.mean_recall >= 0.95


def test_a_system_whose_replaces_never_land_loses_recall_and_one_that_never_deletes_is_caught():
    data = stream_data(800, 20)
    [stale] = run_streams(expiring_stream(800, 20), data, ["tests.faults:KeepsOldVersions"], "test")
    assert stale.mean_recall < 1.0 and stale.deleted_returned == 0
    with pytest.raises(ContractViolation, match="returned a document twice"):  # its replace added a second copy
        run_streams(expiring_stream(800, 20), data, ["tests.faults:KeepsDeletedCells"], "test")
