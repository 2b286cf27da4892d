"""A run's time left learns from the like steps of the experiment running (a dialogue file's conversations), so a
system the plan knows nothing of is timed after its first step, not after the whole experiment."""

from __future__ import annotations

import pytest

from harness.data.spec import DatasetSpec
from harness.experiments import dialogue
from harness.experiments.definition import RunContext
from harness.measure.plan import RunPlan
from harness.output.progress import RunProgress, Steps
from reference.encoders import MockEncoder


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_experiment_in_steps_is_expected_to_take_as_long_per_step_as_its_steps_done():
    clock = Clock()
    run = RunProgress({"dialogue": 60.0, "knowledge-update": 60.0}, clock=clock)
    with run.experiment("dialogue"):
        steps = iter(run(Steps(range(10)), "conversations"))
        next(steps)
        clock.now += 100.0  # the first conversation takes 100 s; the plan gave the ten 60 s
        assert run.done_share() == 0.0 and run.time_left() < 100.0  # from the plan alone: no step is done yet
        next(steps)
        assert run.done_share() == 0.1
        assert run.time_left() == pytest.approx(900.0 + 60.0 * run.pace())  # nine more like it, then the rest
        assert run.pace() == pytest.approx((100.0 + 60.0) / (6.0 + 60.0))  # learnt from the step done
        for _ in steps:
            clock.now += 100.0
        assert run.done_share() == 1.0


def test_ordinary_loops_teach_nothing_and_an_unplanned_system_is_named():
    clock = Clock()
    run = RunProgress({"scaling": 100.0}, clock=clock, unplanned=["my.mod:make"])
    with run.experiment("scaling"):
        for _ in run(range(2), "build"):
            clock.now += 10.0
        assert run.done_share() == 0.0 and run.time_left() == pytest.approx(80.0)
    assert "my.mod:make planned as a registered system" in run.left_text()


def test_a_dialogue_file_plans_seconds_by_its_size_and_its_systems(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_bytes(b" " * 500_000)
    dataset = DatasetSpec.parse(f"locomo:{path}")
    every = dialogue.work(RunContext(RunPlan(), {"mock": MockEncoder()}, dataset))
    two = dialogue.work(RunContext(RunPlan(), {"mock": MockEncoder()}, dataset, systems=("bm25", "my.mod:make")))
    assert every == pytest.approx(dialogue.SECONDS_PER_MB * 0.5 * len(dialogue.SYSTEMS))
    assert two == pytest.approx(every * 2 / len(dialogue.SYSTEMS))
