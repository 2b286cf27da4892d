"""Serving: many clients at once, in process and through the MCP server."""

from __future__ import annotations

from dataclasses import asdict

from harness.output.results import RunResults
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column


def serving(results: RunResults) -> list[Table]:
    if not results.serving:
        return []
    return [
        Table(
            "serving",
            "Serving: many clients at once, the MCP tools in process and through the MCP server",
            "Each client makes a seeded mix of agents' memory calls in a scope of its own (mostly writes and "
            "searches; gets, updates, deletes and listings), all clients at once, to the MCP server's own tools: "
            "in process called directly (each call on a worker thread, as the server runs it), through the server "
            "each a real `mcp` client over streamable HTTP to `magbench serve --http` (both on an embedded store, "
            "the mock encoder), so the two differ by the transport alone. Every answer is checked as it comes "
            "(no hit from another scope, every memory read back as written, nothing lost); `calls/s` counts every "
            "tool's calls together. A call's latency includes its wait for the others: these are a service's "
            "latencies, not one core's.",
            (
                SYSTEM,
                column("transport", "transport"),
                column("clients", "clients"),
                column("tool", "tool"),
                column("calls", "calls"),
                column("p50 (ms)", "p50_ms"),
                column("p99 (ms)", "p99_ms"),
                column("calls/s (every tool)", "calls_per_s"),
            ),
            [asdict(row) for row in results.serving],
        )
    ]
