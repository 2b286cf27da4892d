"""`magbench compare A B` of two perf summaries (`output/perf_summary.py`): which ratios to a same-run baseline moved.

A ratio moved beyond noise when B's is worse than A's by more than `tolerance` (relative) *and* the two runs'
paired rounds do not overlap: B's best quartile is worse than A's worst. The ratio cancels the machine's load, which
slows a figure and its baseline alike; the quartiles keep a jittery run from failing; the tolerance keeps a small
real change from failing. A ratio measured without paired rounds is judged by the tolerance alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from tabulate import tabulate

from harness.output.perf_summary import PerfSummary, Ratio

RATIO_TOLERANCE = 0.2
"""Relative move of a same-run ratio allowed: more than ratios moved between two runs of the same code on this
shared machine (`magbench compare --all` of two such runs shows how much)."""


@dataclass(frozen=True)
class RatioChange:
    name: str
    before: Ratio
    after: Ratio
    tolerance: float

    @property
    def worse_by(self) -> float:
        """How many times worse B's ratio is than A's (below 1: better)."""
        before, after = self.before.value, self.after.value
        return after / before if self.before.better == "lower" else before / after

    @property
    def beyond_noise(self) -> bool:
        """The paired rounds of the two runs do not overlap."""
        before, after = self.before, self.after
        return after.low > before.high or after.high < before.low

    @property
    def regression(self) -> bool:
        return self.worse_by > 1 + self.tolerance and self.beyond_noise

    @property
    def improvement(self) -> bool:
        return 1 / self.worse_by > 1 + self.tolerance and self.beyond_noise


def compare_ratios(a: PerfSummary, b: PerfSummary, *, tolerance: float = RATIO_TOLERANCE) -> list[RatioChange]:
    """Every ratio both summaries hold, in name order, with which way it went."""
    return [
        RatioChange(name, a.ratios[name], b.ratios[name], tolerance)
        for name in sorted(a.ratios.keys() & b.ratios.keys())
    ]


def render_ratios(changes: list[RatioChange], *, everything: bool) -> str:
    """The ratios that moved beyond noise and tolerance (`everything`: every shared ratio)."""
    shown = [c for c in changes if everything or c.regression or c.improvement]
    rows = [
        [
            c.name,
            f"{c.before.value:.3g} ({c.before.low:.3g}–{c.before.high:.3g})",
            f"{c.after.value:.3g} ({c.after.low:.3g}–{c.after.high:.3g})",
            c.before.better,
            "REGRESSION" if c.regression else "better" if c.improvement else "",
        ]
        for c in shown
    ]
    if not rows:
        return f"no ratio moved beyond noise and tolerance ({len(changes)} compared)"
    headers = ["ratio to its same-run baseline", "A (quartiles of rounds)", "B (quartiles of rounds)", "better", ""]
    table: str = tabulate(rows, headers=headers, tablefmt="github")
    return table
