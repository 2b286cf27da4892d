"""The report's tables and plot of a memory as a service: many clients at once (`concurrency`), filtered
searches (`filtered`), and the context tokens of dialogue answers. `report.py` places them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from harness.measure.tokens import BUDGETS
from harness.output.results import ConcurrencyRow, DialogueRow, FilterRow, RunResults

Style = Callable[[str], dict[str, Any]]
Save = Callable[[Any, Any, Path], Path]


def tables(results: RunResults) -> dict[str, list[dict[str, Any]]]:
    """The concurrency and filtered-search tables, by section."""
    return {
        "concurrency": _concurrency_rows(results.concurrency),
        "filtered": [_filter_row(r) for r in results.filtered],
    }


def sections(results: RunResults) -> list[tuple[str, str, str]]:
    """(table, title, note) of each section, for the report to place."""
    plan, cpus = results.run.plan, results.run.machine.cpus
    return [
        (
            "concurrency",
            f"Concurrency: 1–{max(plan.concurrency_levels)} clients at once against one system ({cpus} cores here)",
            f"This machine has {cpus} cores: past that many clients, more clients can only queue. Each level searches "
            f"for {plan.concurrency_seconds:g} s with every client at once, over {plan.concurrency_cells:,} agents' "
            f"notes (mock-encoder vectors); then the same while {plan.concurrency_write_rate:g} cells a second are "
            "written, one a write (`writing`: as achieved). `qps`: every client's searches over the time from the "
            "common start to the last answer; p50 / p99 of each search, its wait for the others included. Clients of "
            "a system in process are threads, and a system that does not declare `threads` is guarded by a "
            "readers–writer lock, as a server on it would be; the engine's MCP server (`reference-mcp`, searched by "
            "text) and a Chroma server (`chroma-server`) are searched by client processes of their own. Recall@10 "
            "is against exact dense search over the cells written before each search began (`reference` and "
            "`reference-mcp` rank text queries by words too); `short`: answers with fewer than 10 hits. Each level is "
            "one window of time: on a shared machine, a burst of other load moves a level's figures.",
        ),
        (
            "filtered",
            "Filtered search: metadata filters matching 1 % and 99 % of the documents, and a scope of 1 %",
            f"{plan.filter_cells:,} clustered vectors, each of 100 owners holding 1 % (at random): the owner in a "
            "document's metadata for systems that declare `filters`, as its scope for those that declare `scopes`. "
            "Recall@10 against exact search over the matching documents; `outside`: hits the restriction does not "
            "match (any fails the row). Timed on one core like the scaling table.",
        ),
    ]


def plots(out: Path, results: RunResults, style: Style, save: Save) -> list[Path]:
    """QPS and p99 against clients, searches alone (solid) and while writing (dashed), one colour per system."""
    rows = results.concurrency
    if not rows:
        return []
    figure, (qps, p99) = plt.subplots(1, 2, figsize=(11, 4.5))
    for system in dict.fromkeys(r.system for r in rows):
        for writing, line in ((False, "-"), (True, "--")):
            mine = sorted(
                (r for r in rows if r.system == system and bool(r.writes_per_s) == writing), key=lambda r: r.clients
            )
            label = "_nolegend_" if writing else system  # a system once in the legend; its dashes are explained
            drawn = {**style(system), "linestyle": line}
            qps.plot([r.clients for r in mine], [r.qps for r in mine], label=label, **drawn)
            p99.plot([r.clients for r in mine], [r.p99_ms for r in mine], label=label, **drawn)
    levels = sorted({r.clients for r in rows})
    for axes in (qps, p99):
        axes.set_xscale("log", base=2)
        axes.set_xticks(levels, [str(level) for level in levels])
    qps.set(xlabel="clients at once", ylabel="searches per second (all clients)", yscale="log")
    p99.set(xlabel="clients at once", ylabel="p99 search latency (ms)", yscale="log")
    qps.set_title("Throughput (dashed: while writing)")
    p99.set_title("Tail latency (dashed: while writing)")
    qps.grid(True, which="both", alpha=0.3)
    return [save(figure, p99, out / "concurrency.png")]


def dialogue_columns(row: DialogueRow) -> dict[str, Any]:
    """A dialogue row's context: tokens of its top-10 hits per question, evidence recall within each budget
    (bulk-loaded memories)."""
    return {"tokens@10": row.tokens_at_10} | {f"recall@{b:,}t": row.budget_recall.get(b, "") for b in BUDGETS}


def _concurrency_rows(rows: list[ConcurrencyRow]) -> list[dict[str, Any]]:
    """One line per system and level: searches alone beside searches while writing."""
    alone = {(r.system, r.clients): r for r in rows if not r.writes_per_s}
    writing = {(r.system, r.clients): r for r in rows if r.writes_per_s}
    table = []
    for key, row in alone.items():
        during = writing.get(key)
        table.append(
            {
                "system": row.system,
                "clients": row.clients,
                "qps": row.qps,
                "p50_ms": row.p50_ms,
                "p99_ms": row.p99_ms,
                "recall@10": row.recall_at_10,
                "writing: writes/s": during.writes_per_s if during else "",
                "writing: qps": during.qps if during else "",
                "writing: p99_ms": during.p99_ms if during else "",
                "writing: recall@10": during.recall_at_10 if during else "",
                "short": row.short + (during.short if during else 0),
                "clients are": row.transport,
            }
        )
    return table


def _filter_row(row: FilterRow) -> dict[str, Any]:
    figures = ("matching", "recall@10", "p50_ms", "p99_ms")
    if row.skipped:
        return (
            {"system": row.system, "case": row.case, "restriction": ""}
            | dict.fromkeys(figures, "")
            | {"status": f"skipped: {row.skipped}"}
        )
    return {
        "system": row.system,
        "case": row.case,
        "restriction": row.restriction,
        "matching": row.matching,
        "recall@10": row.recall_at_10,
        "p50_ms": row.p50_ms,
        "p99_ms": row.p99_ms,
        "status": f"FAILED: {row.outside} hits outside the restriction" if row.outside else "ok",
    }
