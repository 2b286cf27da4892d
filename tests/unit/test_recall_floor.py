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


class _Steady:
    """A stand-in for a search's `Pass` that the patched race reads as taking `seconds` a query (never run)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


def test_the_race_times_hnsw_at_the_engines_recall_between_its_neighbouring_points(monkeypatch):
    hnsw = recall_floor.Hnsw(None, [(10, 0.95, 0.0), (16, 0.97, 0.0), (24, 0.99, 0.0)])
    monkeypatch.setattr(recall_floor.Hnsw, "search", lambda self, ef: _Steady({10: 1.0, 16: 2.0, 24: 4.0}[ef]))
    raced = {}

    def race(searches, queries):
        raced.update(searches)
        return {name: recall_floor.Timed([], search.seconds) for name, search in searches.items()}

    monkeypatch.setattr(recall_floor, "raced", race)
    queries = np.zeros((3, 4), dtype=np.float32)
    assert hnsw.race(_Steady(2.5), queries, 0.98) == recall_floor.Race(2.5, 3.0, "ef 16–24 interpolated")
    assert {search.seconds for search in raced.values()} == {2.5, 2.0, 4.0}  # the engine raced with both points
    assert hnsw.race(_Steady(0.5), queries, 0.97) == recall_floor.Race(0.5, 2.0, "ef 16")
    assert hnsw.race(_Steady(0.5), queries, 0.90) == recall_floor.Race(0.5, 1.0, "ef 10")  # the cheapest reads more
    assert hnsw.race(_Steady(0.5), queries, 0.995) is None
