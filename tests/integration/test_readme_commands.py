"""The README and docs/ stay true: every command they give runs (its `--help`, or a quick form), the tox
environments and extras they name exist, their links, paths and dotted names point at something, and their Python
examples run."""

from __future__ import annotations

import argparse
import ast
import configparser
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness.cli import build_parser, main
from harness.systems.registry import SYSTEMS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
TOX = configparser.ConfigParser(interpolation=None)
TOX.read(ROOT / "tox.ini")
TOX_ENVS = {"py"} | {section.removeprefix("testenv:") for section in TOX.sections() if section.startswith("testenv:")}
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
PLACEHOLDERS = {"MODULE:FACTORY": "flat-numpy", "RUN_A": "a", "RUN_B": "b"}
"""What a command's placeholders become when it is parsed or run."""
PATHS = r"(?:reference|harness|baselines|tests|docs|datasets)/[\w./-]*|\.ci/run|SPEC\.md"
"""Paths in the repository that a page may name in backticks."""
GENERATED = ("datasets/cache",)
"""Paths a run makes (under the working directory), not kept in the repository."""
SKIPPED_EXAMPLES = {
    "builder.compile": "needs LangGraph, a graph builder and embeddings: tests/langgraph runs it",
    "CellularMemory(dsn=": "needs a PostgreSQL server: tests/postgres starts one and runs the store",
}
"""Python examples that cannot run alone, by a fragment of their text, with the reason."""


def section(text: str, heading: str) -> str:
    """The body of a `## heading` section."""
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def table_commands(text: str) -> list[str]:
    """The first cell of each row of a markdown table, where it is one command in backticks."""
    return [row.group(1) for row in re.finditer(r"^\| `([^`]+)` \|", text, re.M)]


def command_lines() -> list[str]:
    """Every command the README gives: the table's rows and the lines of its shell blocks."""
    text = README.read_text()
    lines = [line for block in blocks(text, "bash") for line in block.splitlines() if line.strip()]
    return table_commands(section(text, "Commands")) + lines


def steps(line: str) -> list[list[str]]:
    """A shell line's commands (split at `&&`), each without its leading VAR=value assignments."""
    words = shlex.split(line.replace("\\|", "|"))
    commands: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            commands.append([])
        elif not commands[-1] and re.fullmatch(r"[A-Z_]+=\S*", word):
            continue
        else:
            commands[-1].append(PLACEHOLDERS.get(word, word))
    return commands


def strict_parser() -> argparse.ArgumentParser:
    """magbench's parser, without abbreviated options: a command must name each option as it is."""
    parser = build_parser()
    [commands] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    for each in (parser, *commands.choices.values()):
        each.allow_abbrev = False
    return parser


def check_step(command: list[str]) -> None:
    """A README command is known: magbench subcommands and their options parse, tox environments exist (a bench
    run's options parse as `magbench run`'s), pip installs name real extras."""
    program, *args = command
    if program.endswith("magbench"):
        strict_parser().parse_args(args)  # an unknown subcommand or option exits with status 2
    elif program == "tox":
        assert args[0] == "-e", command
        for env in args[1].split(","):
            assert env in TOX_ENVS, f"tox environment {env!r} is not in tox.ini ({sorted(TOX_ENVS)})"
        passed = args[args.index("--") + 1 :] if "--" in args else []
        if args[1] == "bench" and passed:
            strict_parser().parse_args(["run", *passed])
    elif program == ".":
        assert args == [".venv/bin/activate"], command  # the environment the install line made
    elif Path(program).name in ("python3", "pip"):
        for extras in re.findall(r"\.\[([\w,-]+)\]", " ".join(args)):
            unknown = set(extras.split(",")) - EXTRAS
            assert not unknown, f"extras {sorted(unknown)} are not in pyproject.toml ({sorted(EXTRAS)})"
    elif program != "pytest":
        raise AssertionError(f"a README command this test does not know how to check: {command}")


@pytest.mark.parametrize("line", command_lines())
def test_each_readme_command_parses(line):
    for command in steps(line):
        check_step(command)


def test_a_renamed_subcommand_or_option_fails_the_check():
    with pytest.raises(SystemExit):
        check_step(["magbench", "benchmark"])
    with pytest.raises(SystemExit):
        check_step(["tox", "-e", "bench", "--", "--tenant", "3"])
    with pytest.raises(AssertionError, match="tox environment"):
        check_step(["tox", "-e", "benchmark"])
    with pytest.raises(AssertionError, match="extras"):
        check_step(["pip", "install", "-e", ".[minilm,gpu]"])


