"""Only `reference/state/engine.py` changes what an `EngineState` holds: every other module goes through its commits."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE_STATE = ROOT / "reference" / "state" / "engine.py"


def attribute_chain(target: ast.expr) -> list[str]:
    """The names along an assignment target, from its root: `a.b[i].c` → ["a", "b", "c"]."""
    names = []
    while isinstance(target, ast.Attribute | ast.Subscript):
        if isinstance(target, ast.Attribute):
            names.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        names.append(target.id)
    return names[::-1]


def assigns_engine_state(chain: list[str], module_uses_engine_state: bool) -> bool:
    """`x._state.anything = …`, or `state.anything = …` in a module that handles an `EngineState`."""
    if "_state" in chain[:-1]:
        return True
    return module_uses_engine_state and len(chain) > 1 and chain[0] == "state"


def targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment statement assigns to (tuples unpacked); [] for any other node."""
    if isinstance(node, ast.Assign):
        found = node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        found = [node.target]
    else:
        return []
    return [part for target in found for part in (target.elts if isinstance(target, ast.Tuple) else [target])]


def assignments_to_engine_state(path: Path) -> list[str]:
    source = path.read_text()
    uses = "EngineState" in source
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(target)}"
        for node in ast.walk(ast.parse(source))
        for target in targets(node)
        if assigns_engine_state(attribute_chain(target), uses)
    ]


def test_no_module_but_the_engine_state_assigns_its_attributes():
    modules = [p for folder in ("reference", "harness", "baselines", "tests") for p in (ROOT / folder).rglob("*.py")]
    offending = [line for path in modules if path != ENGINE_STATE for line in assignments_to_engine_state(path)]
    assert offending == []


def test_the_check_catches_an_assignment():
    sample = "state.version += 1\nmemory._state.groups = None\nstate.table.group[0], x = 1, 2\ny = state.table\n"
    chains = [attribute_chain(t) for node in ast.walk(ast.parse(sample)) for t in targets(node)]
    assert [assigns_engine_state(chain, True) for chain in chains] == [True, True, True, False, False]


def test_the_version_is_bumped_in_one_place():
    tree = ast.parse(ENGINE_STATE.read_text())
    version = [node for node in ast.walk(tree) for t in targets(node) if attribute_chain(t) == ["self", "_version"]]
    assert sorted(ast.unparse(node) for node in version) == ["self._version += 1", "self._version = 0"]
