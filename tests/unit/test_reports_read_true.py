"""What a reader sees: intervals of ratios that respect what a ratio is, noisy timing named, counts that add
up, captions from the data, stable colours, compare that shows changes and refuses bad numbers."""

import itertools
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from harness.experiments.concurrency import SYSTEMS as CONCURRENCY_SYSTEMS
from harness.experiments.realtext import SYSTEMS as REALTEXT_SYSTEMS
from harness.experiments.scaling import SYSTEMS as SCALING_SYSTEMS
from harness.experiments.streaming import SYSTEMS as STREAM_SYSTEMS
from harness.output.plots import colour, marker
from harness.output.reading import reading
from harness.output.report import timing_lines
from harness.output.results import ResultsFileError, RunResults, Verdict
from harness.output.sections.timed import swept
from harness.verdicts.claims import _interval_words, evaluate
from harness.verdicts.compare import compare, render
from harness.verdicts.confidence import Estimate, estimate, noisy, unsettled
from tests.results_factory import measured, run_info

PASSES = [6.9, 34.0, 6.9, 7.3, 7.2]


def test_a_ratios_interval_stays_above_zero_however_one_pass_jumps():
    rng = np.random.default_rng(0)
    slow = [list(rng.normal(1.0 * f, 0.01, 40) * 1e6) for f in PASSES]
    fast = [list(rng.normal(0.14, 0.001, 40) * 1e6) for _ in PASSES]
    ratio = estimate([slow, fast], lambda m: m[:, 0] / m[:, 1])
    assert 0 < ratio.low < ratio.value < ratio.high  # what the report printed before: "95% CI -2.52–27.44×"
    assert abs(ratio.value / (6.9 / 0.14) - 1) < 0.02  # the passes that load slowed (34, 7.3 ms) do not move it
    assert ratio.high / ratio.value < 1.15  # the bootstrap and what moves between runs (a log-sd of 0.06)


def test_a_measurement_whose_passes_disagree_is_named_in_every_verdict_it_decides():
    assert noisy([[1.05e6] * 9, [1.25e6] * 9, [1.12e6] * 9, [5.78e6] * 9, [6.03e6] * 9])
    assert not noisy([[1.0e6] * 9, [1.1e6] * 9, [1.2e6] * 9])
    rows = [
        measured("flat-chroma", 1_000, 1.0, pass_factors=(1.0, 1.2, 1.1, 5.8, 6.0)),
        measured("flat-chroma", 25_000, 1.5, pass_factors=(1.0, 1.0, 1.0, 1.0, 1.0)),
        measured("flat-chroma", 100_000, 2.0, pass_factors=(1.0, 1.0, 1.0, 1.0, 1.0)),
    ]
    results = RunResults(run=run_info(), scaling=rows)
    stable = next(v for v in evaluate(results)[0] if v.claim == "stable-latency" and v.system == "flat-chroma")
    assert "NOISY timing: flat-chroma at 1,000" in stable.measured


def test_the_report_names_noisy_measurements_that_decide_verdicts_and_counts_the_others():
    jumpy = (1.0, 1.2, 1.1, 5.8, 6.0)
    results = RunResults(
        run=run_info(),
        scaling=[measured("flat-chroma", 1_000, 1.0, pass_factors=jumpy)],
        needles=[measured("reference", 200, 0.3, pass_factors=jumpy), measured("kmeans", 200, 0.1, pass_factors=jumpy)],
    )
    lines = timing_lines(results)
    [named] = [line for line in lines if line.startswith("- **noisy measurements**")]
    assert "scaling `flat-chroma` at 1,000: pass medians 1, 1.2, 1.1, 5.8, 6 ms" in named
    assert "needles" not in named
    assert "- noisy measurements whose latency decides no verdict: 2 in needles" in lines


def test_timing_goes_on_while_any_deciding_measurement_is_unsettled():
    steady = [[1e6] * 20, [1.01e6] * 20, [0.99e6] * 20]
    jumpy = [[1e6] * 20, [3e6] * 20, [1e6] * 20]
    assert unsettled([steady, jumpy]) and not unsettled([steady, steady])


def test_ratios_and_their_intervals_use_the_same_words():
    assert _interval_words(Estimate(0.12, 0.1, 0.15)) == "(95% CI 6.7–10.0× slower)"
    assert _interval_words(Estimate(8.3, 6.9, 9.0)) == "(95% CI 6.9–9.0× faster)"
    assert _interval_words(Estimate(1.2, 0.8, 1.5)) == "(95% CI 1.2× slower to 1.5× faster)"


def test_an_interval_reads_as_two_numbers_whatever_their_signs_and_however_narrow():
    slope = Estimate(-0.0101, -0.0102, -0.0100).text()
    assert slope == "−0.0101 (95% CI −0.0102 to −0.0100)"  # what the report printed: "-0.01 (95% CI -0.01–-0.01)"
    assert Estimate(-0.01, -0.01, -0.01).text() == "−0.0100 (95% CI within ±0.00005)"
    assert Estimate(1.234, 1.1, 1.4).text("×") == "1.23× (95% CI 1.10–1.40×)"


