"""`compare` flags slowdowns beyond noise and tolerance, recall drops, flipped verdicts, other machines and other data;
`RunResults` round-trips through JSON and refuses another schema version."""

from dataclasses import replace

import numpy as np
import pytest

from harness.output.results import SCHEMA_VERSION, Machine, ResultsFileError, RunResults, Verdict
from harness.verdicts.compare import HAND_OFF_PERCENTILE, MIN_QUERIES_PER_PASS, compare, render
from tests.results_factory import MACHINE, measured, results


def run(latencies_ms, recall: float, verdict: str = "SUPPORTED", machine: Machine = MACHINE) -> RunResults:
    return results(
        machine,
        growing=[measured("reference", 1000, latencies_ms, recall=recall)],
        claims=[Verdict("c", "reference", verdict, "", "", "")],
    )


def noisy(median: float, n: int = 200, seed: int = 0) -> np.ndarray:
    """Per-query latencies of a shared, busy machine: a wide spread around the median."""
    return median * np.random.default_rng(seed).lognormal(0, 0.6, n)


def test_identical_runs_and_noise_are_not_regressions():
    same = noisy(1.0)
    assert not compare(run(same, 0.99), run(same, 0.99), latency_tolerance=0.25, recall_tolerance=0.01).regressions
    # two samples of the same noisy distribution: their medians differ, no test calls it a slowdown
    assert not compare(
        run(noisy(1.0, seed=1), 0.99), run(noisy(1.0, seed=2), 0.99), latency_tolerance=0.0, recall_tolerance=0.01
    ).regressions


def test_a_two_fold_slowdown_in_a_section_is_a_regression_with_its_p_value():
    base = noisy(1.0)
    comparison = compare(run(base, 0.99), run(base * 2, 0.99), latency_tolerance=0.25, recall_tolerance=0.01)
    [regression] = comparison.regressions
    assert str(regression.key).startswith("growing:reference") and regression.metric == "p50_ms"
    assert regression.p_value is not None and regression.p_value < 1e-6


def test_a_latency_timed_over_a_handful_of_queries_is_compared_on_recall_only():
    few, enough = noisy(1.0, MIN_QUERIES_PER_PASS - 1), noisy(1.0, MIN_QUERIES_PER_PASS)
    handful = compare(run(few, 0.99), run(few * 3, 0.95), latency_tolerance=0.25, recall_tolerance=0.01)
    assert [c.metric for c in handful.regressions] == ["recall_at_10"] and handful.recall_only == 1
    timed = compare(run(enough, 0.99), run(enough * 3, 0.99), latency_tolerance=0.25, recall_tolerance=0.01)
    assert [c.metric for c in timed.regressions] == ["p50_ms"] and timed.recall_only == 0


def test_a_small_but_significant_slowdown_stays_within_tolerance():
    base = noisy(1.0, 2000)
    comparison = compare(run(base, 0.99), run(base * 1.1, 0.99), latency_tolerance=0.25, recall_tolerance=0.01)
    assert not comparison.regressions


def test_recall_drops_and_flipped_verdicts():
    same = noisy(1.0)
    comparison = compare(
        run(same, 0.99), run(same, 0.95, "NOT SUPPORTED"), latency_tolerance=0.25, recall_tolerance=0.01
    )
    assert [c.metric for c in comparison.regressions] == ["recall_at_10"]
    assert comparison.flips == ["c / reference: SUPPORTED → NOT SUPPORTED"]


def test_a_verdict_that_reads_the_other_side_of_the_edge_it_stands_at_is_not_a_change():
    same = noisy(1.0)
    edge = replace(
        run(same, 0.99), claims=[Verdict("c", "reference", "INCONCLUSIVE", "", "", "", neighbours=("NOT SUPPORTED",))]
    )
    other_side = run(same, 0.99, "NOT SUPPORTED")
    comparison = compare(edge, other_side, latency_tolerance=0.25, recall_tolerance=0.01)
    assert comparison.flips == [] and comparison.edge_flips == ["c / reference: INCONCLUSIVE → NOT SUPPORTED"]
    assert compare(edge, run(same, 0.99), latency_tolerance=0.25, recall_tolerance=0.01).flips == [
        "c / reference: INCONCLUSIVE → SUPPORTED"
    ]  # not the verdict it stands at the edge of: a change


def test_other_machines_are_named_and_unrelated_runs_share_nothing():
    same = noisy(1.0)
    other = Machine(platform="darwin", processor="x86_64", cpus=8, python="3.11.7", packages={"numpy": "2.1"})
    comparison = compare(run(same, 0.99), run(same, 0.99, machine=other), latency_tolerance=0.25, recall_tolerance=0.01)
    assert comparison.machine_differences == ["platform: linux vs darwin", "cpus: 2 vs 8", "numpy: 2.3 vs 2.1"]
    assert not compare(run(same, 0.99), results(), latency_tolerance=0.25, recall_tolerance=0.01).shared


def test_results_round_trip_through_json():
    original = replace(run(noisy(1.0), 0.99), scaling=[measured("faiss-ivf", 10, 0.2, params={"nprobe": 4})])
    original = replace(original, growing=[replace(original.growing[0], rss_bytes_per_doc=float("nan"))])
    again = RunResults.from_json(original.to_json())
    assert again.measurements().keys() == original.measurements().keys()
    assert again.growing[0].pass_latencies_ns == original.growing[0].pass_latencies_ns
    assert again.growing[0].found_at == {1: 5, 3: 5, 10: 5} and np.isnan(again.growing[0].rss_bytes_per_doc)
    assert again.run == original.run and again.claims == original.claims


