"""Code outside the engine reaches it only through its entry points: the public names of `reference` and of the
packages made to be used from outside (encoders, judges, stores, the agent, the framework adapters). An engine
internal can then move or change without breaking the harness; the one exception says why."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ("harness", "baselines", "where_syntax")

ENTRY_POINTS = {
    "reference",
    "reference.encoders",
    "reference.judges",
    "reference.store",
    "reference.agent",
    "reference.integrations.mcp_server",
    "reference.integrations.langchain",
    "reference.integrations.langgraph",
}

MEASURES_INTERNALS = {"harness/measure/recall_floor.py": "reference.state"}
"""A module that measures an engine internal itself: the recall-floor study sets the estimator's constants."""


def engine_imports(source: str) -> list[str]:
    """The engine modules `source` imports (by absolute name: code outside the engine imports it no other way)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return [name for name in found if name.split(".")[0] == "reference"]


def internals_imported(path: Path) -> list[str]:
    relative = path.relative_to(ROOT).as_posix()
    allowed = ENTRY_POINTS | {MEASURES_INTERNALS.get(relative, "reference")}
    return [f"{relative} imports {name}" for name in engine_imports(path.read_text()) if name not in allowed]


def test_code_outside_the_engine_imports_only_its_entry_points():
    wrong = [
        line
        for folder in OUTSIDE
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in internals_imported(path)
    ]
    assert wrong == []


def test_an_import_of_an_internal_is_caught():
    assert engine_imports("from reference.search.pipeline import Mode\nimport reference.state.engine\n") == [
        "reference.search.pipeline",
        "reference.state.engine",
    ]
    assert engine_imports("from reference import CellularMemory\nfrom reference.store import server_client\n") == [
        "reference",
        "reference.store",
    ]
