"""`compare` flags slowdowns beyond noise and tolerance, recall drops, flipped verdicts, other machines."""

import numpy as np

from harness.compare import compare


def results(latencies_ms, recall: float, verdict: str = "SUPPORTED", machine: dict | None = None) -> dict:
    latencies = np.asarray(latencies_ms, dtype=float)
    measurement = {
        "system": "reference",
        "dataset": "v",
        "encoder": "vectors",
        "n_docs": 1000,
        "params": {},
        "latency": {"p50_ms": float(np.median(latencies))},
        "recall_at_10": recall,
        "latencies_ns": (latencies * 1e6).astype(int).tolist(),
    }
    return {
        "run": {"machine": machine or {"platform": "linux", "cpus": 2, "packages": {"numpy": "2.3"}}},
        "growing": [measurement],
        "claims": [{"claim": "c", "system": "reference", "verdict": verdict}],
    }


def noisy(median: float, n: int = 200, seed: int = 0) -> np.ndarray:
    """Per-query latencies of a shared, busy machine: a wide spread around the median."""
    return median * np.random.default_rng(seed).lognormal(0, 0.6, n)


def test_identical_runs_and_noise_are_not_regressions():
    same = noisy(1.0)
    assert not compare(
        results(same, 0.99), results(same, 0.99), latency_tolerance=0.25, recall_tolerance=0.01
    ).regressions
    # two samples of the same noisy distribution: their medians differ, no test calls it a slowdown
    assert not compare(
        results(noisy(1.0, seed=1), 0.99),
        results(noisy(1.0, seed=2), 0.99),
        latency_tolerance=0.0,
        recall_tolerance=0.01,
    ).regressions


def test_a_two_fold_slowdown_in_a_section_is_a_regression_with_its_p_value():
    base = noisy(1.0)
    comparison = compare(results(base, 0.99), results(base * 2, 0.99), latency_tolerance=0.25, recall_tolerance=0.01)
    [regression] = comparison.regressions
    assert regression.key.startswith("growing:reference") and regression.metric == "p50_ms"
    assert regression.p_value is not None and regression.p_value < 1e-6


def test_a_small_but_significant_slowdown_stays_within_tolerance():
    base = noisy(1.0, 2000)
    comparison = compare(results(base, 0.99), results(base * 1.1, 0.99), latency_tolerance=0.25, recall_tolerance=0.01)
    assert not comparison.regressions


def test_recall_drops_and_flipped_verdicts():
    same = noisy(1.0)
    comparison = compare(
        results(same, 0.99), results(same, 0.95, "NOT SUPPORTED"), latency_tolerance=0.25, recall_tolerance=0.01
    )
    assert [c.metric for c in comparison.regressions] == ["recall_at_10"]
    assert comparison.flips == ["c / reference: SUPPORTED → NOT SUPPORTED"]


def test_other_machines_are_named_and_unrelated_runs_share_nothing():
    same = noisy(1.0)
    other = {"platform": "darwin", "cpus": 8, "packages": {"numpy": "2.1"}}
    comparison = compare(
        results(same, 0.99), results(same, 0.99, machine=other), latency_tolerance=0.25, recall_tolerance=0.01
    )
    assert comparison.machine_differences == ["platform: linux vs darwin", "cpus: 2 vs 8", "numpy: 2.3 vs 2.1"]
    assert not compare(results(same, 0.99), {"scaling": []}, latency_tolerance=0.25, recall_tolerance=0.01).shared