def test_a_file_of_another_schema_or_shape_is_refused_with_what_to_do():
    text = run(noisy(1.0), 0.99).to_json()
    unversioned = text.replace(f'"schema": {SCHEMA_VERSION},', "")  # results.json before versioning
    with pytest.raises(ResultsFileError, match=r"schema 1; this magbench reads schema 3.*rerun"):
        RunResults.from_json(unversioned, source="old/results.json")
    with pytest.raises(ResultsFileError, match="not a valid results file"):
        RunResults.from_json(text.replace('"recall_at_10"', '"recall"'))
    with pytest.raises(ResultsFileError, match="not JSON"):
        RunResults.from_json("{")


def test_a_busier_machine_is_drift_and_one_slowed_system_is_a_regression():
    """Systems timed together on the same data: all slower is the machine, one slower is the system."""

    def section(factors: dict[str, float]) -> RunResults:
        drift = (1.0, 1.3, 0.9, 1.1, 1.2)  # the machine moved between passes
        return results(
            scaling=[
                measured(system, 1000, noisy(1.0, seed=i) * factor, pass_factors=drift)
                for i, (system, factor) in enumerate(factors.items())
            ]
        )

    base = section({"reference": 1.0, "flat-numpy": 1.0, "faiss-ivf": 1.0})
    busier = section({"reference": 1.6, "flat-numpy": 1.6, "faiss-ivf": 1.6})
    assert not compare(base, busier, latency_tolerance=0.25, recall_tolerance=0.01).regressions
    slowed = section({"reference": 1.0, "flat-numpy": 2.0, "faiss-ivf": 1.0})
    [regression] = compare(base, slowed, latency_tolerance=0.25, recall_tolerance=0.01).regressions
    assert str(regression.key).startswith("scaling:flat-numpy") and regression.drift == 1.0


def test_passes_that_overlap_are_noise_not_a_regression():
    """35 % slower on the median, but B's fastest pass is not slower than A's slowest."""
    a = results(scaling=[measured("reference", 1000, noisy(1.0), pass_factors=(1.0, 1.0, 1.4, 1.0, 1.0))])
    b = results(scaling=[measured("reference", 1000, noisy(1.0), pass_factors=(1.35,) * 5)])
    [change, _] = compare(a, b, latency_tolerance=0.25, recall_tolerance=0.01).changes
    assert change.after / change.before > 1.25 and not change.regression


def test_a_slowdown_at_one_size_only_is_not_a_regression_but_one_at_every_size_is():
    """A process beside run B can evict one size's data from the cache; a slower search slows every size."""
    base = noisy(1.0)

    def sized(*factors):
        sizes = (1_000, 10_000, 25_000, 100_000)
        return results(MACHINE, growing=[measured("flat-numpy", n, base * f) for n, f in zip(sizes, factors)])

    one = compare(sized(1, 1, 1, 1), sized(1, 1, 3, 1), latency_tolerance=0.25, recall_tolerance=0.01)
    assert not one.regressions and any(c.after / c.before > 2.5 for c in one.changes)
    every = compare(sized(1, 1, 1, 1), sized(3, 3, 3, 3), latency_tolerance=0.25, recall_tolerance=0.01)
    assert len(every.regressions) == 4


def test_runs_on_other_data_are_named_and_moving_a_file_is_not_other_data():
    same = noisy(1.0)

    def on(**facts):
        measured = run(same, 0.99)
        return replace(measured, run=replace(measured.run, dataset_info=facts))

    comparison = compare(
        on(file="/a/49.json", sha256="aa", turn_format="speaker"),
        on(file="/b/49.json", sha256="bb", turn_format="speaker"),
        latency_tolerance=0.25,
        recall_tolerance=0.01,
    )
    assert comparison.data_differences == ["sha256: aa vs bb"]
    assert "measured different data" in render(comparison)
    moved = compare(
        on(file="/a/49.json", sha256="aa"),
        on(file="/b/49.json", sha256="aa"),
        latency_tolerance=0.25,
        recall_tolerance=0.01,
    )
    assert moved.data_differences == [] and "different data" not in render(moved)


def test_a_system_answered_on_a_librarys_threads_is_compared_at_its_fastest_searches():
    """Another process on the CPU delays the searches of reference-chroma that it overlaps (each waits on many
    hand-offs between Chroma's threads) while flat-numpy beside it holds steady: its median moves, its fastest
    searches do not. A slower search slows those too; the median stays the rule for every other system."""
    base = noisy(6.0)
    overlapped = base.copy()
    overlapped[::2] *= 3  # every other search overlapped another process, in every pass

    def section(system: str, latencies: np.ndarray) -> RunResults:
        passes = (1.0, 1.1, 0.9)
        steady = measured("faiss-ivf", 10_000, noisy(0.1, seed=1), pass_factors=passes)
        return results(scaling=[measured(system, 10_000, latencies, pass_factors=passes), steady])

    def regressions(system: str, after: np.ndarray) -> list[str]:
        comparison = compare(
            section(system, base), section(system, after), latency_tolerance=0.5, recall_tolerance=0.01
        )
        return [f"{c.key.system} {c.metric}" for c in comparison.regressions]

    assert regressions("reference-chroma", overlapped) == []
    assert regressions("reference-chroma", base * 2) == [f"reference-chroma p{HAND_OFF_PERCENTILE}_ms"]
    assert regressions("flat-numpy", overlapped) == ["flat-numpy p50_ms"]
