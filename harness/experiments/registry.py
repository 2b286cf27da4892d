"""The registry of experiments, the way mteb registers tasks: each experiment declares its name, the results
section it fills, the data it runs on and what it measures (its docstring's first line), and a run selects
experiments from the registry (`selected`) instead of naming them in code.

An experiment is a function of the `RunContext`, which holds what every experiment of a run reads: the plan,
the data asked for, the encoders, the progress display, and the real-text corpus, loaded once for the
experiments that share it. It also says how long it plans to take (`work`), so that a run can tell its time left
from its start (`harness.output.progress.RunProgress`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tabulate import tabulate

from harness.data.corpus import Corpus, load_corpus
from harness.data.dialogue import SPEAKER_CAPTIONS, TurnFormat
from harness.data.spec import DatasetSpec
from harness.measure.plan import RunPlan
from harness.output.progress import Progress, silent
from harness.systems.options import OptionError
from reference.encoders import Encoder

if TYPE_CHECKING:
    from harness.measure.answers import Answering

Data = Literal["default", "dialogue", "beam", "beir"]
"""What a run measures: the default run (generated data and a real-text corpus), or one `--dataset`."""


@dataclass
class RunContext:
    """What the experiments of one run read, and what they record of the data they read (`dataset_info`)."""

    plan: RunPlan
    encoders: dict[str, Encoder]
    dataset: DatasetSpec | None = None
    systems: tuple[str, ...] | None = None
    """The systems `--systems` chose (None: each experiment's own)."""
    corpus_spec: str = "stdlib"
    turn_format: TurnFormat = SPEAKER_CAPTIONS
    stream_size: int | None = None
    progress: Progress = silent
    dataset_info: dict[str, Any] = field(default_factory=dict)
    chosen: tuple[str, ...] = ()
    """The experiments this run runs, by name (what one plans may depend on what runs before it)."""
    errata: Path | None = None
    """LoCoMo corrections (`--errata`): tables give the original and the corrected key (`harness.data.errata`)."""
    answering: Answering | None = None
    """What the answers experiment scores (`--answers`, `--reader`, `--judge`)."""

    def __post_init__(self) -> None:
        if self.systems:
            self.plan = self.plan.only(self.systems)

    @property
    def data(self) -> Data:
        return data_of(self.dataset)

    @property
    def encoder(self) -> tuple[str, Encoder]:
        """The run's first encoder, by name."""
        return next(iter(self.encoders.items()))

    @property
    def text_encoder(self) -> Encoder:
        """The encoder for real text: MiniLM when the run has it."""
        return self.encoders.get("minilm", self.encoder[1])

    @cached_property
    def corpus(self) -> Corpus:
        """The real-text corpus: `--dataset beam:DIR`, else `--corpus`; loaded once."""
        return load_corpus(str(self.dataset) if self.data == "beam" else self.corpus_spec)


def data_of(dataset: DatasetSpec | None) -> Data:
    """What a run on `--dataset` (None: none given) measures."""
    if dataset is None:
        return "default"
    return "dialogue" if dataset.dialogue else "beam" if dataset.kind == "beam" else "beir"


@dataclass(frozen=True)
class Experiment:
    name: str
    section: str
    """The results section its rows go to (two experiments may fill one)."""
    data: frozenset[Data]
    """The runs it belongs to."""
    measures: str
    run: Callable[[RunContext], list[Any]]
    work: Callable[[RunContext], float]
    """Its planned seconds for this run's plan and data on the machine the defaults were measured on (a run learns
    its own machine's pace as it goes)."""


EXPERIMENTS: dict[str, Experiment] = {}
"""Every registered experiment by name (`registered()` gives them in the order a run runs them)."""

MODULES = ("harness.measure.answers", "harness.measure.experiments", "harness.measure.reproduce")
"""The modules that register the harness's experiments, in the order a run runs theirs (each module's in the order
it defines them; an experiment registered elsewhere, such as a user's, runs after them)."""


UNPLANNED = 30.0
"""The planned seconds of an experiment that does not say (`work`)."""


def experiment(
    name: str, *, section: str, data: Sequence[Data], work: Callable[[RunContext], float] = lambda _: UNPLANNED
) -> Callable[[Callable[[RunContext], list[Any]]], Callable[[RunContext], list[Any]]]:
    """Register the decorated function as an experiment; its docstring's first line says what it measures, `work`
    how many seconds it plans to take."""

    def register(run: Callable[[RunContext], list[Any]]) -> Callable[[RunContext], list[Any]]:
        if name in EXPERIMENTS:
            raise ValueError(f"experiment {name!r} is registered twice")
        measures = (run.__doc__ or "").strip().split("\n")[0]
        EXPERIMENTS[name] = Experiment(name, section, frozenset(data), measures, run, work)
        return run

    return register


def registered() -> list[Experiment]:
    """Every experiment, the harness's own imported first, in run order whichever module was imported first."""
    for module in MODULES:
        importlib.import_module(module)
    placed = {name: index for index, name in enumerate(EXPERIMENTS)}

    def place(chosen: Experiment) -> tuple[int, int]:
        module = chosen.run.__module__
        return (MODULES.index(module) if module in MODULES else len(MODULES), placed[chosen.name])

    return sorted(EXPERIMENTS.values(), key=place)


def selected(data: Data, names: Sequence[str] | None = None) -> list[Experiment]:
    """The experiments a run on `data` runs, in run order (`registered`): all of them, or only those `names` picks
    (each must exist and run on this data)."""
    runnable = [e for e in registered() if data in e.data]
    if names is None:
        return runnable
    for name in names:
        if name not in EXPERIMENTS:
            raise OptionError(f"--experiments: no experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
        if EXPERIMENTS[name] not in runnable:
            kinds = ", ".join(sorted(EXPERIMENTS[name].data))
            raise OptionError(f"--experiments: {name!r} runs on {kinds} data, not on this run's ({data})")
    return [e for e in runnable if e.name in names]


def listing() -> str:
    """Every registered experiment: its name, section, the data it runs on and what it measures."""
    rows = [(e.name, e.section, ", ".join(sorted(e.data)), e.measures) for e in registered()]
    table: str = tabulate(rows, headers=("experiment", "section", "runs on", "measures"), tablefmt="plain")
    return table
