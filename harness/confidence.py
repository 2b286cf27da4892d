"""Bootstrap confidence intervals for latency figures, and verdicts that admit they cannot tell.

Each measurement's latencies form a matrix, timing passes × queries. A bootstrap round resamples
both with replacement (`ROUNDS` rounds, seeded) — the passes, so that the machine's drift between
passes widens the interval, and the queries — and takes the median of what it drew. The draws are
paired: measurements of one section were timed in the same interleaved passes on the same queries,
so a round takes the same passes and query positions from each of them (a slow pass slows both
sides of a ratio, as it did on the machine). A figure computed from medians (a ratio, a slope) gets
one value per round, and its 95% interval is the 2.5th–97.5th percentile of those. A bootstrap over a
handful of passes under-covers, so the interval is widened to a Student-t interval over the per-pass
figures where that is wider. An interval that reaches into the bar's indifference zone (`MARGIN`)
gives INCONCLUSIVE, not a verdict that a rerun could flip. The runner times more passes while the
medians are unsettled (`unsettled`), so that a loaded machine narrows its intervals by measuring longer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as t_distribution

ROUNDS = 1000
LEVEL = 0.95
SUPPORTED, REFUTED, INCONCLUSIVE = "SUPPORTED", "NOT SUPPORTED", "INCONCLUSIVE"
MARGIN = 0.1
"""A bar is judged with an indifference zone of ±10 %: between two identical default runs here a median
moved by up to 16 % (the engine's p50 at 100K: 0.564 vs 0.656 ms) while each run's interval was
narrower, so an interval that ends within 10 % of the bar is too close to call."""


SETTLED = 0.05
"""Timing goes on past the planned passes (up to the plan's `max_passes`) while any measurement that decides
a verdict has its median known less precisely than ±5 %: half the indifference zone, so that on a loaded
machine a figure well away from its bar gets a verdict instead of an interval widened by a few slow passes,
and one noisy measurement cannot decide a verdict on too few passes. A quiet machine stops at the planned
passes. (Deciding when to stop from the data itself makes the interval a little optimistic; the zone absorbs
that.)"""


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


def resampled_medians(matrices: Sequence[np.ndarray], *, seed: int = 0) -> np.ndarray:
    """Medians in ms of `ROUNDS` resamples (passes and queries) of each passes × queries matrix in ms:
    shape (ROUNDS, measurements)."""
    rng = np.random.default_rng(seed)
    draws: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    columns = []
    for values in matrices:
        passes, queries = values.shape
        if values.shape not in draws:  # one draw per shape: measurements timed together share it
            draws[values.shape] = (
                rng.integers(0, passes, size=(ROUNDS, passes, 1)),
                rng.integers(0, queries, size=(ROUNDS, 1, queries)),
            )
        rows, columns_drawn = draws[values.shape]
        columns.append(np.median(values[rows, columns_drawn], axis=(1, 2)))
    return np.stack(columns, axis=1)


def estimate(
    measurements: Sequence[PassLatencies],
    figure: Callable[[np.ndarray], np.ndarray],
    *,
    seed: int = 0,
    positive: bool = True,
) -> Estimate:
    """`figure` maps an array of medians (last axis: the measurements) to one value per row. A `positive`
    figure (a latency, a ratio of latencies) gets its Student-t widening on the log scale, so its interval
    stays above zero and is as wide in "× slower" as in "× faster"; a slope is not positive."""
    matrices = [_matrix(m) for m in measurements]
    point = np.asarray([np.median(m) for m in matrices])
    rounds = figure(resampled_medians(matrices, seed=seed))
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(rounds, [tail, 100 - tail])
    passes = {len(m) for m in matrices}
    if len(passes) == 1 and passes.pop() > 1:  # timed together: the figure of each pass
        per_pass = figure(np.stack([np.median(m, axis=1) for m in matrices], axis=1))
        scale, back = (np.log, np.exp) if positive else (np.asarray, np.asarray)
        center, half = float(scale(per_pass).mean()), _half_width(scale(per_pass))
        low, high = min(low, float(back(center - half))), max(high, float(back(center + half)))
    return Estimate(float(figure(point[None, :])[0]), float(low), float(high))


def unsettled(measurements: Sequence[PassLatencies]) -> bool:
    """Whether any of `measurements` (those that decide a verdict) still has its median known less
    precisely than ±`SETTLED`: the Student-t half-width over its per-pass medians, relative to their mean
    (each needs at least two passes)."""
    per_passes = (np.median(_matrix(m), axis=1) for m in measurements)
    return any(_half_width(per_pass) / per_pass.mean() > SETTLED for per_pass in per_passes)


NOISY = 0.5
"""A measurement whose slowest timing pass has a median more than 50 % above the median of its pass
medians was disturbed beyond the run's usual noise (a burst of load in one pass): reports name it beside
every verdict it decides."""


def noisy(pass_latencies_ns: PassLatencies) -> bool:
    """Whether one pass's median stands out from the others' by more than `NOISY` (three passes or more)."""
    medians = [float(np.median(p)) for p in pass_latencies_ns if len(p)]
    return len(medians) >= 3 and max(medians) > (1 + NOISY) * float(np.median(medians))


def _half_width(per_pass: np.ndarray) -> float:
    """Half the Student-t `LEVEL` interval of the mean of per-pass figures."""
    count = len(per_pass)
    return float(t_distribution.ppf(1 - (1 - LEVEL) / 2, count - 1) * per_pass.std(ddof=1) / np.sqrt(count))


def judge(value: Estimate, bar: float, *, at_least: bool) -> str:
    """SUPPORTED when the whole interval clears the bar's indifference zone (bar ÷ or × 1 + `MARGIN`) on
    the good side, NOT SUPPORTED when it clears it on the bad side, INCONCLUSIVE otherwise."""
    low_bar, high_bar = sorted((bar / (1 + MARGIN), bar * (1 + MARGIN)))
    if at_least:
        return SUPPORTED if value.low >= high_bar else REFUTED if value.high < low_bar else INCONCLUSIVE
    return SUPPORTED if value.high <= low_bar else REFUTED if value.low > high_bar else INCONCLUSIVE
