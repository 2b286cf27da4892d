"""Third-party tools are found through the `magnetic_bench.tools` entry-point group."""

import sys

from reference.agent import BaseTool, ToolResult, discover_tools


class EchoTool(BaseTool):
    name = "echo"
    description = "repeat the arguments"

    def run(self, args, agent):
        return ToolResult(True, args)


def test_builtins_and_an_installed_plugin(tmp_path, monkeypatch):
    dist = tmp_path / "echo_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[magnetic_bench.tools]\necho = tests.unit.test_tool_discovery:EchoTool\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    commands = [tool.command for tool in discover_tools()]
    assert {"/behavior", "/story", "/infinite", "/ingest", "/echo"} <= set(commands)  # built-ins: entry points too
