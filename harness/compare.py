"""`magbench compare A B`: what changed between two runs, failing only on a regression beyond noise.

Compared per (section, system, dataset, encoder, size, parameters), over every timed section the runs
share (`RunResults.TIMED_SECTIONS`): latency is a regression only when B's per-query
latencies are slower than A's by a one-sided Mann–Whitney U test (p < `alpha`) *and* B's median is
more than `latency_tolerance` (relative) above A's — the test keeps a noisy machine from failing a
run, the effect size keeps a tiny but significant difference from failing it. Recall@10 is a
regression when B is lower by more than `recall_tolerance` (absolute). Verdicts that flipped are
listed, and a difference between the two runs' machines is named: latency across machines is not
comparable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu
from tabulate import tabulate

from .results import Measurement, RunResults

ALPHA = 0.01


@dataclass(frozen=True)
class Change:
    key: str
    metric: str
    before: float
    after: float
    regression: bool
    p_value: float | None = None


@dataclass(frozen=True)
class Comparison:
    changes: list[Change]
    flips: list[str]
    machine_differences: list[str]

    @property
    def shared(self) -> bool:
        return bool(self.changes)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regression]


def compare(
    a: RunResults,
    b: RunResults,
    *,
    latency_tolerance: float,
    recall_tolerance: float,
    alpha: float = ALPHA,
) -> Comparison:
    """The metric changes (regressions flagged), the verdicts that flipped, and how the machines differ."""
    changes = []
    before, after = a.measurements(), b.measurements()
    for key in sorted(before.keys() & after.keys()):
        old, new = before[key], after[key]
        changes.append(_latency_change(key, old, new, latency_tolerance, alpha))
        worse = new.recall_at_10 < old.recall_at_10 - recall_tolerance
        changes.append(Change(key, "recall_at_10", old.recall_at_10, new.recall_at_10, worse))
    old_verdicts = {(v.claim, v.system): v.verdict for v in [*a.claims, *a.targets]}
    flips = [
        f"{v.claim} / {v.system}: {old_verdicts[(v.claim, v.system)]} → {v.verdict}"
        for v in [*b.claims, *b.targets]
        if old_verdicts.get((v.claim, v.system), v.verdict) != v.verdict
    ]
    return Comparison(changes, flips, a.run.machine.differences(b.run.machine))


def _latency_change(key: str, old: Measurement, new: Measurement, tolerance: float, alpha: float) -> Change:
    """Slower beyond both the noise (a one-sided rank test on per-query latencies) and the tolerance."""
    p50_old, p50_new = old.latency.p50_ms, new.latency.p50_ms
    large = p50_new > p50_old * (1 + tolerance)
    samples_old, samples_new = old.latencies_ns, new.latencies_ns
    if len(samples_old) < 5 or len(samples_new) < 5:  # too few latencies for a test: the effect size alone decides
        return Change(key, "p50_ms", p50_old, p50_new, large)
    p_value = float(mannwhitneyu(np.asarray(samples_new), np.asarray(samples_old), alternative="greater").pvalue)
    return Change(key, "p50_ms", p50_old, p50_new, large and p_value < alpha, p_value)


def render(comparison: Comparison) -> str:
    rows = [
        [
            c.key,
            c.metric,
            f"{c.before:.4g}",
            f"{c.after:.4g}",
            _delta(c),
            "" if c.p_value is None else f"{c.p_value:.3g}",
            "REGRESSION" if c.regression else "",
        ]
        for c in comparison.changes
    ]
    text = tabulate(rows, headers=["measurement", "metric", "A", "B", "change", "p (B slower)", ""], tablefmt="github")
    if comparison.machine_differences:
        text += (
            "\n\nWarning: the runs were made on different machines or package versions, so their latencies "
            "are not comparable:\n" + "\n".join(f"- {d}" for d in comparison.machine_differences)
        )
    if comparison.flips:
        text += "\n\nVerdicts that changed:\n" + "\n".join(f"- {f}" for f in comparison.flips)
    return text


def _delta(change: Change) -> str:
    if change.metric == "p50_ms":
        return f"{(change.after / change.before - 1) * 100:+.1f}%" if change.before else "n/a"
    return f"{change.after - change.before:+.4f}"
