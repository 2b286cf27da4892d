"""The concurrency experiment's servers: the engine's MCP server and a Chroma server, each started here, searched by
client processes while another process writes; every answer checked and scored."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the serve extra: pip install 'magnetic-bench[serve]'")

from harness.experiments.concurrency import concurrency_rows


def test_both_servers_are_searched_by_processes_alone_and_while_another_writes():
    rows = concurrency_rows(("reference-mcp", "chroma-server"), cells=400, queries=20, levels=(1, 2), seconds=0.4)
    assert [(r.system, r.clients, bool(r.writes_per_s)) for r in rows] == [
        (system, clients, writing)
        for system in ("reference-mcp", "chroma-server")
        for writing in (False, True)
        for clients in (1, 2)
    ]
    for row in rows:
        assert row.transport.startswith("processes") and row.searches > 0 and row.short == 0
    by = {(r.system, r.clients, bool(r.writes_per_s)): r for r in rows}
    assert all(by["chroma-server", c, w].recall_at_10 >= 0.95 for c in (1, 2) for w in (False, True))
    # the MCP server ranks text by words too; its recall against exact dense search is that of the engine's text path
    assert all(by["reference-mcp", c, w].recall_at_10 >= 0.6 for c in (1, 2) for w in (False, True))
