"""How fast this machine goes now against the pace the plan's seconds were measured at, before a run starts: a
short fixed probe (a brute-force search and a Python loop, on one thread, the harness's two kinds of work) timed a
few times against its time there. A shared machine's load moves a run's time more than anything the plan can
know, so the run plans at the measured pace and says the spread of the probe's passes beside it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

REFERENCE_PROBE_S = 0.035
"""The probe's median seconds at the pace `work.DEFAULT_SECONDS` were measured at: the probe's time before a quick
run here times that run's seconds planned over seconds taken (the corpus's first encoding apart)."""
DRIFT = (0.7, 1.4)
"""How far a shared machine's pace moved during a quick run here against the probe taken before it (the probe
repeated through the run): the plan's range widens the probe's own spread by it."""
PROBE_PASSES = 6
"""Timed passes of the probe, after one untimed pass that warms the caches."""


@dataclass(frozen=True)
class Pace:
    """Seconds this machine takes per second planned, as the probe's passes read it: their median, and the
    fastest and slowest pass (how much the load moved while it was measured)."""

    median: float
    low: float
    high: float

    def span(self, seconds: float) -> tuple[float, float, float]:
        """`seconds` planned at this pace: expected, and the range from the fastest pass slowed least to the
        slowest slowed most (`DRIFT`)."""
        return seconds * self.median, seconds * self.low * DRIFT[0], seconds * self.high * DRIFT[1]

    def __post_init__(self) -> None:
        if not 0 < self.low <= self.median <= self.high:
            raise ValueError(f"a pace is positive with low <= median <= high, got {self}")


PLANNED_PACE = Pace(1.0, 1.0, 1.0)
"""The pace the plan's seconds were measured at (no probe taken)."""


def probe() -> int:
    """A fixed piece of the harness's work: 32 queries searched exactly over 4,000 cells of 384 dimensions, and
    a Python loop."""
    rng = np.random.default_rng(0)
    cells = rng.standard_normal((4_000, 384), dtype=np.float32)
    total = 0
    for query in rng.standard_normal((32, 384), dtype=np.float32):
        total += int(np.argpartition(-(cells @ query), 10)[:10].sum())
    return total + sum(i * i % 7 for i in range(60_000))


def measure_pace(
    passes: int = PROBE_PASSES,
    reference_s: float = REFERENCE_PROBE_S,
    clock: Callable[[], float] = time.perf_counter,
) -> Pace:
    """The probe timed `passes` times (after a warm-up) on one BLAS thread, each pass's time over `reference_s`."""
    with threadpool_limits(limits=1):
        probe()
        times = []
        for _ in range(passes):
            start = clock()
            probe()
            times.append(clock() - start)
    return Pace(statistics.median(times) / reference_s, min(times) / reference_s, max(times) / reference_s)
