import numpy as np
import pytest

from reference.common.config import MemoryConfig, ScoringWeights
from reference.common.errors import InvalidInputError
from reference.score.scoring import SECONDS_PER_DAY, access_level, memory_scores, recency


def test_recency_halves_every_half_life():
    now = 100 * SECONDS_PER_DAY
    ages = np.array([0, 7, 14, -3]) * SECONDS_PER_DAY
    np.testing.assert_allclose(recency(now - ages, now, 7.0), [1, 0.5, 0.25, 1])


def test_access_level_is_zero_unseen_and_saturates_at_one():
    np.testing.assert_allclose(access_level(np.array([0, 10, 1000]), 10), [0, 1, 1])
    assert 0 < access_level(np.array([1]), 10)[0] < 1


def test_memory_score_by_hand():
    now = 1_000 * SECONDS_PER_DAY
    score = memory_scores(
        np.array([0.8]),
        np.array([0.9]),
        np.array([now - 7 * SECONDS_PER_DAY]),
        np.array([10]),
        now=now,
        config=MemoryConfig(),
    )
    assert score[0] == pytest.approx(0.6 * 0.8 + 0.2 * 0.9 + 0.15 * 0.5 + 0.05 * 1.0)


def test_weights_must_sum_to_one():
    with pytest.raises(InvalidInputError):
        ScoringWeights(similarity=0.9)
