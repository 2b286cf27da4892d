"""`magbench compare A B`: what changed between two runs, failing on a regression beyond tolerance.

Compared per (section, system, dataset, encoder, size, parameters): p50 latency (a regression
when B is slower than A by more than `latency_tolerance`, relative) and recall@10 (a regression
when B is lower by more than `recall_tolerance`, absolute), and every verdict that flipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate


@dataclass(frozen=True)
class Change:
    key: str
    metric: str
    before: float
    after: float
    regression: bool


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
) -> tuple[list[Change], list[str]]:
    """The metric changes (regressions flagged) and the verdicts that flipped."""
    changes = []
    before, after = _index(a), _index(b)
    for key in sorted(before.keys() & after.keys()):
        old, new = before[key], after[key]
        slower = new["latency"]["p50_ms"] > old["latency"]["p50_ms"] * (1 + latency_tolerance)
        changes.append(Change(key, "p50_ms", old["latency"]["p50_ms"], new["latency"]["p50_ms"], slower))
        worse = new["recall_at_10"] < old["recall_at_10"] - recall_tolerance
        changes.append(Change(key, "recall_at_10", old["recall_at_10"], new["recall_at_10"], worse))
    old_verdicts = {(v["claim"], v["system"]): v["verdict"] for v in a.get("claims", []) + a.get("targets", [])}
    flips = [
        f"{claim} / {system}: {old_verdicts[(claim, system)]} → {v['verdict']}"
        for v in b.get("claims", []) + b.get("targets", [])
        for claim, system in [(v["claim"], v["system"])]
        if (claim, system) in old_verdicts and old_verdicts[(claim, system)] != v["verdict"]
    ]
    return changes, flips


def render(changes: list[Change], flips: list[str]) -> str:
    rows = [
        [c.key, c.metric, f"{c.before:.4g}", f"{c.after:.4g}", _delta(c), "REGRESSION" if c.regression else ""]
        for c in changes
    ]
    text = tabulate(rows, headers=["measurement", "metric", "A", "B", "change", ""], tablefmt="github")
    if flips:
        text += "\n\nVerdicts that changed:\n" + "\n".join(f"- {f}" for f in flips)
    return text


def _delta(change: Change) -> str:
    if change.metric == "p50_ms":
        return f"{(change.after / change.before - 1) * 100:+.1f}%" if change.before else "n/a"
    return f"{change.after - change.before:+.4f}"


def _index(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = {}
    for section in ("scaling", "needles", "beir"):
        for m in results.get(section, []):
            params = ",".join(f"{k}={v}" for k, v in sorted(m["params"].items()))
            key = f"{section}:{m['system']}:{m['dataset']}:{m['encoder']}:{m['n_docs']}" + (
                f":{params}" if params else ""
            )
            rows[key] = m
    return rows
