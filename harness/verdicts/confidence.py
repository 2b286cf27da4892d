"""Bootstrap confidence intervals for latency figures, and verdicts that admit they cannot tell.

Each measurement's latencies form a matrix, timing passes × queries (every pass times the same queries in the
same order). A verdict reads each query's fastest pass (`best_of_passes`), as ann-benchmarks keeps the best of
its runs: load on a shared machine only ever slows a pass, and a verdict is about the code, not the load (pooled
over every pass, the medians of two identical runs on a loaded machine can read different verdicts). A figure
computed from medians (a ratio,
a slope) gets one value per bootstrap round (`ROUNDS`, seeded), which resamples the queries, the same query
positions for measurements timed on the same queries; its 95% interval is the 2.5th–97.5th percentile. An
interval that reaches into the bar's indifference zone (`MARGIN`, which absorbs what moves between runs)
gives INCONCLUSIVE, not a verdict that a rerun could flip. A bootstrap within one run cannot see what moves
between runs (the arena's layout, the machine's state), so a positive figure's interval is widened by
`BETWEEN_RUNS`, measured across identical runs. The harness times more passes while the pass medians are
unsettled (`unsettled`), so that a loaded machine gets more chances at an unloaded pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
from scipy.stats import norm
from scipy.stats import t as t_distribution

ROUNDS = 1000
LEVEL = 0.95
SUPPORTED, REFUTED, INCONCLUSIVE = "SUPPORTED", "NOT SUPPORTED", "INCONCLUSIVE"
MARGIN = 0.1
"""A bar is judged with an indifference zone of ±10 %: a median moves more between identical runs than each run's
interval is wide, so an interval that ends within 10 % of the bar is too close to call."""


BETWEEN_RUNS = 0.06
"""The log-scale standard deviation of a verdict's figure between identical default runs (a high percentile of
the verdicts' figures), added to each positive figure's interval: a run's own interval is narrower than what
moves between runs, so without it a verdict well inside its bar could read otherwise on a rerun."""


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
        """ "1.23× (95% CI 1.10–1.40×)": with up to two more digits while the interval's ends would read alike
        ("within ±…" when they still do), and "to" between ends that carry a minus sign."""
        places = next((d for d in range(digits, digits + 3) if round(self.low, d) != round(self.high, d)), None)
        if places is None:
            most = digits + 2
            return f"{_signed(self.value, most)}{unit} (95% CI within ±{0.5 * 10**-most:.{most + 1}f}{unit})"
        low, high = _signed(self.low, places), _signed(self.high, places)
        between = " to " if low.startswith("−") or high.startswith("−") else "–"
        return f"{_signed(self.value, places)}{unit} (95% CI {low}{between}{high}{unit})"

    def scaled(self, factor: float) -> Estimate:
        return Estimate(self.value * factor, self.low * factor, self.high * factor)


def _signed(value: float, digits: int) -> str:
    """A figure with a true minus sign (a hyphen reads as a dash between an interval's ends), none on a zero."""
    rounded = round(value, digits) + 0.0  # -0.0 + 0.0 is 0.0
    return f"{rounded:.{digits}f}".replace("-", "−")


@dataclass(frozen=True)
class Judgement:
    """A verdict and those a rerun of the same code may read: the verdicts its figure gets when moved by one
    `BETWEEN_RUNS` standard deviation either way, its own among them. Two identical runs can put the end of
    an interval either side of a verdict's edge: a threshold cannot keep a figure that sits on it from reading
    either side, so such a verdict is named as standing at the edge."""

    verdict: str
    reachable: frozenset[str]

    @property
    def neighbours(self) -> tuple[str, ...]:
        """The other verdicts a rerun may read (none: the verdict is not at an edge)."""
        return tuple(sorted(self.reachable - {self.verdict}))


PassLatencies = Sequence[Sequence[int]]
"""One measurement's latencies in ns: one row per timing pass, one column per query."""


def _matrix(pass_latencies_ns: PassLatencies) -> np.ndarray:
    values = np.asarray(pass_latencies_ns, dtype=np.float64) / 1e6
    if values.ndim != 2 or values.size == 0:
        raise LookupError("a measurement without per-pass, per-query latencies")
    return values


def best_of_passes(values: np.ndarray) -> np.ndarray:
    """Each query's fastest time over the passes (a passes × queries matrix in ms): what the code costs when
    the machine lets it run, as ann-benchmarks keeps the best of its runs. Load only ever slows a pass."""
    best: np.ndarray = values.min(axis=0)
    return best


def resampled_medians(matrices: Sequence[np.ndarray], *, seed: int = 0) -> np.ndarray:
    """Medians in ms of `ROUNDS` resamples of the queries of each measurement's best-of-passes latencies:
    shape (ROUNDS, measurements). Measurements with as many queries share each draw (they were timed on the
    same queries)."""
    rng = np.random.default_rng(seed)
    draws: dict[int, np.ndarray] = {}
    columns = []
    for values in matrices:
        best = best_of_passes(values)
        if len(best) not in draws:
            draws[len(best)] = rng.integers(0, len(best), size=(ROUNDS, len(best)))
        columns.append(np.median(best[draws[len(best)]], axis=1))
    return np.stack(columns, axis=1)


def estimate(
    measurements: Sequence[PassLatencies],
    figure: Callable[[np.ndarray], np.ndarray],
    *,
    seed: int = 0,
    positive: bool = True,
) -> Estimate:
    """`figure` maps an array of medians (last axis: the measurements) to one value per row; its value is
    computed from each measurement's median best-of-passes latency and its interval from query resamples. A
    `positive` figure (a latency, a ratio of latencies) has its interval widened on the log scale by what moves
    between runs (`BETWEEN_RUNS`), so that it stays above zero; a slope is not positive."""
    matrices = [_matrix(m) for m in measurements]
    point = np.asarray([np.median(best_of_passes(m)) for m in matrices])
    value = float(figure(point[None, :])[0])
    rounds = figure(resampled_medians(matrices, seed=seed))
    tail = (1 - LEVEL) / 2 * 100
    low, high = (float(x) for x in np.percentile(rounds, [tail, 100 - tail]))
    if positive and min(value, low) > 0:
        runs = norm.ppf(1 - (1 - LEVEL) / 2) * BETWEEN_RUNS
        low = value * float(np.exp(-np.hypot(np.log(value / low), runs)))
        high = value * float(np.exp(np.hypot(np.log(high / value), runs)))
    return Estimate(value, low, high)


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


def judge(value: Estimate, bar: float, *, at_least: bool) -> Judgement:
    """SUPPORTED when the whole interval clears the bar's indifference zone (bar ÷ or × 1 + `MARGIN`) on
    the good side, NOT SUPPORTED when it clears it on the bad side, INCONCLUSIVE otherwise; and the verdicts
    the figure would get moved by one `BETWEEN_RUNS` either way (what a rerun of the same code may read)."""
    verdicts = [_verdict(value.scaled(float(np.exp(shift * BETWEEN_RUNS))), bar, at_least) for shift in (0, -1, 1)]
    return Judgement(verdicts[0], frozenset(verdicts))


def _verdict(value: Estimate, bar: float, at_least: bool) -> str:
    low_bar, high_bar = sorted((bar / (1 + MARGIN), bar * (1 + MARGIN)))
    if at_least:
        return SUPPORTED if value.low >= high_bar else REFUTED if value.high < low_bar else INCONCLUSIVE
    return SUPPORTED if value.high <= low_bar else REFUTED if value.low > high_bar else INCONCLUSIVE


def certain(verdict: str) -> Judgement:
    """A verdict on a figure that an identical run reproduces exactly (a recall, a count)."""
    return Judgement(verdict, frozenset({verdict}))


def all_of(judgements: Sequence[Judgement]) -> Judgement:
    """Several conditions together: refuted if any is, supported if all are, else inconclusive; a rerun may
    read any combination of what each condition may."""
    return Judgement(
        _combined([j.verdict for j in judgements]),
        frozenset(_combined(each) for each in product(*(j.reachable for j in judgements))),
    )


def _combined(verdicts: Sequence[str]) -> str:
    if REFUTED in verdicts:
        return REFUTED
    return SUPPORTED if all(v == SUPPORTED for v in verdicts) else INCONCLUSIVE
