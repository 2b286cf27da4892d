"""`compare` flags slowdowns and recall drops beyond tolerance, and flipped verdicts."""

from harness.compare import compare


def results(p50: float, recall: float, verdict: str = "SUPPORTED") -> dict:
    measurement = {
        "system": "reference",
        "dataset": "v",
        "encoder": "vectors",
        "n_docs": 1000,
        "params": {},
        "latency": {"p50_ms": p50},
        "recall_at_10": recall,
    }
    return {"scaling": [measurement], "claims": [{"claim": "c", "system": "reference", "verdict": verdict}]}


def test_within_tolerance_is_not_a_regression():
    changes, flips = compare(results(1.0, 0.99), results(1.2, 0.985), latency_tolerance=0.25, recall_tolerance=0.01)
    assert not any(c.regression for c in changes) and flips == []


def test_slower_or_less_accurate_beyond_tolerance_is_a_regression():
    changes, _ = compare(results(1.0, 0.99), results(1.3, 0.99), latency_tolerance=0.25, recall_tolerance=0.01)
    assert [c.metric for c in changes if c.regression] == ["p50_ms"]
    changes, _ = compare(results(1.0, 0.99), results(1.0, 0.95), latency_tolerance=0.25, recall_tolerance=0.01)
    assert [c.metric for c in changes if c.regression] == ["recall_at_10"]


def test_flipped_verdicts_are_listed():
    _, flips = compare(results(1, 1), results(1, 1, "NOT SUPPORTED"), latency_tolerance=0.25, recall_tolerance=0.01)
    assert flips == ["c / reference: SUPPORTED → NOT SUPPORTED"]
