"""Baselines wrap their own libraries: an engine change must never move what the engine is compared against."""

import ast
from pathlib import Path

BASELINES = Path(__file__).resolve().parents[2] / "baselines"


def test_no_baseline_imports_the_engine():
    offenders = []
    for module in sorted(BASELINES.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [f"{module.name}: {n}" for n in names if n == "reference" or n.startswith("reference.")]
    assert not offenders
