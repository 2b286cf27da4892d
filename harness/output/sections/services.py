"""A memory as a service: many clients at once (`concurrency`), filtered searches (`filtered`) and many users in
one memory (`tenants`)."""

from __future__ import annotations

from typing import Any

from harness.measure.filtered import OWNERS
from harness.measure.timing import K
from harness.measure.tenants import DIM, PROBE_WORDS, TURN_CELLS
from harness.output.formats import figure, share
from harness.output.results import ConcurrencyRow, FilterRow, RunResults
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column


def concurrency(results: RunResults) -> list[Table]:
    if not results.concurrency:
        return []
    plan, cpus = results.run.plan, results.run.machine.cpus
    fewest, most = min(plan.concurrency_levels), max(plan.concurrency_levels)
    return [
        Table(
            "concurrency",
            f"Concurrency: {fewest}–{most} clients at once against one system ({cpus} cores here)",
            f"This machine has {cpus} cores: past that many clients, more clients can only queue. Each level searches "
            f"for {plan.concurrency_seconds:g} s with every client at once, over {plan.concurrency_cells:,} agents' "
            f"notes (mock-encoder vectors); then the same while {plan.concurrency_write_rate:g} cells a second are "
            "written, one a write (`writing`: as achieved). QPS: every client's searches over the time from the "
            "common start to the last answer; p50 / p99 of each search, its wait for the others included. Clients of "
            "a system in process are threads, and a system that does not declare `threads` is guarded by a "
            "readers–writer lock, as a server on it would be; the engine's MCP server (`reference-mcp`, searched by "
            "text) and a Chroma server (`chroma-server`) are searched by client processes of their own. Recall@10 "
            "is against exact dense search over the cells written before each search began (`reference` and "
            f"`reference-mcp` rank text queries by words too); `short`: answers with fewer than {K} hits. Each level "
            f"searches in {plan.concurrency_windows} windows of time taken in turn with the other levels' (so a burst "
            "of other load on a shared machine falls in a window of several levels, not in one level): QPS is the "
            "median window's, `windows` its slowest and fastest window's (far apart: the machine was busy); "
            "latencies and recall pool every window.",
            (
                SYSTEM,
                column("clients", "clients"),
                column("clients are", "transport"),
                column("QPS", "qps"),
                column("windows", "qps_windows"),
                column("p50 / p99 (ms)", "p50_ms", "p99_ms"),
                column("recall@10", "recall_at_10", format=share),
                column("writing: writes/s", "writing_writes_per_s"),
                column("writing: QPS", "writing_qps"),
                column("writing: windows", "writing_qps_windows"),
                column("writing: p99 (ms)", "writing_p99_ms"),
                column("writing: recall@10", "writing_recall_at_10", format=share),
                column("short", "short"),
            ),
            _concurrency_rows(results.concurrency),
            plot="concurrency.png",
        )
    ]


def filtered(results: RunResults) -> list[Table]:
    if not results.filtered:
        return []
    one, rest = f"{100 / OWNERS:g} %", f"{100 - 100 / OWNERS:g} %"
    return [
        Table(
            "filtered",
            f"Filtered search: metadata filters matching {one} and {rest} of the documents, and a scope of {one}",
            f"{results.run.plan.filter_cells:,} clustered vectors, each of {OWNERS} owners holding {one} (at random): "
            "the owner in a document's metadata for systems that declare `filters`, as its scope for those that "
            "declare `scopes`. Recall@10 against exact search over the matching documents; `outside`: hits the "
            "restriction does not match (any fails the row). Timed on one core like the scaling table.",
            (
                SYSTEM,
                column("case", "case"),
                column("restriction", "restriction"),
                column("matching", "matching"),
                column("recall@10 vs exact over the matching", "recall_at_10", format=share),
                column("p50 / p99 (ms)", "p50_ms", "p99_ms"),
                column("status", "status"),
            ),
            [_filter_fields(r) for r in results.filtered],
        )
    ]


def tenants(results: RunResults) -> list[Table]:
    if not results.tenants:
        return []
    return [
        Table(
            "tenants",
            "Many users in one memory: a scope's searches in the shared memory against its cells alone",
            f"Scopes written in interleaved turns of {TURN_CELLS[0]}–{TURN_CELLS[1]} cells (clustered {DIM}-d vectors "
            f"given with each write, faker notes), then, in each probed scope, a text query ({PROBE_WORDS} words of "
            "one of its cells, with that cell's vector) and a vector query, timed on one core in the shared memory "
            "and, one after the other, against the same scope's cells in a memory of their own: `shared / alone` "
            "is the ratio of the medians. Recall@10 is each probed scope's own vectors as queries against exact "
            "search over that scope; every hit is checked to be of the scope searched. Resident memory: the "
            "process's growth over the writes, against the raw float32 vectors. "
            + "; ".join(row.description for row in results.tenants[:1]),
            (
                SYSTEM,
                column("scopes", "scopes"),
                column("cells", "cells"),
                column("text p50 (ms): shared / alone", "text_p50_ms", "text_alone_p50_ms"),
                column("text shared / alone", "text_shared_over_alone"),
                column("vector p50 (ms): shared / alone", "vector_p50_ms", "vector_alone_p50_ms"),
                column("vector shared / alone", "vector_shared_over_alone"),
                column("write p50 / p99 (ms)", "write_p50_ms", "write_p99_ms"),
                column("recall@10", "recall@10", format=share),
                column("resident / raw vectors", "resident_over_raw_vectors"),
                column("status", "skipped"),
            ),
            [row.row() for row in results.tenants],
        )
    ]


def _concurrency_rows(rows: list[ConcurrencyRow]) -> list[dict[str, Any]]:
    """One line per system and level: searches alone beside searches while writing."""
    writing = {(r.system, r.clients): r for r in rows if r.writes_per_s}
    table = []
    for row in rows:
        if row.writes_per_s:
            continue
        during = writing.get((row.system, row.clients))
        fields: dict[str, Any] = {
            "system": row.system,
            "clients": row.clients,
            "transport": row.transport,
            "qps": row.qps,
            "qps_windows": _spread(row.window_qps),
            "p50_ms": row.p50_ms,
            "p99_ms": row.p99_ms,
            "recall_at_10": row.recall_at_10,
            "short": row.short + (during.short if during else 0),
        }
        if during is not None:
            fields |= {
                "writing_writes_per_s": during.writes_per_s,
                "writing_qps": during.qps,
                "writing_qps_windows": _spread(during.window_qps),
                "writing_p99_ms": during.p99_ms,
                "writing_recall_at_10": during.recall_at_10,
            }
        table.append(fields)
    return table


def _spread(values: list[float]) -> str:
    """The slowest and the fastest of a level's windows ("" for a row of one window, or of none recorded)."""
    return f"{figure(min(values))}–{figure(max(values))}" if len(values) > 1 else ""


def _filter_fields(row: FilterRow) -> dict[str, Any]:
    if row.skipped:
        return {"system": row.system, "case": row.case, "status": f"skipped: {row.skipped}"}
    return {
        "system": row.system,
        "case": row.case,
        "restriction": row.restriction,
        "matching": row.matching,
        "recall_at_10": row.recall_at_10,
        "p50_ms": row.p50_ms,
        "p99_ms": row.p99_ms,
        "status": f"FAILED: {row.outside} hits outside the restriction" if row.outside else "ok",
    }
