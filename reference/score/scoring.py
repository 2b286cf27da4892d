"""The `memory`-mode score: similarity blended with importance, recency and access."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..common.config import MemoryConfig

Clock = Callable[[], float]
"""Seconds since the epoch; injectable so tests can travel in time."""

SECONDS_PER_DAY = 86_400.0


def system_clock() -> float:
    return time.time()


def recency(timestamps: np.ndarray, now: float, half_life_days: float) -> np.ndarray:
    """0.5 ** (age / half-life); a timestamp in the future counts as age 0."""
    age_days = np.maximum(now - timestamps, 0.0) / SECONDS_PER_DAY
    return np.power(0.5, age_days / half_life_days)


def access_level(counts: np.ndarray, saturation: int) -> np.ndarray:
    """log-scaled access count in [0, 1], reaching 1 at `saturation` returns."""
    level: np.ndarray = np.minimum(np.log1p(counts) / np.log1p(saturation), 1.0)
    return level


def memory_scores(
    similarity: np.ndarray,
    importance: np.ndarray,
    timestamps: np.ndarray,
    access_counts: np.ndarray,
    *,
    now: float,
    config: MemoryConfig,
) -> np.ndarray:
    """w_s·similarity + w_i·importance + w_r·recency + w_a·access (weights from the config)."""
    w = config.weights
    return (
        w.similarity * similarity
        + w.importance * importance
        + w.recency * recency(timestamps, now, config.half_life_days)
        + w.access * access_level(access_counts, config.access_saturation)
    )