def test_the_quick_start_is_the_main_job_and_the_ci_test_command():
    main_job, tests, _ = blocks(section(README.read_text(), "Quick start (Python 3.11)"), "bash")
    assert main_job.strip() == "python3 -m pip install tox && tox -e bench"
    assert "magbench run" in TOX["testenv:bench"]["commands"]
    test_command = tests.strip().split(" && ")[-1]
    assert test_command.startswith("tox -e ") and "py" in test_command.removeprefix("tox -e ").split(",")
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci, f".ci/run does not run the README's test command {test_command!r}"


def install_line() -> tuple[str, set[str]]:
    """The Quick start's own environment: the line that makes it and the extras it installs."""
    *_, line = blocks(section(README.read_text(), "Quick start (Python 3.11)"), "bash")
    [extras] = re.findall(r"pip install -e '\.\[([\w,-]+)\]'", line)
    return line.strip(), set(extras.split(","))


def requirement_extras() -> dict[str, set[str]]:
    """Each distribution the project requires, by normalised name, and the extras that bring it ("" for always).
    A module is looked up by its own name (`langchain_core`: langchain-core); one named otherwise counts as always
    there."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found: dict[str, set[str]] = {}
    for extra, requirements in [("", project["dependencies"]), *project["optional-dependencies"].items()]:
        for requirement in requirements:
            name = re.match(r"[\w.-]+", requirement).group(0).lower().replace("_", "-")
            found.setdefault(name, set()).add(extra)
    return found


def third_party_imports(source: str, seen: set[Path]) -> set[str]:
    """The top-level modules outside this repository that a source imports when it runs, following this
    repository's modules (their top-level imports, as importing them runs them; a guarded import is optional)."""
    found = set()
    for node in ast.parse(source).body:
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            else []
        )
        for name in names:
            parts = name.split(".")
            if parts[0] not in ("reference", "harness", "baselines"):
                found.add(parts[0])
                continue
            for end in range(1, len(parts) + 1):  # each package on the way is imported too
                base = ROOT.joinpath(*parts[:end])
                module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
                if module.exists() and module not in seen:
                    seen.add(module)
                    found |= third_party_imports(module.read_text(), seen)
    return found


COMMAND_EXTRAS = {
    r"\bmagbench\b": "harness",
    r"magbench serve": "serve",
    r"magbench conformance": "test",
    r"magbench chat": "ollama",
    r"\bminilm\b": "minilm",
}
"""What a README command or example needs beyond its imports, by a pattern of its text: the extra `magbench`
names when it is missing (the harness itself, the MCP SDK, pytest, the Ollama client, the packaged MiniLM model
loaded on first use)."""


def test_one_install_line_brings_every_readme_example_and_the_magbench_command():
    line, extras = install_line()
    assert line.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[") and line.endswith(
        ". .venv/bin/activate"
    )  # activated, its bin/ (with the `magbench` script pyproject.toml declares) is on PATH
    assert "magbench" in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    text = README.read_text()
    requirements = requirement_extras()
    for example in blocks(text, "python"):
        for module in third_party_imports(example, set()):
            bring = requirements.get(module.lower().replace("_", "-"), {""})
            assert "" in bring or bring & extras, f"an example imports {module}: extra {sorted(bring)} not installed"
    needed = {extra for pattern, extra in COMMAND_EXTRAS.items() if re.search(pattern, text)}
    assert needed <= extras, f"README commands need extras {sorted(needed - extras)} the install line lacks"
    configs = [
        json.loads(block) for page in PAGES for block in blocks(page.read_text(), "json") if "mcpServers" in block
    ]
    assert configs and all(
        server["command"].endswith("/.venv/bin/magbench")
        for config in configs
        for server in config["mcpServers"].values()
    ), "a desktop client starts the command by the full path of the install line's environment"


def test_the_install_line_check_catches_a_missing_extra():
    requirements = requirement_extras()
    assert requirements["langgraph"] == {"langgraph"} and "" in requirements["numpy"]
    example = "from reference.integrations.langgraph import CellularStore"
    assert {"langgraph", "langchain_core"} <= third_party_imports(example, set())


def test_the_engines_real_text_bar_in_the_quick_start_is_the_claims_own():
    from harness.verdicts.claims import REALTEXT_PASSAGES

    quick = section(README.read_text(), "Quick start (Python 3.11)")
    assert f"targets on real text need {REALTEXT_PASSAGES:,} passages" in quick
    assert "--dataset beam:DIR" in quick