def test_the_reading_counts_every_verdict_including_the_unmeasured():
    verdicts = [Verdict("c", "s", v, "", "", "") for v in ("SUPPORTED", "NOT MEASURED", "INCONCLUSIVE", "NOT MEASURED")]
    [line, *_] = reading(RunResults(run=run_info(), targets=verdicts))
    assert "4 verdicts, 1 holds, 0 do not, 1 cannot be told apart from the bar (within 10%)" in line
    assert "and 2 were not measured by this run." in line
    assert "Of 4" not in line


def test_the_sweep_caption_names_what_each_system_sweeps():
    rows = [
        measured("reference", 100, 1.0, params={"probe_per_sqrt_n": 8}),
        measured("faiss-hnsw", 100, 1.0, params={"ef_search": 16}),
        measured("faiss-ivf", 100, 1.0, params={"nprobe": 4}),
        measured("kmeans", 100, 1.0, params={"nprobe": 4}),
    ]
    caption = swept(rows)
    assert "`probe_per_sqrt_n` for reference" in caption and "`ef_search` for faiss-hnsw" in caption
    assert "`nprobe` for faiss-ivf, kmeans" in caption and "group_top_k" not in caption


def test_a_system_keeps_its_colour_and_marker_in_every_plot_of_every_process():
    names = ["faiss-ivf", "my_module:make", "other:factory", "plugins.engine:build", "x:y", "reference-turns"]
    here = " ".join(f"{colour(name)}{marker(name)}" for name in names)
    code = f"from harness.output.plots import colour, marker; print(*(colour(n) + marker(n) for n in {names}))"
    for seed in ("1", "2"):  # Python's own hash() of a name differs from process to process
        env = {**os.environ, "PYTHONHASHSEED": seed}
        elsewhere = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert elsewhere.stdout.strip() == here


def test_the_systems_drawn_together_read_apart_and_on_white():
    for drawn in (SCALING_SYSTEMS, REALTEXT_SYSTEMS, STREAM_SYSTEMS):
        assert len({colour(s) for s in drawn}) == len(drawn)
    for system in {
        *SCALING_SYSTEMS,
        *REALTEXT_SYSTEMS,
        *STREAM_SYSTEMS,
        *CONCURRENCY_SYSTEMS,
        "my_module:make",
    }:
        assert _contrast_on_white(colour(system)) >= 3.0, system  # WCAG's floor for lines and marks


def test_the_concurrency_plots_systems_differ_in_hue_not_only_in_code():
    drawn = CONCURRENCY_SYSTEMS
    for one, other in itertools.combinations(drawn, 2):
        assert _lab_distance(colour(one), colour(other)) > 25, (one, other)  # two reds read as one system


def _lab_distance(one: str, other: str) -> float:
    """CIE76 ΔE between two colours (sRGB, D65): about 2.3 is just noticeable, 25 reads as another colour."""

    def lab(spec: str) -> np.ndarray:
        rgb = np.array([c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(spec)])
        xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ rgb
        f = xyz / np.array([0.9505, 1.0, 1.089])
        f = np.where(f > 0.008856, np.cbrt(f), 7.787 * f + 16 / 116)
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])

    return float(np.linalg.norm(lab(one) - lab(other)))


def _contrast_on_white(colour_spec: str) -> float:
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour_spec)]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 1.05 / (luminance + 0.05)


def results_with(*rows, claims=()):
    return RunResults(run=run_info(), scaling=list(rows), claims=list(claims))


def test_compare_shows_changes_only_and_does_not_count_the_unmeasured_as_a_change():
    steady = ("flat-numpy", "kmeans", "faiss-ivf")
    a = results_with(*(measured(s, 1_000, 1.0) for s in steady), measured("reference", 1_000, 0.5),
                     claims=[Verdict("flat-linear", "reference", "SUPPORTED", "", "", "")])  # fmt: skip
    b = results_with(*(measured(s, 1_000, 1.02) for s in steady), measured("reference", 1_000, 1.5),
                     claims=[Verdict("flat-linear", "reference", "NOT MEASURED", "", "", "")])  # fmt: skip
    comparison = compare(a, b, latency_tolerance=0.5, recall_tolerance=0.01)
    text = render(comparison)
    assert "4 measurements compared" in text and "scaling:reference" in text and "scaling:flat-numpy" not in text
    assert comparison.flips == [] and "1 verdicts were measured by only one of the runs" in text
    assert "scaling:flat-numpy" in render(comparison, everything=True)


def test_compare_of_a_run_with_itself_shows_no_empty_table_and_counts_what_neither_measured():
    run = results_with(measured("reference", 1_000, 1.0), claims=[Verdict("flat-linear", "reference", "NOT MEASURED",
                       "", "", "")])  # fmt: skip
    comparison = compare(run, run, latency_tolerance=0.5, recall_tolerance=0.01)
    text = render(comparison)
    assert "| measurement" not in text and "0 rows changed" in text
    assert "1 verdicts were measured by neither run" in text and "only one" not in text
    header = render(comparison, everything=True).splitlines()[2]
    assert header.split("|")[-2].strip() == "regression"  # every column is named


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_compare_refuses_results_with_nan_or_infinity(bad):
    good = results_with(measured("flat-numpy", 1_000, 1.0))
    broken = results_with(measured("flat-numpy", 1_000, 1.0, recall=bad))
    with pytest.raises(ResultsFileError, match="NaN or infinity"):
        compare(good, broken, latency_tolerance=0.5, recall_tolerance=0.01)
