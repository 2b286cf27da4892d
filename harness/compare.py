"""`magbench compare A B`: what changed between two runs, failing only on a regression beyond noise.

Compared per (section, system, dataset, encoder, size, parameters), over every section the runs share
(scaling, growing, needles, beir, realtext): latency is a regression only when B's per-query
latencies are slower than A's by a one-sided Mann–Whitney U test (p < `alpha`) *and* B's median is
more than `latency_tolerance` (relative) above A's — the test keeps a noisy machine from failing a
run, the effect size keeps a tiny but significant difference from failing it. Recall@10 is a
regression when B is lower by more than `recall_tolerance` (absolute). Verdicts that flipped are
listed, and a difference between the two runs' machines is named: latency across machines is not
comparable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import mannwhitneyu
from tabulate import tabulate

SECTIONS = ("scaling", "growing", "needles", "beir", "realtext")
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


def load_results(run: str | Path) -> dict[str, Any]:
    path = Path(run)
    path = path / "results.json" if path.is_dir() else path
    if not path.is_file():
        raise FileNotFoundError(f"no results.json at {path}")
    return json.loads(path.read_text())


def compare(
    a: dict[str, Any],
    b: dict[str, Any],
    *,
    latency_tolerance: float,
    recall_tolerance: float,
    alpha: float = ALPHA,
) -> Comparison:
    """The metric changes (regressions flagged), the verdicts that flipped, and how the machines differ."""
    changes = []
    before, after = _index(a), _index(b)
    for key in sorted(before.keys() & after.keys()):
        old, new = before[key], after[key]
        changes.append(_latency_change(key, old, new, latency_tolerance, alpha))
        worse = new["recall_at_10"] < old["recall_at_10"] - recall_tolerance
        changes.append(Change(key, "recall_at_10", old["recall_at_10"], new["recall_at_10"], worse))
    old_verdicts = {(v["claim"], v["system"]): v["verdict"] for v in a.get("claims", []) + a.get("targets", [])}
    flips = [
        f"{claim} / {system}: {old_verdicts[(claim, system)]} → {v['verdict']}"
        for v in b.get("claims", []) + b.get("targets", [])
        for claim, system in [(v["claim"], v["system"])]
        if (claim, system) in old_verdicts and old_verdicts[(claim, system)] != v["verdict"]
    ]
    return Comparison(changes, flips, _machine_differences(a, b))


def _latency_change(key: str, old: dict[str, Any], new: dict[str, Any], tolerance: float, alpha: float) -> Change:
    """Slower beyond both the noise (a one-sided rank test on per-query latencies) and the tolerance."""
    p50_old, p50_new = old["latency"]["p50_ms"], new["latency"]["p50_ms"]
    large = p50_new > p50_old * (1 + tolerance)
    samples_old, samples_new = old.get("latencies_ns") or [], new.get("latencies_ns") or []
    if len(samples_old) < 5 or len(samples_new) < 5:  # no raw latencies: the effect size alone decides
        return Change(key, "p50_ms", p50_old, p50_new, large)
    p_value = float(mannwhitneyu(np.asarray(samples_new), np.asarray(samples_old), alternative="greater").pvalue)
    return Change(key, "p50_ms", p50_old, p50_new, large and p_value < alpha, p_value)


def _machine_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    machine_a, machine_b = a.get("run", {}).get("machine", {}), b.get("run", {}).get("machine", {})
    fields = ("platform", "processor", "cpus", "python")
    differences = [
        f"{field}: {machine_a.get(field)} vs {machine_b.get(field)}"
        for field in fields
        if machine_a.get(field) != machine_b.get(field)
    ]
    packages_a, packages_b = machine_a.get("packages", {}), machine_b.get("packages", {})
    differences += [
        f"{name}: {packages_a.get(name)} vs {packages_b.get(name)}"
        for name in sorted(packages_a.keys() | packages_b.keys())
        if packages_a.get(name) != packages_b.get(name)
    ]
    return differences


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


def _index(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = {}
    for section in SECTIONS:
        for m in results.get(section, []):
            params = ",".join(f"{k}={v}" for k, v in sorted(m["params"].items()))
            key = f"{section}:{m['system']}:{m['dataset']}:{m['encoder']}:{m['n_docs']}" + (
                f":{params}" if params else ""
            )
            rows[key] = m
    return rows
