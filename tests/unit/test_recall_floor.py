"""The recall-floor measurement (`harness.measure.recall_floor`) on a small synthetic memory: its rows, its budget
scaling and the miss factor it compares against."""

import json

import numpy as np
import pytest

from harness.measure import recall_floor
from reference import MemoryConfig
from reference.state import calibration


def unit_mixture(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((20, 32))[rng.integers(0, 20, count)] + 1.2 * rng.standard_normal((count, 32))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def test_a_large_memorys_budget_share_is_given_to_a_small_one():
    default = MemoryConfig()
    as_large = recall_floor.Setting(0.05, as_if=40_000).config(10_000, 0.95)
    assert as_large.probe_margin == 0.05 and as_large.target_recall == 0.95
    assert as_large.probe_per_k == round(default.probe_per_k / 2)
    assert as_large.probe_candidates(10, 10_000) / 10_000 == pytest.approx(
        default.probe_candidates(10, 40_000) / 40_000, rel=0.01
    )
    assert recall_floor.Setting().config(10_000, 0.9) == MemoryConfig(lexical=False, target_recall=0.9)


def test_rows_for_every_target_write_and_sleep_measured_against_exact_search_at_the_factor_asked():
    vectors = unit_mixture(2_040, seed=1)
    cells, queries = vectors[:2_000], vectors[2_000:]
    truth, seconds = recall_floor.exact(cells, queries)
    assert seconds > 0 and all(len(rows) == recall_floor.K for rows in truth)
    configured = calibration.MISS_FACTOR, calibration.CONFIDENCE
    factor = configured[0] + 0.5
    how = recall_floor.Estimate(factor, confidence=0.5)
    rows = recall_floor.engine_rows(cells, queries, truth, how, recall_floor.Setting(0.02, as_if=60_000))
    assert configured == (calibration.MISS_FACTOR, calibration.CONFIDENCE)  # restored
    assert {(r.target, r.write, r.slept) for r in rows} == {
        (t, w, s) for t in recall_floor.TARGETS for w in ("bulk", "in order") for s in (False, True)
    }
    for row in rows:
        assert row.miss_factor == factor and 0 <= row.recall <= 1 and row.bytes_per_search > 0
        assert row.estimate is not None and row.low == row.estimate  # the point estimate: no spread
        assert row.low >= row.target or row.reach > 1


def test_locomo_turns_are_a_corpus_of_one_passage_per_distinct_turn(tmp_path):
    turns = [("Ann", "We moved to Lisbon."), ("Ben", "Nice!"), ("Ann", "Nice!"), ("Ben", "Nice!")]
    sample = {
        "session_1": [{"speaker": s, "dia_id": f"D1:{i}", "text": t} for i, (s, t) in enumerate(turns, 1)],
        "qa": [{"question": "Where did Ann move?", "answer": "Lisbon", "evidence": ["D1:1"], "category": 4}],
    }
    (tmp_path / "one.json").write_text(json.dumps(sample), encoding="utf-8")
    corpus = recall_floor.corpus_of(f"locomo:{tmp_path}")
    assert corpus.passages == ["Ann: We moved to Lisbon.", "Ben: Nice!", "Ann: Nice!"]
    assert corpus.sha256 and corpus.fingerprint


def _steady(seconds: float) -> recall_floor.Timed:
    """A search timed at `seconds` a query in every pass."""
    return recall_floor.Timed([], [[round(seconds * 1e9)] * 4] * recall_floor.PASSES)


def test_the_race_times_hnsw_at_the_engines_recall_between_its_neighbouring_points(monkeypatch):
    hnsw = recall_floor.Hnsw(None, [(10, 0.95, 0.0), (16, 0.97, 0.0), (24, 0.99, 0.0)])
    monkeypatch.setattr(recall_floor.Hnsw, "search", lambda self, ef: {10: 1.0, 16: 2.0, 24: 4.0}[ef])
    raced = {}

    def race(searches, queries, *, until_settled):  # each stand-in "search" is the seconds it takes a query
        assert until_settled
        raced.clear()
        raced.update(searches)
        return {name: _steady(seconds) for name, seconds in searches.items()}

    monkeypatch.setattr(recall_floor, "raced", race)
    queries = np.zeros((4, 4), dtype=np.float32)
    between = hnsw.race(2.5, queries, 0.98)
    assert (between.engine_seconds, between.how) == (pytest.approx(2.5), "ef 16–24 interpolated")
    assert between.hnsw_seconds == pytest.approx(3.0) and between.speedup.value == pytest.approx(3.0 / 2.5)
    assert between.mean_speedup == pytest.approx(3.0 / 2.5)
    assert sorted(raced.values()) == [2.0, 2.5, 4.0]  # the engine raced with both points
    on_a_point = hnsw.race(0.5, queries, 0.97)
    assert (on_a_point.hnsw_seconds, on_a_point.how) == (pytest.approx(2.0), "ef 16")
    assert sorted(raced.values()) == [0.5, 2.0]
    assert hnsw.race(0.5, queries, 0.90).how == "ef 10"  # the cheapest point reads more
    assert hnsw.race(0.5, queries, 0.995) is None


@pytest.mark.parametrize(("speedup", "verdict"), [(2.0, "faster"), (0.5, "**slower**"), (1.05, "too close to call")])
def test_a_race_is_judged_as_the_harness_judges_a_bar_not_by_which_time_is_lower(speedup, verdict):
    interval = recall_floor.Interval(speedup, speedup, speedup)
    assert recall_floor.Race(1.0, "ef 16", interval, speedup).verdict == verdict


def test_the_probing_added_reads_as_a_signed_percentage_with_no_minus_zero():
    change = recall_floor.change
    assert [change(*pair) for pair in [(898611 * (1 + 1e-15), 898611), (898611 * (1 - 1e-15), 898611)]] == ["+0.0%"] * 2
    assert [change(1.043, 1.0), change(0.99, 1.0), change(1.0, 1.0)] == ["+4.3%", "-1.0%", "+0.0%"]
