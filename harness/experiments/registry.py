"""The registry of experiments, the way mteb registers tasks: every `Experiment` defined in a module of this package
is found there (`registered`), and one defined elsewhere, such as a user's, is added with `register`. A run selects
experiments from the registry (`selected`), and the report reads its tables and figures from it (`report_tables`,
`figures`), instead of naming them in code.

The harness's own experiments run in `RUN_ORDER` and are reported in `REPORT_ORDER`; any other runs and is reported
after them, in the order it was found, so adding one needs no change here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence

from tabulate import tabulate

import harness.experiments
from harness.experiments.definition import Data, Draw, Experiment, Render
from harness.systems.options import OptionError

RUN_ORDER = (
    "answers",
    "scaling",
    "growing",
    "needles",
    "grouping",
    "judges",
    "beir",
    "realtext",
    "streaming",
    "expiring-stream",
    "agent-loop",
    "multi-tenant",
    "serving",
    "concurrency",
    "filtered",
    "dialogue",
    "knowledge-update",
    "field-claims",
)
"""The order the harness's experiments run in (what one records of its data may be replaced by a later one's)."""
REPORT_ORDER = (
    "scaling",
    "realtext",
    "streaming",
    "needles",
    "grouping",
    "judges",
    "dialogue",
    "beir",
    "answers",
    "field-claims",
    "knowledge-update",
    "serving",
    "concurrency",
    "filtered",
    "multi-tenant",
)
"""The order the report shows the harness's experiments' tables and figures in (those without any left out)."""

_ADDED: dict[str, Experiment] = {}
"""Experiments defined outside this package (`register`)."""


def register(experiment: Experiment) -> Experiment:
    """Add an experiment defined outside this package; a name is registered once."""
    if experiment.name in _found() or experiment.name in _ADDED:
        raise ValueError(f"experiment {experiment.name!r} is registered twice")
    _ADDED[experiment.name] = experiment
    return experiment


def unregister(name: str) -> None:
    """Take back an experiment added with `register`."""
    del _ADDED[name]


def _found() -> dict[str, Experiment]:
    """Every experiment defined in a module of this package, by name, in the order the modules are named."""
    found: dict[str, Experiment] = {}
    for module in pkgutil.iter_modules(harness.experiments.__path__, "harness.experiments."):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, Experiment) and value.run.__module__ == module.name:
                if value.name in found:
                    raise ValueError(f"experiment {value.name!r} is registered twice")
                found[value.name] = value
    return found


def _ordered(experiments: dict[str, Experiment], order: Sequence[str]) -> list[Experiment]:
    def place(experiment: Experiment) -> int:
        return order.index(experiment.name) if experiment.name in order else len(order)

    return sorted(experiments.values(), key=place)


def registered() -> list[Experiment]:
    """Every experiment, in run order."""
    return _ordered(_found() | _ADDED, RUN_ORDER)


def reported() -> list[Experiment]:
    """Every experiment, in report order."""
    return _ordered(_found() | _ADDED, REPORT_ORDER)


def headline_tables() -> list[Render]:
    """The report's headline tables, in report order."""
    return [render for experiment in reported() for render in experiment.headlines]


def report_tables() -> list[Render]:
    """The report's detail tables, in report order."""
    return [render for experiment in reported() for render in experiment.tables]


def figures() -> list[Draw]:
    """The report's figures, in report order."""
    return [draw for experiment in reported() for draw in experiment.figures]


def selected(data: Data, names: Sequence[str] | None = None) -> list[Experiment]:
    """The experiments a run on `data` runs, in run order (`registered`): all of them, or only those `names` picks
    (each must exist and run on this data)."""
    every = registered()
    runnable = [e for e in every if data in e.data]
    if names is None:
        return runnable
    by_name = {e.name: e for e in every}
    for name in names:
        if name not in by_name:
            raise OptionError(f"--experiments: no experiment {name!r}; known: {', '.join(by_name)}")
        if by_name[name] not in runnable:
            kinds = ", ".join(sorted(by_name[name].data))
            raise OptionError(f"--experiments: {name!r} runs on {kinds} data, not on this run's ({data})")
    return [e for e in runnable if e.name in names]


def listing() -> str:
    """Every registered experiment: its name, section, the data it runs on and what it measures."""
    rows = [(e.name, e.section, ", ".join(sorted(e.data)), e.measures) for e in registered()]
    table: str = tabulate(rows, headers=("experiment", "section", "runs on", "measures"), tablefmt="plain")
    return table
