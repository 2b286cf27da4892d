"""The recall-floor measurement (`harness.measure.recall_floor`) on a small synthetic memory: its rows, its budget
scaling and the miss factor it compares against."""

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
    configured = calibration.MISS_FACTOR
    factor = configured + 0.5
    rows = recall_floor.engine_rows(cells, queries, truth, factor, recall_floor.Setting(0.02, as_if=60_000))
    assert configured == calibration.MISS_FACTOR  # restored
    assert {(r.target, r.write, r.slept) for r in rows} == {
        (t, w, s) for t in recall_floor.TARGETS for w in ("bulk", "in order") for s in (False, True)
    }
    for row in rows:
        assert row.miss_factor == factor and 0 <= row.recall <= 1 and row.bytes_per_search > 0
        assert row.estimate is not None and row.low is not None and row.low <= row.estimate
        assert row.low >= row.target or row.reach > 1