def test_the_engine_snippet_run_twice_stores_its_memories_once(tmp_path):
    [snippet] = blocks(section(README.read_text(), "Use the engine"), "python")
    count = "from reference import CellularMemory\nfrom reference.encoders import make_encoder\n" + (
        "with CellularMemory(path='my-memory', encoder=make_encoder('minilm')) as mem: print(len(mem))"
    )
    done = run("-c", f"exec({snippet!r})\nexec({snippet!r})\n{count}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "2"


def readme_subcommands() -> set[str]:
    """The magbench subcommands the README names, and the one the bench environment runs."""
    named = re.findall(r"\bmagbench ([a-z][\w-]*)", README.read_text() + TOX["testenv:bench"]["commands"])
    return set(named)


@pytest.mark.parametrize("name", sorted(readme_subcommands()))
def test_each_magbench_subcommand_in_the_readme_has_help(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    assert f"usage: magbench {name}" in capsys.readouterr().out


def run(*args: str, cwd: Path, path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (*path, ROOT)))}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_magbench_demo_runs(tmp_path):
    done = run("-m", "harness.cli", "demo", "--encoder", "mock", "--size", "200", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "flat_searches" in done.stdout


def test_the_conformance_plugin_runs_as_the_readme_says(tmp_path):
    [line] = [line for line in command_lines() if line.startswith("pytest --pyargs")]
    [command] = steps(line)
    done = run("-m", *command, "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout


def test_the_readme_adapter_passes_the_conformance_suite(tmp_path):
    """The adapter of 'Plug in an engine', saved as the README says, passes what it declares."""
    text = section(README.read_text(), "Plug in an engine")
    [adapter] = [block for block in blocks(text, "python") if "def make(" in block]
    (tmp_path / "my_memory.py").write_text(adapter)
    [systems] = re.findall(r"--systems (\S+)", text)
    for name in systems.split(","):
        assert name in SYSTEMS or name == "my_memory:make", name
    conformance = ("-m", "harness.cli", "conformance", "my_memory:make", "--report", "report")
    done = run(*conformance, cwd=tmp_path, path=(tmp_path,))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "| MB-SEARCH-7 | passed |" in (tmp_path / "report" / "conformance.md").read_text()
    assert "Warning" not in done.stdout + done.stderr, "the command prints no warning of its own making"


RUN_EXAMPLES = """
import os, sys, tempfile, traceback
failed = []
for number, source in enumerate(sys.argv[1:]):
    os.chdir(tempfile.mkdtemp())
    try:
        exec(compile(source, f"example {number}", "exec"), {"__name__": "__example__"})
    except Exception:
        failed.append(f"--- example {number}:\\n{source}\\n{traceback.format_exc()}")
print("\\n".join(failed), file=sys.stderr)
sys.exit(1 if failed else 0)
"""


def test_the_python_examples_run(tmp_path):
    examples = [
        block
        for page in PAGES
        for block in blocks(page.read_text(), "python")
        if not any(fragment in block for fragment in SKIPPED_EXAMPLES)
    ]
    assert len(examples) >= 5
    done = run("-c", RUN_EXAMPLES, *examples, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_point_at_files_and_headings(page):
    text = page.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        assert linked.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor:
            headings = {slug(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.M)}
            assert anchor in headings, f"{page.name} links to {target}: no such heading"


def defined_at_top(module: Path, name: str) -> bool:
    """Whether a module's source defines `name` at its top level (classes, functions, assignments, imports)."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
        ):
            return True
    return False


def dotted_exists(dotted: str) -> bool:
    """`package.module.Name`: the longest module prefix is a file of this repository, and what follows it is
    defined at its top level (read from the source: optional extras need not be installed)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.exists():
            rest = parts[end:]
            return not rest or defined_at_top(module, rest[0])
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_paths_names_and_requirements_exist(page):
    text = page.read_text()
    spec = (ROOT / "SPEC.md").read_text()
    for code in re.findall(r"`([^`\n]+)`", text):
        for path in re.findall(rf"(?<![\w./<>-])({PATHS})", code):
            assert path.startswith(GENERATED) or (ROOT / path).exists(), f"{page.name} names {path}: no such file"
        for dotted in re.findall(r"(?<![\w.])((?:reference|harness|baselines)(?:\.\w+)+)", code):
            assert dotted_exists(dotted), f"{page.name} names {dotted}, which is not defined"
        for variable in re.findall(r"\bMAGBENCH_[A-Z_]+", code):
            assert variable in (ROOT / "tox.ini").read_text(), f"{page.name} names {variable}: tox does not pass it on"
    for requirement in re.findall(r"\bMB-[A-Z]+-\d+\b", text):
        assert f"**{requirement}**" in spec, f"{page.name} names {requirement}, which SPEC.md does not define"


def test_the_readme_reads_in_five_minutes():
    text = README.read_text()
    assert len(text.splitlines()) < 200
    for command in table_commands(section(text, "Commands")):
        row = next(line for line in text.splitlines() if line.startswith(f"| `{command}` |"))
        assert len(row.split(" | ", 1)[1]) <= 100, f"the row of {command} is more than one line"
    cells = re.findall(r"^\| (.+?) \|", section(text, "Systems"), re.M)
    listed = {name for cell in cells for name in re.findall(r"`([^`]+)`", cell)}
    missing = set(SYSTEMS) - listed - {f"reference{name}" for name in listed if name.startswith("-")}
    assert not missing, f"registered systems missing from the README's table: {sorted(missing)}"
