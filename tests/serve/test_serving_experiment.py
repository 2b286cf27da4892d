"""The serving experiment: both services answer the same scripts, every tool is timed, and a service that answers
wrongly under load ends the run instead of being timed."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the serve extra: pip install 'magnetic-bench[serve]'")

from harness.experiments.serving import SYSTEMS as SERVING_SYSTEMS
from harness.experiments.serving import TOOLS, ServiceBroke, client_script, drive, serving_rows


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

    def answer(self, tool: str, arguments: dict) -> object:
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
        drive(client_script(0, 200), Lying(tool, wrong).answer, {tool: [] for tool in TOOLS})


def test_an_honest_service_passes_the_script():
    drive(client_script(0, 200), Lying("no tool", None).answer, {tool: [] for tool in TOOLS})
