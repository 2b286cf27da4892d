"""The progress a person waiting for a run sees: each step with the time the whole run has left, learnt from the
plan and corrected by the pace the run keeps."""

import time

import pytest

from harness.output import progress as module
from harness.output.progress import RunProgress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_time_left_is_the_runs_from_its_plan_not_the_steps():
    clock = Clock()
    run = RunProgress({"scaling": 300.0, "judges": 10.0, "streaming": 200.0}, clock=clock)
    assert run.time_left() == pytest.approx(510.0)
    with run.experiment("judges"):
        clock.now += 5.0  # halfway through the quickest experiment, the rest of the run still lies ahead
        assert run.time_left() == pytest.approx(505.0)


def test_a_slower_machine_than_planned_stretches_what_is_left():
    clock = Clock()
    run = RunProgress({"scaling": 300.0, "streaming": 300.0}, clock=clock)
    with run.experiment("scaling"):
        clock.now += 900.0  # three times the plan
    pace = (900 + module.PRIOR) / (300 + module.PRIOR)
    assert run.pace() == pytest.approx(pace)
    assert run.time_left() == pytest.approx(300 * pace)


def test_an_experiment_past_its_plan_is_given_more_time_and_slows_the_pace():
    clock = Clock()
    run = RunProgress({"scaling": 100.0, "streaming": 100.0}, clock=clock)
    with run.experiment("scaling"):
        clock.now += 400.0
        left = run.time_left()
        assert left > 40.0 + 100.0  # a tenth more of what it took, and the rest at a slower pace than planned
        clock.now += 100.0
        assert run.time_left() > left  # running over the plan only ever adds to what is left


def test_off_a_terminal_each_step_is_a_line_with_the_runs_time_left_and_a_heartbeat(monkeypatch, capsys):
    monkeypatch.setattr(module, "HEARTBEAT", 0.05)
    run = RunProgress({"scaling": 600.0})
    with run.experiment("scaling"):
        for _ in run(["kmeans"], "scaling N=100,000"):
            time.sleep(0.2)
    plan, *lines = capsys.readouterr().err.splitlines()
    assert "plan: about 10 min" in plan
    assert "scaling N=100,000: kmeans (1/1; run: about 10 min left)" in lines[0]
    assert any("kmeans still running" in line and "run: about" in line for line in lines[1:-1])
    assert lines[-1].endswith("scaling N=100,000: done")


@pytest.mark.parametrize(
    ("seconds", "said"), [(12.4, "12 s"), (89, "89 s"), (95, "2 min"), (3_540, "59 min"), (3_900, "1 h 5 min")]
)
def test_a_duration_reads_as_a_person_says_it(seconds, said):
    assert module.duration(seconds) == said
