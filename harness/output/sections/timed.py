"""What the timed sections' tables share (synthetic scaling, its sweep, real text: `harness.experiments.scaling`,
`harness.experiments.realtext`): their columns, captions and rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.measure.timing import WARMUP_QUERIES
from harness.output.formats import growth, percent, share
from harness.output.results import Measurement
from harness.output.sections.common import P50, RECALL, SIZE, SYSTEM
from harness.output.tables import Column, column

ESTIMATED = column("estimated recall", "estimated_recall", format=share)
ESTIMATED_LOW = column("lower bound", "estimated_recall_low", format=share)
BYTES_READ = column("bytes read / search", "bytes_read_per_search")
TIMED: tuple[Column, ...] = (
    SYSTEM,
    SIZE,
    P50,
    column("p95 (ms)", "latency_p95_ms"),
    column("p99 (ms)", "latency_p99_ms"),
    column("QPS (1 core)", "latency_qps"),
    column("pass spread", "pass_spread", format=percent),
    RECALL,
    ESTIMATED,
    ESTIMATED_LOW,
    BYTES_READ,
    column("build (s)", "build_s"),
    column("ingest (cells/s)", "ingest_per_s"),
    column("RSS (bytes/cell)", "rss_bytes_per_doc", format=growth),
    column("groups", "groups"),
)
SWEPT: tuple[Column, ...] = (
    SYSTEM,
    SIZE,
    column("setting", "param"),
    P50,
    RECALL,
    ESTIMATED,
    ESTIMATED_LOW,
    BYTES_READ,
)
TIMING = (
    f"Latency: one query's wall time around `search` on one core, each setting's queries back to back after "
    f"{WARMUP_QUERIES} untimed warm-up queries, pooled over the timing passes (`pass spread`: the slowest pass's "
    "median over the fastest's, minus one); QPS = 1 / mean latency."
)
BUILD = (
    "Build: adding every cell, on every core, after an untimed warm-up build of the same system (what a process "
    "pays once, such as loading compiled code, is not any size's build); RSS per cell is the process's resident "
    "memory grown by the build, approximate (– where it did not grow: the build reused memory an earlier one "
    "freed, so the reading says nothing of the system's size)."
)
BYTES = (
    "`bytes read / search`: the vector bytes the engine's dense stage read per query (int8 codes of centroids and "
    "cells, the float32 vectors it rescored; a flat search reads every float32 vector, 4 bytes per dimension); "
    "– where a system does not count them."
)
ESTIMATE = (
    "`estimated recall`: the engine's own estimate of its recall@10 (its cells as queries, against exact search "
    "over what it holds), by which it chose its probe margin for its `target_recall`; `lower bound`: the estimate's "
    "one-sided lower bound at the engine's confidence (`stats().recall_confidence`), which the margin chosen makes "
    "meet the target."
)


def timed_rows(measurements: Sequence[Measurement]) -> list[dict[str, Any]]:
    return [_fields(m.row(), TIMED) for m in measurements if not m.params]


def swept_rows(measurements: Sequence[Measurement]) -> list[dict[str, Any]]:
    return [{**_fields(m.row(), SWEPT), "param": _params(m)} for m in measurements if m.params]


def _fields(row: dict[str, Any], columns: Sequence[Column]) -> dict[str, Any]:
    return {key: row.get(key, "") for c in columns for key in c.keys}


def _params(m: Measurement) -> str:
    return ", ".join(f"{k}={v}" for k, v in m.params.items())


def largest(measurements: Sequence[Measurement]) -> list[Measurement]:
    """The default-setting measurements at the section's largest size."""
    defaults = [m for m in measurements if not m.params]
    size = max((m.n_docs for m in defaults), default=0)
    return [m for m in defaults if m.n_docs == size]


def versus_exact(measurements: Sequence[Measurement]) -> list[dict[str, Any]]:
    """Each system's p50 and recall, and how many times faster than exact search (flat-numpy) on the same data, by
    the verdicts' rule (`FASTER`)."""
    exact = next((m for m in measurements if m.system == "flat-numpy"), None)
    return [
        {
            "system": m.system,
            "n_docs": m.n_docs,
            "latency_p50_ms": m.latency.p50_ms,
            "recall_at_10": m.recall_at_10,
            "estimated_recall": m.describe.get("estimated_recall", ""),
            "estimated_recall_low": m.describe.get("estimated_recall_low", ""),
            "faster_than_exact": exact.best_p50_ms / m.best_p50_ms if exact and m.best_p50_ms else "",
            "build_s": m.build_s,
        }
        for m in measurements
    ]


FASTER = (
    "`× faster than exact`: by the rule of the speed-up verdicts, flat-numpy's median of each query's fastest timing "
    "pass over the system's (load only slows a pass; the p50 column pools every pass, so its ratio may differ on a "
    "busy machine)"
)
VERSUS_EXACT = (
    SYSTEM,
    P50,
    column("× faster than exact", "faster_than_exact"),
    RECALL,
    ESTIMATED,
    ESTIMATED_LOW,
    column("build (s)", "build_s"),
)


def swept(measurements: Sequence[Measurement]) -> str:
    """Which parameter each system sweeps, from the measurements themselves."""
    systems_of: dict[str, list[str]] = {}
    for m in measurements:
        for name in m.params:
            mine = systems_of.setdefault(f"`{name}`", [])
            if m.system not in mine:
                mine.append(m.system)
    return "; ".join(f"{name} for {', '.join(systems)}" for name, systems in systems_of.items()) or "none swept"


def same_at_every_setting(measurements: Sequence[Measurement]) -> list[str]:
    """A note for each system whose sweep read the same recall and bytes at every setting: no setting changed
    what it searched, so its points coincide (and why, when its own estimate already met every recall target)."""
    notes = []
    for system, n in dict.fromkeys((m.system, m.n_docs) for m in measurements if m.params):
        points = [m for m in measurements if (m.system, m.n_docs) == (system, n) and m.params]
        read = {(m.recall_at_10, m.describe.get("bytes_read_per_search")) for m in points}
        if len(points) < 2 or len(read) > 1:
            continue
        [name] = points[0].params
        values = [m.params[name] for m in points]
        note = (
            f"`{system}` at N = {n:,} read the same recall@10 ({points[0].recall_at_10:.3f}) and bytes at every "
            f"`{name}` ({min(values)}–{max(values)}): no setting changed what it searched"
        )
        estimates = [m.describe.get("estimated_recall") for m in points]
        if name == "target_recall" and all(isinstance(e, float) and e >= max(values) for e in estimates):
            note += (
                f"; its estimated recall at its narrowest probe margin ({min(e for e in estimates if e):.3f}) "
                "already meets every target, so none widens the probe"
            )
        notes.append(note + ".")
    return notes
