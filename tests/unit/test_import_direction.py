"""The engine's sub-packages import one way, along the flow: a stage imports only the stages below it, never a peer
or a stage above; the core never imports the integrations or the agent, and the engine never imports the harness or
the baselines. Every import counts, including those under `TYPE_CHECKING` and inside functions."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "reference"

LAYERS: list[set[str]] = [
    {"kernels"},
    {"common"},
    {"encoders", "judges"},
    {"cells"},
    {"store", "groups", "indexes", "score"},
    {"state"},
    {"search"},
    {"sleep"},
    {"write"},
    {"facade"},
    {"integrations", "agent"},
]
"""Lowest first. A part imports itself and the layers before its own; parts of one layer never import each other.
"facade" is the modules at the top of `reference/`: the public names, `CellularMemory` and its stats."""

FACADE = {"__init__.py", "memory.py", "stats.py"}
RANK = {part: rank for rank, layer in enumerate(LAYERS) for part in layer}


def part_of(module: str) -> str | None:
    """The part of the engine a dotted module name belongs to (None outside the engine)."""
    names = module.split(".")
    if names[0] != "reference":
        return None
    return names[1] if len(names) > 1 and names[1] in RANK and names[1] != "facade" else "facade"


def imported(module: str, source: str, is_package: bool = False) -> list[str]:
    """Every module `source` (the text of `module`) imports, relative imports resolved; `from p import x` counts
    `p.x`, which is `p` itself when `x` is not a module."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            origin = ".".join([*base, *([node.module] if node.module else [])])
            found += [f"{origin}.{alias.name}" for alias in node.names]
    return found


def wrong_way(module: str, targets: list[str]) -> list[str]:
    """The imports of `module` that go against the layers, or reach the harness or the baselines."""
    here = part_of(module)
    assert here is not None

    def against(target: str) -> bool:
        there = part_of(target)
        outside = target.split(".")[0] in {"harness", "baselines"}
        return outside or (there is not None and there != here and RANK[there] >= RANK[here])

    return [f"{module} imports {target}" for target in targets if against(target)]


def engine_modules() -> list[tuple[str, Path]]:
    return [(".".join(p.relative_to(ROOT).with_suffix("").parts), p) for p in sorted(ENGINE.rglob("*.py"))]


def test_every_sub_package_has_a_place_in_the_flow():
    packages = {p.parent.name for p in ENGINE.glob("*/__init__.py")}
    assert packages == set(RANK) - {"facade"}


def test_the_top_of_the_engine_holds_only_the_facade():
    assert {p.name for p in ENGINE.glob("*.py")} == FACADE


def test_imports_go_one_way():
    offending = []
    for dotted, path in engine_modules():
        is_package = path.name == "__init__.py"
        module = dotted.removesuffix(".__init__")
        offending += wrong_way(module, imported(module, path.read_text(), is_package))
    assert offending == []


@pytest.mark.parametrize(
    ("module", "source", "wrong"),
    [
        ("reference.cells.table", "from ..state.engine import EngineState", True),
        ("reference.cells.table", "if TYPE_CHECKING:\n    from ..search.hit import Hit", True),
        ("reference.store.server", "def f():\n    from ..indexes import vectors", True),
        ("reference.common.errors", "import harness.protocol", True),
        ("reference.write.ingest", "from reference.integrations import mcp_server", True),
        ("reference.memory", "from .agent import MemoryAgent", True),
        ("reference.state.engine", "from ..store import CellStore\nfrom .residency import Residency", False),
        ("reference.agent.agent", "from ..memory import CellularMemory\nfrom ..search.hit import Hit", False),
    ],
)
def test_the_check_catches_an_import_the_wrong_way(module, source, wrong):
    assert bool(wrong_way(module, imported(module, source))) is wrong
