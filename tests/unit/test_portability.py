"""The engine imports and works where the POSIX-only parts of the standard library and a loadable C library are
missing (Windows) and without the harness extra; its base dependencies are what its modules import."""

import ast
import importlib.metadata
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

OPTIONAL_PARTS = {"encoders", "integrations", "judges", "agent"}
"""Engine packages whose third-party imports belong to an extra (MiniLM, Ollama, MCP, LangChain, LangGraph)."""


def project() -> dict[str, Any]:
    with open("pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return canonical(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0])


def top_level_imports(path: Path) -> set[str]:
    """Modules a file imports outside any function (absolute imports only)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


WITHOUT_POSIX = textwrap.dedent(
    """
    import ctypes, sys
    from harness.entry import HARNESS_MODULES
    for name in ("resource", "fcntl", "termios"):
        sys.modules[name] = None  # an import of it now raises ImportError, as on Windows
    for name in HARNESS_MODULES:
        sys.modules[name] = None  # the harness extra is not installed: the engine must not need it

    load_library = ctypes.CDLL

    def without_process_symbols(name, *args, **kwargs):
        if name is None:  # the process's own symbols (libc's among them) cannot be loaded, as on Windows
            raise OSError("no dynamic loader for the process's symbols")
        return load_library(name, *args, **kwargs)

    ctypes.CDLL = without_process_symbols

    from reference import CellularMemory
    from reference.common.config import MemoryConfig
    from reference.encoders.mock import MockEncoder
    from reference.indexes.vectors import chroma_capacity

    with CellularMemory(encoder=MockEncoder(dim=64), config=MemoryConfig(ingest_chunk=64)) as memory:
        ids = memory.add([f"note {i} about topic {i % 7}" for i in range(300)])
        hit = memory.search("note 5 about topic 5", k=1)[0]
    print(len(ids), hit.text, chroma_capacity())
    """
)


@pytest.mark.embedded
def test_the_engine_imports_and_writes_without_posix_modules_a_c_library_or_the_harness_extra() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_POSIX], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    count, *_, capacity = done.stdout.split()
    assert count == "300"
    assert "note 5 about topic 5" in done.stdout
    assert int(capacity) >= 4


def test_magbench_without_the_harness_extra_names_the_extra() -> None:
    script = "import sys\nfrom harness.entry import HARNESS_MODULES, main\nsys.modules['tabulate'] = None\n"
    script += "import importlib.util\nimportlib.util.find_spec = lambda name, *a: None\nsys.exit(main())\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "magnetic-bench[harness]" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_base_install_is_what_the_engine_imports() -> None:
    """Every third-party module imported at the top of an engine module outside its optional parts (encoders,
    integrations, judges and agent backends that name their extra) comes from a base dependency, and no base
    dependency is one only the harness uses."""
    base = {requirement_name(line) for line in project()["dependencies"]}
    distributions = importlib.metadata.packages_distributions()
    imported = set()
    for path in Path("reference").rglob("*.py"):
        if path.parts[1] in OPTIONAL_PARTS:
            continue
        for module in top_level_imports(path):
            for distribution in distributions.get(module, ()):
                imported.add(canonical(distribution))
    imported.discard(canonical(project()["name"]))  # its own packages (where_syntax)
    assert imported <= base, f"imported by the engine but not a base dependency: {sorted(imported - base)}"
    harness_only = {requirement_name(line) for line in project()["optional-dependencies"]["harness"]}
    assert not base & harness_only
