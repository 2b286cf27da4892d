"""Bootstrap confidence intervals for latency figures, and verdicts that admit they cannot tell.

Each measurement's per-query latencies are resampled with replacement (`ROUNDS` times, seeded): a
figure computed from medians (a ratio, a slope) gets one value per round, and its 95% interval is
the 2.5th–97.5th percentile of those. A bar inside the interval gives INCONCLUSIVE, never a verdict
that a rerun could flip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

ROUNDS = 1000
LEVEL = 0.95
SUPPORTED, REFUTED, INCONCLUSIVE = "SUPPORTED", "NOT SUPPORTED", "INCONCLUSIVE"


@dataclass(frozen=True)
class Estimate:
    """A figure and its bootstrap interval."""

    value: float
    low: float
    high: float

    def text(self, unit: str = "", digits: int = 2) -> str:
        return f"{self.value:.{digits}f}{unit} (95% CI {self.low:.{digits}f}–{self.high:.{digits}f}{unit})"


def resampled_medians(latencies_ns: Sequence[Sequence[int]], *, seed: int = 0) -> np.ndarray:
    """Medians in ms of `ROUNDS` resamples of each measurement's latencies: shape (ROUNDS, len(latencies))."""
    rng = np.random.default_rng(seed)
    columns = []
    for samples in latencies_ns:
        values = np.asarray(samples, dtype=np.float64) / 1e6
        if len(values) == 0:
            raise LookupError("a measurement without per-query latencies")
        picks = rng.integers(0, len(values), size=(ROUNDS, len(values)))
        columns.append(np.median(values[picks], axis=1))
    return np.stack(columns, axis=1)


def estimate(
    latencies_ns: Sequence[Sequence[int]], figure: Callable[[np.ndarray], np.ndarray], *, seed: int = 0
) -> Estimate:
    """`figure` maps an array of medians (last axis: the measurements) to one value per row."""
    point = np.asarray([np.median(np.asarray(s, dtype=np.float64) / 1e6) for s in latencies_ns])
    rounds = figure(resampled_medians(latencies_ns, seed=seed))
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(rounds, [tail, 100 - tail])
    return Estimate(float(figure(point[None, :])[0]), float(low), float(high))


def judge(value: Estimate, bar: float, *, at_least: bool) -> str:
    """SUPPORTED when the whole interval meets the bar, NOT SUPPORTED when none of it does."""
    meets_low, meets_high = (value.low >= bar, value.high >= bar) if at_least else (value.high <= bar, value.low <= bar)
    if meets_low:
        return SUPPORTED
    return INCONCLUSIVE if meets_high else REFUTED
