"""`magbench compare A B`: what changed between two runs, failing only on a regression beyond noise.

Compared per (section, system, dataset, encoder, size, parameters), over every timed section the runs share
(`RunResults.TIMED_SECTIONS`).

- **Drift.** A shared machine runs a whole run faster or slower, and a run times the systems measured on the same
  data together, interleaved: so a system's latency is judged against its drift, the median B/A ratio of the
  other systems' medians on the same data in that section (1 when there are none; a drift below 1 counts as 1: a
  quieter machine does not make a steady system a regression).
- **Latency** is a regression only when B's median (a system that hands each search between a library's threads,
  `registry.hands_off`: its `HAND_OFF_PERCENTILE`) exceeds A's times the drift by more than `latency_tolerance`
  (relative) and `LATENCY_FLOOR_MS` (absolute), *and* the slowdown lies outside both runs' noise: with several
  timing passes, B's fastest pass (divided by the drift) is slower than A's slowest pass; with one pass, a
  one-sided Mann–Whitney U test on the per-query latencies gives p < `alpha`. The drift keeps a busier machine
  from failing a run, the noise rule a jittery one, and the effect size a tiny but real difference.
- **Recall@10** is a regression when B is lower by more than `recall_tolerance` (absolute).
- A measurement timed over fewer than `MIN_QUERIES_PER_PASS` queries per pass is compared on recall only, and a
  latency regression must be shared by the system's other measurements in the section (`_shared_by_the_system`).

Verdicts that flipped are listed, and a difference between the two runs' machines or data is named: latency across
machines, and any figure across data, is not comparable.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.stats import mannwhitneyu
from tabulate import tabulate

from harness.output.results import Measurement, MeasurementKey, ResultsFileError, RunResults, Verdict
from harness.systems.registry import hands_off
from harness.verdicts.claims import UNMEASURED

ALPHA = 0.01
LATENCY_TOLERANCE = 0.5
"""Relative slowdown allowed beyond the drift: more than single measurements move between identical runs on a
shared machine, the drift accounted for (`magbench compare --all` of two runs of the same code shows how much)."""
LATENCY_FLOOR_MS = 0.05
"""A slowdown smaller than this is timer and interpreter jitter (the fastest searches, a needle haystack's, move by
a large share of themselves between identical runs), never a regression."""
MIN_QUERIES_PER_PASS = 20
"""A latency needs this many queries per timing pass to be compared: the median of a needle haystack's handful
per pass can move far beyond the drift between identical runs on a loaded machine."""
RECALL = "recall_at_10"
"""The metric of a recall change; every other metric is a latency (`p50_ms`, or a percentile's)."""
HAND_OFF_PERCENTILE = 10
"""The latency percentile a system answered on a library's own threads (embedded Chroma's) is compared at. Each of
its searches waits on many hand-offs between those threads, so another process on the CPU delays the searches it
overlaps many-fold while the systems searching on the calling thread, whose drift judges it, barely move; a slower
search slows the fastest searches too."""


@dataclass(frozen=True)
class Change:
    key: MeasurementKey
    metric: str
    before: float
    after: float
    regression: bool
    p_value: float | None = None
    drift: float = 1.0


@dataclass(frozen=True)
class Comparison:
    changes: list[Change]
    flips: list[str]
    machine_differences: list[str]
    data_differences: list[str] = field(default_factory=list)
    """What differs between the data the runs measured (`RunInfo.data_differences`): figures on other data are
    not a change of the code."""
    measured_by_one: int = 0
    """Verdicts only one of the runs measured (not a change: e.g. a --quick run against a full one)."""
    measured_by_neither: int = 0
    """Verdicts neither run measured (both left out the experiments that decide them)."""
    recall_only: int = 0
    """Measurements timed over too few queries to compare their latency (`MIN_QUERIES_PER_PASS`)."""
    edge_flips: list[str] = field(default_factory=list)
    """Verdicts that changed between verdicts one of the runs stands at the edge of (`Verdict.neighbours`):
    what a rerun of the same code may read, not a change."""

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
    shared = sorted(before.keys() & after.keys())
    for run, found in (("A", before), ("B", after)):
        for key in shared:
            _check_finite(run, key, found[key])
    recall_only = 0
    for key in shared:
        old, new = before[key], after[key]
        if min(map(len, old.pass_latencies_ns + new.pass_latencies_ns)) >= MIN_QUERIES_PER_PASS:
            drift = _drift(key, shared, before, after)
            changes.append(_latency_change(key, old, new, drift, latency_tolerance, alpha))
        else:
            recall_only += 1
        worse = new.recall_at_10 < old.recall_at_10 - recall_tolerance
        changes.append(Change(key, RECALL, old.recall_at_10, new.recall_at_10, worse))
    changes = _shared_by_the_system(changes, latency_tolerance)
    old_verdicts = {(v.claim, v.system): v for v in [*a.claims, *a.targets]}
    pairs = [
        (old_verdicts[(v.claim, v.system)], v) for v in [*b.claims, *b.targets] if (v.claim, v.system) in old_verdicts
    ]
    measured_both = [(old, v) for old, v in pairs if UNMEASURED not in (old.verdict, v.verdict)]
    neither = sum(old.verdict == v.verdict == UNMEASURED for old, v in pairs)
    changed = [(old, v) for old, v in measured_both if old.verdict != v.verdict]
    return Comparison(
        changes,
        [_flip(old, v) for old, v in changed if not _across_an_edge(old, v)],
        a.run.machine.differences(b.run.machine),
        a.run.data_differences(b.run),
        measured_by_one=len(pairs) - len(measured_both) - neither,
        measured_by_neither=neither,
        recall_only=recall_only,
        edge_flips=[_flip(old, v) for old, v in changed if _across_an_edge(old, v)],
    )


def _across_an_edge(old: Verdict, new: Verdict) -> bool:
    """Whether one run's verdict is one the other stands at the edge of (`Verdict.neighbours`)."""
    return old.verdict in new.neighbours or new.verdict in old.neighbours


def _flip(old: Verdict, new: Verdict) -> str:
    return f"{new.claim} / {new.system}: {old.verdict} → {new.verdict}"


def _check_finite(run: str, key: MeasurementKey, measurement: Measurement) -> None:
    """A figure compare reads that is NaN or infinite makes the file unusable: refused, never passed."""
    figures = [measurement.latency.p50_ms, measurement.recall_at_10, *measurement.latencies_ns]
    if not np.isfinite(np.asarray(figures, dtype=np.float64)).all():
        raise ResultsFileError(f"run {run}: {key} holds NaN or infinity in its latency or recall; rerun it")


def _drift(
    key: MeasurementKey,
    shared: list[MeasurementKey],
    before: dict[MeasurementKey, Measurement],
    after: dict[MeasurementKey, Measurement],
) -> float:
    """How much slower B's machine ran the other systems on the same data (same section, dataset, encoder
    and size, timed together with this one): the median B/A ratio of their medians; 1 when there are none."""
    ratios = [
        after[other].latency.p50_ms / before[other].latency.p50_ms
        for other in shared
        if other.same_data(key) and other.system != key.system and before[other].latency.p50_ms > 0
    ]
    return float(np.median(ratios)) if ratios else 1.0


def _latency_change(
    key: MeasurementKey, old: Measurement, new: Measurement, drift: float, tolerance: float, alpha: float
) -> Change:
    """Slower than the drift allows, beyond both runs' noise and the tolerance. A busier machine (drift
    above 1) excuses a slowdown; a quieter one (below 1) does not turn a steady system into a regression."""
    percentile = HAND_OFF_PERCENTILE if hands_off(key.system) else 50
    metric = f"p{percentile}_ms"
    old_ms, new_ms = (float(np.percentile(m.latencies_ns, percentile)) / 1e6 for m in (old, new))
    allowed = max(drift, 1.0)
    large = new_ms > old_ms * allowed * (1 + tolerance) and new_ms - old_ms > LATENCY_FLOOR_MS
    if len(old.pass_latencies_ns) > 1 and len(new.pass_latencies_ns) > 1:
        passes_old = np.asarray([np.percentile(p, percentile) for p in old.pass_latencies_ns])
        passes_new = np.asarray([np.percentile(p, percentile) for p in new.pass_latencies_ns]) / allowed
        p_value = float(mannwhitneyu(passes_new, passes_old, alternative="greater").pvalue)
        return Change(key, metric, old_ms, new_ms, large and passes_new.min() > passes_old.max(), p_value, drift)
    samples_old, samples_new = np.asarray(old.latencies_ns), np.asarray(new.latencies_ns) / allowed
    if len(samples_old) < 5 or len(samples_new) < 5:  # too few latencies for a test: the effect size alone decides
        return Change(key, metric, old_ms, new_ms, large, drift=drift)
    p_value = float(mannwhitneyu(samples_new, samples_old, alternative="greater").pvalue)
    return Change(key, metric, old_ms, new_ms, large and p_value < alpha, p_value, drift)


def _shared_by_the_system(changes: list[Change], tolerance: float) -> list[Change]:
    """Latency regressions that the system's measurements in the section show as a whole: the median of their
    drift-adjusted slowdowns is beyond the tolerance too. On a shared machine, a process running beside B can evict
    one measurement's data from the cache in every pass while the same system at its other sizes holds steady; a
    slower search slows a system at more than one of its sizes."""
    slowdowns: dict[tuple[str, str, str], list[float]] = {}
    for c in changes:
        if c.metric != RECALL and c.before > 0:
            slowdowns.setdefault(_family(c), []).append(c.after / (c.before * max(c.drift, 1.0)))
    return [
        replace(c, regression=False)
        if c.metric != RECALL and c.regression and np.median(slowdowns[_family(c)]) <= 1 + tolerance
        else c
        for c in changes
    ]


def _family(change: Change) -> tuple[str, str, str]:
    """A system's measurements in one section at one setting (every size and dataset)."""
    return change.key.section, change.key.system, change.key.params


def render(comparison: Comparison, *, everything: bool = False, latency_tolerance: float = LATENCY_TOLERANCE) -> str:
    """The changes as a table: every measurement with `everything`, else only regressions and changes beyond
    the tolerance (either way) or the recall tolerance, and a line saying how many were compared."""
    shown = [c for c in comparison.changes if everything or c.regression or _notable(c, latency_tolerance)]
    rows = [
        [
            str(c.key),
            c.metric,
            f"{c.before:.4g}",
            f"{c.after:.4g}",
            _delta(c),
            f"{c.drift:.2f}×" if c.metric != RECALL else "",
            "" if c.p_value is None else f"{c.p_value:.3g}",
            "REGRESSION" if c.regression else "",
        ]
        for c in shown
    ]
    compared = len({c.key for c in comparison.changes})
    recall_only = (
        f" ({comparison.recall_only} timed over fewer than {MIN_QUERIES_PER_PASS} queries per pass: recall only)"
        if comparison.recall_only
        else ""
    )
    text = f"{compared} measurements compared{recall_only}; " + (
        "all shown" if everything else f"{len(shown)} rows changed beyond the tolerance (--all shows every row)"
    )
    headers = ["measurement", "metric", "A", "B", "change", "drift", "p (B slower; passes)", "regression"]
    if rows:
        text += "\n\n" + str(tabulate(rows, headers=headers, tablefmt="github"))
    if comparison.machine_differences:
        text += (
            "\n\nWarning: the runs were made on different machines or package versions, so their latencies "
            "are not comparable:\n" + "\n".join(f"- {d}" for d in comparison.machine_differences)
        )
    if comparison.data_differences:
        text += "\n\nWarning: the runs measured different data, so their figures are not comparable:\n" + "\n".join(
            f"- {d}" for d in comparison.data_differences
        )
    if comparison.flips:
        text += "\n\nVerdicts that changed:\n" + "\n".join(f"- {f}" for f in comparison.flips)
    if comparison.edge_flips:
        text += "\n\nVerdicts that stand at an edge and read the other side of it (a rerun of the same code may " + (
            "read either; not a change):\n" + "\n".join(f"- {f}" for f in comparison.edge_flips)
        )
    if comparison.measured_by_one:
        text += f"\n\n{comparison.measured_by_one} verdicts were measured by only one of the runs (not compared)."
    if comparison.measured_by_neither:
        text += f"\n\n{comparison.measured_by_neither} verdicts were measured by neither run."
    return text


def _notable(change: Change, tolerance: float) -> bool:
    """A latency that moved by more than the tolerance beyond the drift (either way), or a recall change."""
    if change.metric == RECALL:
        return abs(change.after - change.before) > 0.005
    if not change.before:
        return False
    relative = change.after / (change.before * max(change.drift, 1.0))
    return relative > 1 + tolerance or relative < 1 / (1 + tolerance)


def _delta(change: Change) -> str:
    if change.metric != RECALL:
        return f"{(change.after / change.before - 1) * 100:+.1f}%" if change.before else "n/a"
    return f"{change.after - change.before:+.4f}"
