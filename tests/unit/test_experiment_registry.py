"""The experiment registry: each run selects its experiments by the data it measures, a choice is checked, and an
experiment is one module: adding one touches no other file."""

import ast
import dataclasses
import importlib
import json
import sys
from pathlib import Path

import pytest

import harness.experiments
from harness.benchmark import run_benchmark
from harness.experiments.definition import Experiment, RunContext
from harness.experiments.registry import listing, register, registered, reported, selected, unregister
from harness.measure.plan import RunPlan
from harness.output.results import JudgeRow, RunResults
from harness.output.tables import Table, column
from harness.systems.options import OptionError

PACKAGE = Path(harness.experiments.__file__).parent
FRAMEWORK = {"__init__", "definition", "registry"}
"""The package's modules that define no experiment: what an experiment is, and the registry."""


def names(data, only=None):
    return [e.name for e in selected(data, only)]


def test_each_run_selects_the_experiments_of_its_data_in_registry_order():
    assert names("default") == [
        "scaling", "growing", "needles", "grouping", "judges", "realtext", "streaming", "expiring-stream",
        "agent-loop", "multi-tenant", "serving", "concurrency", "filtered", "knowledge-update",
    ]  # fmt: skip
    assert names("beam") == ["realtext", "streaming", "expiring-stream"]
    assert names("dialogue") == ["answers", "dialogue", "knowledge-update", "field-claims"]
    assert names("beir") == ["beir"]
    assert names("default", ["streaming", "judges"]) == ["judges", "streaming"]


def test_every_experiment_fills_a_results_section_and_says_what_it_measures():
    sections = {f.name for f in dataclasses.fields(RunResults)}
    for chosen in registered():
        assert chosen.section in sections and chosen.measures and chosen.data
        assert chosen.name in listing()


def test_a_choice_names_registered_experiments_that_run_on_the_data():
    with pytest.raises(OptionError, match="no experiment 'nope'"):
        selected("default", ["nope"])
    with pytest.raises(OptionError, match="'dialogue' runs on dialogue data, not on this run's"):
        selected("beam", ["dialogue"])


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        register(Experiment("judges", section="judges", data=["default"], run=lambda context: []))


def test_each_module_of_the_package_is_one_experiment_that_owns_its_pieces():
    """Every piece an experiment names (its workload, time estimate, tables, figures) is defined in its own module,
    and every module of the package but the registry's own defines an experiment."""
    modules = {e.run.__module__ for e in registered()}
    assert modules == {f"harness.experiments.{path.stem}" for path in PACKAGE.glob("*.py")} - {
        f"harness.experiments.{name}" for name in FRAMEWORK
    }
    for experiment in registered():
        pieces = [experiment.run, experiment.work, *experiment.headlines, *experiment.tables, *experiment.figures]
        foreign = [
            p.__qualname__
            for p in pieces
            if p.__module__ not in (experiment.run.__module__, "harness.experiments.definition")
        ]
        assert foreign == [], experiment.name


def test_no_module_outside_the_package_names_an_experiment():
    """The run, the plan, the report and the CLI ask the registry: none imports an experiment's module (the answers
    experiment's options are the CLI's, so the CLI and the benchmark may import `Answering` from it)."""
    harness = PACKAGE.parent
    named = []
    for path in harness.rglob("*.py"):
        if PACKAGE in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness.experiments."):
                stem = node.module.rsplit(".", 1)[1]
                if stem not in FRAMEWORK and [a.name for a in node.names] != ["Answering"]:
                    named.append(f"{path.relative_to(harness)}: {node.module}")
    assert named == []


def _tiny(context: RunContext) -> list[JudgeRow]:
    """A made-up count of one judge's pairs (an experiment defined in a test)."""
    return [JudgeRow("tiny judge", 0, 4, 1.0, 0.5, {}, {})]


def _tiny_table(results: RunResults) -> list[Table]:
    rows = [{"judge": r.judge, "pairs": r.pairs} for r in results.judges if r.judge == "tiny judge"]
    return [
        Table(
            "tiny",
            "A tiny experiment",
            "Defined in a test.",
            (column("judge", "judge"), column("pairs", "pairs")),
            rows,
        )
    ]


def _tiny_figure(out: Path, results: RunResults) -> list[Path]:
    path = out / "tiny.txt"
    path.write_text(str(len(results.judges)))
    return [path]


TINY = Experiment(
    "tiny",
    section="judges",
    data=["default"],
    run=_tiny,
    work=lambda context: 1.0,
    tables=(_tiny_table,),
    figures=(_tiny_figure,),
)


@pytest.fixture
def tiny():
    register(TINY)
    yield TINY
    unregister(TINY.name)


def test_an_experiment_defined_in_one_place_is_listed_run_reported_and_drawn(tiny, tmp_path, capsys):
    assert "tiny" in listing() and reported()[-1] is tiny
    report, results = run_benchmark(
        RunPlan.quick(), out=tmp_path, dataset=None, encoder="mock", systems=None, command="test", only=["tiny"]
    )
    assert [r.judge for r in results.judges] == ["tiny judge"] and results.run.planned == {"tiny": 1.0}
    text = report.read_text()
    assert "### A tiny experiment" in text and "| tiny judge" in text
    assert (tmp_path / "tiny.txt").read_text() == "1" and (tmp_path / "tiny.csv").is_file()
    assert json.loads((tmp_path / "results.json").read_text())["judges"][0]["judge"] == "tiny judge"


def test_a_new_module_in_the_package_is_an_experiment_with_no_other_file_changed(tmp_path, monkeypatch):
    """The registry finds a module added to the package's folder (here a second folder of the package's path)."""
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "added.py").write_text(
        "from harness.experiments.definition import Experiment\n\n\n"
        'def run(context):\n    """Nothing, measured."""\n    return []\n\n\n'
        'ADDED = Experiment("added", section="judges", data=["default"], run=run)\n'
    )
    monkeypatch.setattr(harness.experiments, "__path__", [*harness.experiments.__path__, str(folder)])
    try:
        assert names("default")[-1] == "added" and "Nothing, measured." in listing()
    finally:
        sys.modules.pop("harness.experiments.added", None)
    importlib.invalidate_caches()
