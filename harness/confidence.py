"""Bootstrap confidence intervals for latency figures, and verdicts that admit they cannot tell.

Each measurement's latencies form a matrix, timing passes × queries. A bootstrap round resamples
both with replacement (`ROUNDS` rounds, seeded) — the passes, so that the machine's drift between
passes widens the interval, and the queries — and takes the median of what it drew. A figure
computed from medians (a ratio, a slope) gets one value per round, and its 95% interval is the
2.5th–97.5th percentile of those. A bar inside the interval gives INCONCLUSIVE, never a verdict
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


PassLatencies = Sequence[Sequence[int]]
"""One measurement's latencies in ns: one row per timing pass, one column per query."""


def _matrix(pass_latencies_ns: PassLatencies) -> np.ndarray:
    values = np.asarray(pass_latencies_ns, dtype=np.float64) / 1e6
    if values.ndim != 2 or values.size == 0:
        raise LookupError("a measurement without per-pass, per-query latencies")
    return values


def resampled_medians(measurements: Sequence[PassLatencies], *, seed: int = 0) -> np.ndarray:
    """Medians in ms of `ROUNDS` resamples (passes and queries) of each measurement: shape (ROUNDS, measurements)."""
    rng = np.random.default_rng(seed)
    columns = []
    for latencies in measurements:
        values = _matrix(latencies)
        passes, queries = values.shape
        rows = rng.integers(0, passes, size=(ROUNDS, passes, 1))
        columns.append(np.median(values[rows, rng.integers(0, queries, size=(ROUNDS, 1, queries))], axis=(1, 2)))
    return np.stack(columns, axis=1)


def estimate(
    measurements: Sequence[PassLatencies], figure: Callable[[np.ndarray], np.ndarray], *, seed: int = 0
) -> Estimate:
    """`figure` maps an array of medians (last axis: the measurements) to one value per row."""
    point = np.asarray([np.median(_matrix(m)) for m in measurements])
    rounds = figure(resampled_medians(measurements, seed=seed))
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(rounds, [tail, 100 - tail])
    return Estimate(float(figure(point[None, :])[0]), float(low), float(high))


def judge(value: Estimate, bar: float, *, at_least: bool) -> str:
    """SUPPORTED when the whole interval meets the bar, NOT SUPPORTED when none of it does."""
    meets_low, meets_high = (value.low >= bar, value.high >= bar) if at_least else (value.high <= bar, value.low <= bar)
    if meets_low:
        return SUPPORTED
    return INCONCLUSIVE if meets_high else REFUTED
