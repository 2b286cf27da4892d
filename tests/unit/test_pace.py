"""The run plans at the pace a probe measures before it: a machine slower than the plan's stretches the plan and
the time left from the start, and the probe's spread is said beside it."""

import itertools
from dataclasses import replace

import pytest

from harness.measure.pace import DRIFT, Pace, measure_pace
from harness.output.progress import RunProgress, duration
from harness.output.report import timing_lines
from harness.output.results import RunResults
from tests.results_factory import run_info


def test_the_pace_is_the_probes_median_pass_against_its_reference_and_its_spread_the_fastest_and_slowest():
    ticks = itertools.accumulate([0.0, 0.3, 0.0, 0.1, 0.0, 0.5, 0.0, 0.2])  # passes of 0.3, 0.1, 0.5, 0.2 s
    pace = measure_pace(passes=4, reference_s=0.1, clock=lambda: next(ticks))
    assert (pace.median, pace.low, pace.high) == pytest.approx((2.5, 1.0, 5.0))


def test_a_slow_machine_is_measured_slower_than_a_fast_reference_says():
    assert measure_pace(passes=2, reference_s=1e-6).low > 1.0  # the probe takes far longer than a microsecond


def test_a_machine_at_twice_the_planned_pace_plans_twice_the_time_and_says_the_probes_spread():
    run = RunProgress({"scaling": 300.0, "streaming": 300.0}, start_pace=Pace(2.0, 1.5, 3.0), clock=lambda: 0.0)
    assert run.time_left() == pytest.approx(1200.0)
    low, high = duration(600 * 1.5 * DRIFT[0]), duration(600 * 3.0 * DRIFT[1])
    assert run.plan_text().startswith(f"plan: about 20 min ({low}–{high}): this machine goes ×2.00 the pace")
    assert f"planned ({low}–{high})" in run.summary()


def test_a_pace_out_of_order_is_refused():
    with pytest.raises(ValueError, match="low <= median <= high"):
        Pace(1.0, 2.0, 3.0)


def test_the_report_says_each_experiments_time_planned_at_the_measured_pace_beside_what_it_took():
    run = replace(run_info(), took={"scaling": 700.0, "judges": 3.0}, planned={"scaling": 500.0, "judges": 2.0})
    run = replace(run, pace=Pace(1.3, 1.1, 1.6))
    [line] = [line for line in timing_lines(RunResults(run=run)) if "planned at the pace" in line]
    assert "(×1.30 the plan's, ×1.10–1.60 over its passes) → taken: scaling 650 → 700, judges 3 → 3" in line
    assert RunResults.from_json(RunResults(run=run).to_json()).run.pace == run.pace  # kept in results.json


def test_the_plan_is_said_with_the_first_step_so_a_run_refused_before_any_work_says_only_why(capsys):
    run = RunProgress({"scaling": 60.0}, start_pace=Pace(1.0, 1.0, 1.0), clock=lambda: 0.0)
    assert capsys.readouterr().err == ""
    list(run(["N=1,000"], "scaling"))
    lines = capsys.readouterr().err.splitlines()
    assert "plan: about" in lines[0] and "scaling: N=1,000" in lines[1]
    list(run(["N=2,000"], "scaling"))
    assert "plan: about" not in capsys.readouterr().err
