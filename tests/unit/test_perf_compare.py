"""`magbench compare` of two perf summaries flags a ratio to its same-run baseline that moved beyond its rounds'
noise and the tolerance, in the direction that is worse for it, and nothing else; the summary keeps each ratio's
rounds and refuses other files."""

import json

import numpy as np
import pytest

from harness.cli import main
from harness.output.perf_summary import PerfSummary, PerfSummaryError, Ratio
from harness.verdicts.perf_compare import compare_ratios

RATIOS = {
    "ingest_vs_raw": ("engine_ingest_cells_per_s", "raw_ingest_cells_per_s"),
    "one_turn_vs_raw": ("engine_add_s", "raw_add_s"),
}


def summary(engine_rate: float, engine_add: float, spread: float = 0.05, seed: int = 0) -> PerfSummary:
    """A run whose engine ingests at `engine_rate` and adds a turn in `engine_add` against a raw store at 1.0 of
    each, its paired rounds jittering by `spread`."""
    rng = np.random.default_rng(seed)
    figures = {"engine_ingest_cells_per_s": engine_rate, "raw_ingest_cells_per_s": 1.0}
    figures |= {"engine_add_s": engine_add, "raw_add_s": 1.0}
    rounds = {name: (value * rng.normal(1, spread, 30)).tolist() for name, value in
              [("ingest_vs_raw", engine_rate), ("one_turn_vs_raw", engine_add)]}  # fmt: skip
    return PerfSummary.of(figures, RATIOS, rounds)


def regressions(a: PerfSummary, b: PerfSummary, tolerance: float = 0.2) -> list[str]:
    return [c.name for c in compare_ratios(a, b, tolerance=tolerance) if c.regression]


def test_a_rate_or_a_time_that_got_worse_beyond_noise_is_a_regression():
    base = summary(1.4, 1.0)
    assert regressions(base, summary(1.0, 1.0, seed=1)) == ["ingest_vs_raw"]  # a rate is worse lower
    assert regressions(base, summary(1.4, 1.6, seed=1)) == ["one_turn_vs_raw"]  # a time is worse higher


def test_noise_a_small_move_and_an_improvement_are_not_regressions():
    base = summary(1.4, 1.0)
    assert not regressions(base, summary(1.4, 1.0, seed=1))
    assert not regressions(base, summary(1.3, 1.1, seed=1))  # beyond the rounds' noise, within the tolerance
    assert not regressions(summary(1.4, 1.0, spread=0.6), summary(1.0, 1.6, spread=0.6, seed=1))  # too noisy to tell
    improved = compare_ratios(base, summary(2.0, 0.5, seed=1))
    assert [c.name for c in improved if c.improvement] == ["ingest_vs_raw", "one_turn_vs_raw"]
    assert not any(c.regression for c in improved)


def test_a_ratio_without_rounds_is_judged_by_the_tolerance():
    figures = {"resident_bytes": 1.45, "raw_vector_bytes": 1.0}
    ratios = {"resident_vs_raw": ("resident_bytes", "raw_vector_bytes")}
    before = PerfSummary.of(figures, ratios, {})
    assert before.ratios["resident_vs_raw"] == Ratio(1.45, 1.45, 1.45, "lower")
    assert not regressions(before, PerfSummary.of(figures | {"resident_bytes": 1.6}, ratios, {}))
    assert regressions(before, PerfSummary.of(figures | {"resident_bytes": 1.9}, ratios, {})) == ["resident_vs_raw"]


def test_a_ratio_whose_figures_were_not_both_recorded_is_left_out():
    made = PerfSummary.of({"engine_add_s": 1.0}, RATIOS, {})
    assert made.ratios == {} and made.figures == {"engine_add_s": 1.0}


def test_the_command_exits_1_on_a_regression_0_without_and_2_on_nothing_shared(tmp_path, capsys):
    paths = {name: tmp_path / f"{name}.json" for name in ("base", "same", "worse", "other")}
    summary(1.4, 1.0).write(paths["base"])
    summary(1.4, 1.0, seed=1).write(paths["same"])
    summary(0.9, 1.0, seed=1).write(paths["worse"])
    PerfSummary({"x_s": 1.0}, {}).write(paths["other"])
    assert main(["compare", str(paths["base"]), str(paths["same"])]) == 0
    assert main(["compare", str(paths["base"]), str(paths["worse"])]) == 1
    assert "REGRESSION" in capsys.readouterr().out
    assert main(["compare", str(paths["base"]), str(paths["worse"]), "--ratio-tolerance", "1"]) == 0
    assert main(["compare", str(paths["base"]), str(paths["other"])]) == 2
    assert PerfSummary.load(paths["worse"]) == PerfSummary.load(paths["worse"])  # round trip


def test_a_file_of_another_kind_or_version_is_refused(tmp_path):
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"schema_version": 3}))
    with pytest.raises(PerfSummaryError, match="not a perf summary"):
        PerfSummary.load(other)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"schema": "magbench-perf-summary", "version": 0, "figures": {}, "ratios": {}}))
    with pytest.raises(PerfSummaryError, match="version 0"):
        PerfSummary.load(old)
    with pytest.raises(SystemExit) as exit_status:
        main(["compare", str(tmp_path / "missing.json"), str(old)])
    assert exit_status.value.code == 2
