"""What an experiment is (`Experiment`), and what the experiments of one run read (`RunContext`).

An experiment owns everything of it, in its own module of this package: its workload (`run`), the systems it
measures by default, how long it plans to take (`work`), the report tables of the results section it fills and its
figures. The registry (`harness.experiments.registry`) finds it there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.data.corpus import Corpus, load_corpus
from harness.data.dialogue import SPEAKER_CAPTIONS, TurnFormat
from harness.data.encoding import corpus_cache
from harness.data.spec import DatasetSpec
from harness.measure.plan import RunPlan
from harness.output.progress import Progress, silent
from harness.output.results import RunResults
from harness.output.tables import Table
from reference.encoders import Encoder

if TYPE_CHECKING:
    from harness.experiments.answers import Answering

Data = Literal["default", "dialogue", "beam", "beir"]
"""What a run measures: the default run (generated data and a real-text corpus), or one `--dataset`."""

Render = Callable[[RunResults], list[Table]]
"""A report section: the run's results in, its tables out (none when the run did not measure it)."""
Draw = Callable[[Path, RunResults], list[Path]]
"""A figure: drawn into the run's directory from its results, its paths out (none when there is nothing to draw)."""

UNPLANNED = 30.0
"""The planned seconds of an experiment that does not say (`work`)."""
DEFAULT_PLAN = RunPlan()
"""The plan of the default run, whose seconds each experiment's `work` scales from: what it took in a default run on
the machine the defaults were measured on, times how much of that work this run's plan asks for (the cells its systems
build, the seeds, the streams). A run learns its own machine's pace from these as it goes
(`harness.output.progress.RunProgress`), so they need to be right in proportion more than in size."""
ENCODING_PER_PASSAGE = 0.025
"""Seconds MiniLM takes per passage of real text there (once per corpus: the vectors are cached)."""
DATASET_SECONDS = 120.0
"""A `--dataset` experiment, whose size is known only once its file is read."""


def unplanned(context: RunContext) -> float:
    return UNPLANNED


@dataclass(frozen=True)
class Experiment:
    """One experiment: what it runs on, what it measures and how its results are reported."""

    name: str
    _: KW_ONLY
    section: str
    """The results section its rows go to (two experiments may fill one)."""
    data: frozenset[Data] | Sequence[Data]
    """The runs it belongs to (a frozenset once made)."""
    run: Callable[[RunContext], list[Any]]
    """Its workload: the run's context in, the section's rows out; its docstring's first line says what it
    measures."""
    systems: tuple[str, ...] = ()
    """The systems it measures when `--systems` chooses none (`RunContext.systems_of`)."""
    capability: bool = False
    """Whether it measures what only its own systems have (groups, an MCP server): a `--systems` choice then keeps
    those of its own it names, instead of replacing them."""
    work: Callable[[RunContext], float] = unplanned
    """Its planned seconds for this run's plan and data on the machine the defaults were measured on (a run learns
    its own machine's pace as it goes)."""
    headlines: tuple[Render, ...] = ()
    """Its tables among the report's headline figures."""
    tables: tuple[Render, ...] = ()
    """Its tables among the report's details."""
    figures: tuple[Draw, ...] = ()
    """Its figures, which its tables name (`Table.plot`) to be shown beside them."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", frozenset(self.data))

    @property
    def measures(self) -> str:
        """What it measures: its workload's docstring's first line."""
        return (self.run.__doc__ or "").strip().split("\n")[0]


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

    def systems_of(self, experiment: Experiment) -> tuple[str, ...]:
        """The systems `experiment` measures in this run: the plan's for it, else its own; with `--systems`, the
        choice, or, where it measures a capability only its own systems have, those of its own the choice names."""
        own = self.plan.experiment_systems.get(experiment.name, experiment.systems)
        if not self.systems:
            return own
        if experiment.capability:
            return tuple(s for s in own if s in self.systems)
        return self.systems

    def scaled(self, seconds: float, experiment: Experiment, work: float, default_work: float) -> float:
        """`seconds`, what `experiment` took in the default run, in proportion to this run's share of it: `work`
        (what the plan asks of each system) times the systems it measures, against `default_work` times its own."""
        return seconds * work * len(self.systems_of(experiment)) / (default_work * len(experiment.systems))

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

    def encoding_seconds(self) -> float:
        """The planned seconds of the real-text corpus's encoding: none when its vectors are cached."""
        path = corpus_cache(self.corpus, self.text_encoder)
        return 0.0 if path is not None and path.is_file() else len(self.corpus.passages) * ENCODING_PER_PASSAGE

    @cached_property
    def corpus(self) -> Corpus:
        """The real-text corpus: `--dataset beam:DIR`, else `--corpus`; loaded once."""
        return load_corpus(str(self.dataset) if self.data == "beam" else self.corpus_spec)


def data_of(dataset: DatasetSpec | None) -> Data:
    """What a run on `--dataset` (None: none given) measures."""
    if dataset is None:
        return "default"
    return "dialogue" if dataset.dialogue else "beam" if dataset.kind == "beam" else "beir"
