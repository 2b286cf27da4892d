"""The serving experiment: both services answer the same scripts with the MCP server's own tools, every tool is
timed, and a service that answers wrongly under load ends the run instead of being timed."""

from __future__ import annotations

import asyncio
import tempfile

import pytest

pytest.importorskip("mcp", reason="the serve extra: pip install 'magnetic-bench[serve]'")

from harness.experiments.serving import SYSTEMS as SERVING_SYSTEMS
from harness.experiments.serving import TOOLS, ServiceBroke, client_script, in_process, serving_rows
from harness.measure.clients import drive
from reference import CellularMemory
from reference.encoders import MockEncoder
from reference.integrations.mcp_server import MAX_K


def test_both_services_are_timed_on_every_tool():
    rows = serving_rows(SERVING_SYSTEMS, clients=2, calls=40)
    by_system = {(row.system, row.tool): row for row in rows}
    for system in ("reference", "reference-mcp"):
        for tool in ("add_memory", "search_memories", "list_memories"):
            row = by_system[system, tool]
            assert row.calls > 0 and 0 < row.p50_ms <= row.p99_ms and row.calls_per_s > 0
    calls = {
        system: sum(row.calls for row in rows if row.system == system) for system in ("reference", "reference-mcp")
    }
    assert calls["reference"] == calls["reference-mcp"]  # the same scripts, call for call
    assert {row.tool for row in rows} <= set(TOOLS)


class Lying:
    """A service that works, except for one wrong answer of the given tool."""

    def __init__(self, tool: str, wrong: object) -> None:
        self.tool, self.wrong, self.held, self.count = tool, wrong, {}, 0

    def answer(self, call: tuple[str, dict]) -> object:
        tool, arguments = call
        if tool == self.tool:
            return self.wrong
        if tool == "add_memory":
            self.count += 1
            self.held[f"m{self.count}"] = arguments["content"]
            return f"m{self.count}"
        if tool == "update_memory":
            self.held[arguments["memory_id"]] = arguments["content"]
        if tool == "delete_memory":
            del self.held[arguments["memory_id"]]
        if tool == "search_memories":
            return []
        if tool == "get_memory":
            return self.held[arguments["memory_id"]]
        return dict(self.held)


@pytest.mark.parametrize(
    ("tool", "wrong", "message"),
    [
        ("search_memories", ["someone-elses-id"], "another scope"),
        ("get_memory", "not what was written", "does not read back"),
        ("list_memories", {}, "not what it wrote"),
    ],
)
def test_a_wrong_answer_ends_the_run(tool, wrong, message):
    with pytest.raises(ServiceBroke, match=message):
        drive(client_script(0, 200), Lying(tool, wrong).answer)


def test_an_honest_service_passes_the_script_and_every_call_is_timed():
    timed = drive(client_script(0, 200), Lying("no tool", None).answer)
    assert len(timed) == 201 and {call.tool for call in timed} == set(TOOLS)  # 200 and the closing listing
    assert all(call.latency_ns >= 0 for call in timed)


def test_in_process_calls_go_through_the_mcp_tools_themselves():
    """What the tools check (their argument schema, their scopes) holds in process too: the in-process service is
    the server's own tools, not a second copy of their behaviour."""

    async def calls(answer_of) -> tuple:
        async with answer_of() as answer:
            written = await answer(("add_memory", {"content": "tea in Berlin", "user_id": "a"}))
            found = await answer(("search_memories", {"query": "tea", "k": 3, "user_id": "a"}))
            with pytest.raises(ServiceBroke, match="get_memory failed in process"):  # another scope's id
                await answer(("get_memory", {"memory_id": written, "user_id": "b"}))
            with pytest.raises(ServiceBroke, match="search_memories failed in process"):  # the tool's own limit
                await answer(("search_memories", {"query": "tea", "k": MAX_K + 1, "user_id": "a"}))
            return written, found

    with tempfile.TemporaryDirectory() as directory, CellularMemory(path=directory, encoder=MockEncoder(384)) as memory:
        written, found = asyncio.run(calls(in_process(memory)))
        assert found == [written] and memory.get(written).scope == "user:a"
