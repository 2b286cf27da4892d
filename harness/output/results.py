"""The one contract between run, claims, report and compare: a typed, versioned `RunResults`.

`results.json` is `RunResults.to_json()`; `RunResults.from_json` validates it (pydantic) and refuses a
file of another schema version with a message that says what to do.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import numpy as np
from pydantic import TypeAdapter, ValidationError

from harness.measure.chance import Chance
from harness.measure.metrics import Agreement, EvidenceScores, GroupStats, LatencyStats, UpdateScores, latency_stats
from harness.measure.pace import Pace
from harness.measure.plan import RunPlan
from harness.measure.readings import Reading
from harness.verdicts.confidence import REFUTED, best_of_passes, noisy

SCHEMA_VERSION = 3
"""3: the streaming section. 2: per-pass latencies (`pass_latencies_ns`), typed rows for every section.
1 (unversioned): one pass."""


class ResultsFileError(ValueError):
    """A results file that this version cannot read: missing, not JSON, another schema, or malformed."""


class MeasurementKey(NamedTuple):
    """What identifies a measurement across runs: its section, system, data (dataset, encoder, size) and
    query-time settings; shown as `section:system:dataset:encoder:n[:settings]`."""

    section: str
    system: str
    dataset: str
    encoder: str
    n_docs: int
    params: str = ""

    def __str__(self) -> str:
        return ":".join(map(str, self if self.params else self[:-1]))

    def same_data(self, other: MeasurementKey) -> bool:
        """Measured in the same section on the same data (any system, any settings)."""
        return (self.section, self.dataset, self.encoder, self.n_docs) == (
            other.section,
            other.dataset,
            other.encoder,
            other.n_docs,
        )


@dataclass(frozen=True)
class Measurement:
    """One system, one evaluation set, one query-parameter setting; latencies per timing pass."""

    system: str
    dataset: str
    encoder: str
    n_docs: int
    params: dict[str, Any]
    build_s: float
    ingest_per_s: float
    rss_bytes_per_doc: float
    latency: LatencyStats
    recall_at_10: float
    capped_recall_at_10: float
    mrr: float
    ndcg_at_10: float
    found_at: dict[int, int]
    queries: int
    describe: dict[str, Any] = field(default_factory=dict)
    given: str = ""
    """What each timed search was given (`timing.given`): "vector", the query's vector, encoded before the clock
    started, or "text", which the system turns into what it searches with inside its timed search."""
    pass_latencies_ns: list[list[int]] = field(default_factory=list, repr=False)
    retrieved: list[list[str]] = field(default_factory=list, repr=False)

    @classmethod
    def timed(cls, pass_latencies_ns: list[list[int]], **fields: Any) -> Measurement:
        """A measurement whose latency figures are computed from its passes (pooled)."""
        pooled = [t for one_pass in pass_latencies_ns for t in one_pass]
        return cls(latency=latency_stats(pooled), pass_latencies_ns=pass_latencies_ns, **fields)

    @property
    def latencies_ns(self) -> list[int]:
        """Every timed query of every pass."""
        return [t for one_pass in self.pass_latencies_ns for t in one_pass]

    @property
    def noisy(self) -> bool:
        """One timing pass stood out from the others beyond the run's usual noise (`confidence.noisy`)."""
        return noisy(self.pass_latencies_ns)

    @property
    def best_p50_ms(self) -> float:
        """The median over queries of each query's fastest pass: the latency verdicts read
        (`confidence.best_of_passes`)."""
        return float(np.median(best_of_passes(np.asarray(self.pass_latencies_ns, dtype=np.float64) / 1e6)))

    def pass_medians_ms(self) -> list[float]:
        return [float(np.median(p)) / 1e6 for p in self.pass_latencies_ns if p]

    def passes_text(self) -> str:
        """Its pass medians in words (naming a noisy measurement)."""
        return f"pass medians {', '.join(f'{x:.3g}' for x in self.pass_medians_ms())} ms"

    @property
    def pass_spread(self) -> float:
        """Slowest over fastest pass median, minus one (0 with one pass): how much the machine moved."""
        medians = [float(np.median(p)) for p in self.pass_latencies_ns if p]
        return max(medians) / min(medians) - 1 if medians and min(medians) > 0 else 0.0

    def key(self, section: str) -> MeasurementKey:
        """What identifies this measurement across runs."""
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return MeasurementKey(section, self.system, self.dataset, self.encoder, self.n_docs, params)

    def row(self) -> dict[str, Any]:
        """A flat dict for tables and CSV (no raw lists)."""
        flat = {
            k: v
            for k, v in asdict(self).items()
            if k not in ("pass_latencies_ns", "retrieved", "latency", "describe", "found_at", "params")
        }
        flat.update({f"latency_{k}": v for k, v in asdict(self.latency).items()})
        flat["pass_spread"] = self.pass_spread
        flat.update({f"found_at_{k}": v for k, v in self.found_at.items()})
        flat.update({f"param_{k}": v for k, v in self.params.items()})
        shown = ("groups", "groups_per_cell", "estimated_recall", "estimated_recall_low", "bytes_read_per_search")
        flat.update({k: v for k, v in self.describe.items() if k in shown})
        return flat


@dataclass(frozen=True)
class DialogueRow:
    """One system's evidence retrieval on one subset of questions, at turn or session granularity."""

    system: str
    granularity: str
    subset: str
    scores: EvidenceScores
    latency_p50_ms: float
    mode: str = "bulk"
    """How the memory was filled when the questions were asked (`harness.experiments.dialogue`: `BULK`, `WHEN_DUE`,
    `AT_THE_END`)."""
    tokens_at_10: float = float("nan")
    """Mean tokens per question of its top-10 hits' texts (`harness.measure.tokens`)."""
    budget_recall: dict[int, float] = field(default_factory=dict)
    """Evidence recall within each context budget (tokens): hits taken in rank order until it is spent."""
    chance: Chance | None = None
    """What a random ranking of the same candidates scores (`harness.measure.chance`)."""
    candidates: tuple[int, int] | None = None
    """The fewest and the most candidates (turns, or sessions at session level) a counted question was ranked among."""
    k: int = 10
    ingest_ms_per_turn: float = float("nan")
    """Time to write the memories, per turn: the build of each conversation's memory (bulk), or its turn-by-turn
    writes (online)."""
    given: str = ""
    """What each timed search was given: "vector" or "text" (`Measurement.given`)."""
    query_encoding_p50_ms: float = float("nan")
    """The run's encoder encoding one question alone, p50: paid before the clock by a system given the vector."""
    key: str = "original"
    """The evidence key the figures are scored on: LoCoMo's own, or `corrected` by `--errata`."""

    @property
    def k_covers_candidates(self) -> bool:
        """Whether k reaches the candidates of some counted question: every one of them is returned."""
        return self.candidates is not None and self.k >= self.candidates[0]


@dataclass(frozen=True)
class ScoredAnswer:
    """One answer scored: LoCoMo's metrics (`answer_scores`) and, when judged, the judge's label and reason."""

    question_id: str
    category: str
    f1: float
    bleu1: float
    exact: float
    correct: bool | None = None
    reason: str = ""


@dataclass(frozen=True)
class AnswerRow:
    """One answer set scored on one key (`original` or `corrected`), LLM-free (`judge` empty) or by one judge."""

    system: str
    key: str
    answers: list[ScoredAnswer]
    judge: str = ""
    leniency: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Known-wrong answers the judge accepted, of how many, by probe."""
    lenient: bool = False
    """The judge accepts more known-wrong answers than the limit (`answer_judge.LENIENCY_LIMIT`)."""
    claimed: float | None = None
    """A published accuracy of this system, to be checked against the judged one."""
    changed: list[str] = field(default_factory=list)
    """The ids of the questions the corrections changed (the corrected key)."""


@dataclass(frozen=True)
class UpdateRow:
    """One system's retrieval of facts that changed, in one scoring mode, before or after a sleep pass."""

    system: str
    data: str
    mode: str
    """`similarity` or `memory` (memory-mode scores: importance, recency, superseded cells)."""
    slept: bool
    scores: UpdateScores


@dataclass(frozen=True)
class Operation:
    """Every operation of one kind in a streamed run (`runbooks.py`), with its raw latencies: `write` (one
    turn), `delete`, `replace` (new versions under the same ids), `sleep`, `search_after_write` (the first search
    after a write, delete, replace or sleep), `search` (no write before it), `find_own` (a cell searched by its own
    text right after its write)."""

    kind: str
    latencies_ns: list[int] = field(repr=False)
    cells: int = 0
    """Cells written or deleted by these operations."""

    @property
    def latency(self) -> LatencyStats:
        return latency_stats(self.latencies_ns)

    @property
    def total_s(self) -> float:
        return sum(self.latencies_ns) / 1e9

    @property
    def cells_per_s(self) -> float:
        return self.cells / self.total_s if self.cells and self.total_s else float("nan")


@dataclass(frozen=True)
class StreamCheckpoint:
    """The state of a streamed run at a checkpoint: every held-out query answered back to back."""

    label: str
    written: int
    live: int
    recall_at_10: float
    """Against exact dense search over the cells live at this moment."""
    search_p50_ms: float
    """The checkpoint's queries."""
    between_p50_ms: float
    """The searches taken between writes since the previous checkpoint (nan if none)."""
    deleted_returned: int


@dataclass(frozen=True)
class StreamRow:
    """One system through one runbook (`runbooks.py`); `skipped` says why a system could not run it."""

    runbook: str
    system: str
    dataset: str
    encoder: str
    cells: int
    queries: int
    description: str = ""
    """What the runbook does (`Runbook.description`)."""
    query: str = ""
    """What the system searched by: "vector", "text" or "text + vector" (`streaming.query_kind`)."""
    operations: list[Operation] = field(default_factory=list)
    checkpoints: list[StreamCheckpoint] = field(default_factory=list)
    deleted_returned: int = 0
    """Hits naming a cell deleted before the search: any fails the row."""
    found_own_at_1: float = float("nan")
    skipped: str = ""

    @property
    def mean_recall(self) -> float:
        """Recall@10 averaged over every checkpoint, as big-ann-benchmarks' streaming track reports it."""
        return float(np.mean([c.recall_at_10 for c in self.checkpoints])) if self.checkpoints else float("nan")

    def operation(self, kind: str) -> Operation:
        for operation in self.operations:
            if operation.kind == kind:
                return operation
        raise LookupError(f"{self.system} ran no {kind} in {self.runbook}")


@dataclass(frozen=True)
class GroupingRow:
    """How one system's groups agree with the true topics of a haystack."""

    system: str
    encoder: str
    docs: int
    agreement: Agreement
    sizes: GroupStats

    def row(self) -> dict[str, Any]:
        return {"system": self.system, "encoder": self.encoder, "docs": self.docs, **asdict(self.agreement)} | asdict(
            self.sizes
        )


@dataclass(frozen=True)
class JudgeRow:
    """One conflict judge on one seed's labelled pairs."""

    judge: str
    seed: int
    pairs: int
    precision: float
    recall: float
    missed: dict[str, int]
    false_alarms: dict[str, int]


@dataclass(frozen=True)
class ServingRow:
    """One tool's calls in the serving experiment: many clients at once against one system (`serving.py`)."""

    system: str
    transport: str
    clients: int
    tool: str
    calls: int
    p50_ms: float
    p99_ms: float
    calls_per_s: float
    """Every tool's calls of the system over the time they took, all clients together."""


@dataclass(frozen=True)
class ConcurrencyRow:
    """`clients` clients searching one built system at once for a fixed time (`concurrency.py`), alone or while
    cells are written at a fixed rate; `transport` says whether the clients were threads of the harness's process
    or processes of their own calling a server."""

    system: str
    transport: str
    cells: int
    clients: int
    writes_per_s: float
    """Cells written per second while searching, as achieved (0: searches alone)."""
    searches: int
    qps: float
    """Searches answered per second, all clients together."""
    p50_ms: float
    p99_ms: float
    recall_at_10: float
    """Against exact search over the cells written before each search began (a hit written during it counts when
    it scores as well as the 10th)."""
    short: int = 0
    """Answers with fewer than 10 hits."""
    window_qps: list[float] = field(default_factory=list)
    """Each window's QPS (`qps` is their median): how far a shared machine moved the level."""
    window_p99_ms: list[float] = field(default_factory=list)
    """Each window's p99 (`p99_ms` pools every window's searches): how far a shared machine moved the tail."""


@dataclass(frozen=True)
class FilterRow:
    """One system's searches restricted to the documents a filter or a scope matches (`filtered.py`);
    `skipped` says why a system could not run the case."""

    system: str
    case: str
    restriction: str
    """The filter (`where`) or scope searched, as text."""
    cells: int
    matching: int
    queries: int = 0
    recall_at_10: float = float("nan")
    """Against exact search over the matching documents."""
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    outside: int = 0
    """Hits of documents the restriction does not match: any fails the row."""
    skipped: str = ""


@dataclass(frozen=True)
class TenantRow:
    """One system through the multi-tenant runbook (`tenants.py`): its writes, a scope's searches in the shared
    memory against the same cells alone (raw latencies per kind, every pass), recall and resident memory."""

    system: str
    scopes: int
    cells: int
    description: str = ""
    write_p50_ms: float = float("nan")
    write_p99_ms: float = float("nan")
    searches_ns: dict[str, list[int]] = field(default_factory=dict)
    """Latencies by kind: `text_shared`, `text_alone`, `vector_shared`, `vector_alone`."""
    recall_at_10: float = float("nan")
    """Each probed scope's vector queries against exact search over that scope."""
    resident_over_raw_vectors: float = float("nan")
    skipped: str = ""

    def skipped_for(self, reason: str) -> TenantRow:
        return replace(self, skipped=reason)

    def measured(self, writes: list[int], searches: dict[str, list[int]], recall: float, resident: float) -> TenantRow:
        p50, p99 = np.percentile(np.asarray(writes, dtype=np.float64) / 1e6, [50, 99]).tolist()
        return replace(
            self, write_p50_ms=p50, write_p99_ms=p99, searches_ns=searches, recall_at_10=recall,
            resident_over_raw_vectors=resident,
        )  # fmt: skip

    def p50_ms(self, kind: str) -> float:
        """The median of one kind of search (`text_shared`, `vector_alone`, …), in ms."""
        return float(np.median(self.searches_ns[kind])) / 1e6

    def shared_over_alone(self, kind: str) -> float:
        """How much a search of this kind (`text`, `vector`) costs in the shared memory over the scope alone."""
        return self.p50_ms(f"{kind}_shared") / self.p50_ms(f"{kind}_alone")

    def row(self) -> dict[str, Any]:
        """The report's columns."""
        shown: dict[str, Any] = {"system": self.system, "scopes": self.scopes, "cells": self.scopes * self.cells}
        if self.skipped:
            return shown | {"skipped": self.skipped}
        for kind in ("text", "vector"):
            shown |= {
                f"{kind}_p50_ms": self.p50_ms(f"{kind}_shared"),
                f"{kind}_alone_p50_ms": self.p50_ms(f"{kind}_alone"),
            }
            shown[f"{kind}_shared_over_alone"] = self.shared_over_alone(kind)
        return shown | {
            "write_p50_ms": self.write_p50_ms, "write_p99_ms": self.write_p99_ms, "recall@10": self.recall_at_10,
            "resident_over_raw_vectors": self.resident_over_raw_vectors,
        }  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    claim: str
    system: str
    verdict: str
    measured: str
    bar: str
    condition: str
    statement: str = ""
    source: str = ""
    neighbours: tuple[str, ...] = ()
    """Verdicts a rerun of the same code may read instead: the figure stands at an edge between them
    (`confidence.Judgement`)."""
    hoped: str = ""
    """Why the claim not holding for this system is the hoped-for result (empty: holding is)."""
    peer: bool = False
    """A peer measured against one of the engine's targets for comparison, not a target of its own."""

    @property
    def as_hoped(self) -> bool:
        """The claim does not hold, and that is the hoped-for result."""
        return bool(self.hoped) and self.verdict == REFUTED

    @property
    def shown(self) -> str:
        """The verdict as a report prints it: whether that is the hoped-for result, and the verdicts it stands at
        the edge of."""
        shown = f"{self.verdict} (as hoped)" if self.as_hoped else self.verdict
        return f"{shown} (at the edge of {' and '.join(self.neighbours)})" if self.neighbours else shown


@dataclass(frozen=True)
class Machine:
    platform: str
    processor: str
    cpus: int | None
    python: str
    packages: dict[str, str | None]

    def differences(self, other: Machine) -> list[str]:
        """What differs between two machines, field by field and package by package."""
        found = [
            f"{name}: {getattr(self, name)} vs {getattr(other, name)}"
            for name in ("platform", "processor", "cpus", "python")
            if getattr(self, name) != getattr(other, name)
        ]
        return found + [
            f"{name}: {self.packages.get(name)} vs {other.packages.get(name)}"
            for name in sorted(self.packages.keys() | other.packages.keys())
            if self.packages.get(name) != other.packages.get(name)
        ]


@dataclass(frozen=True)
class RunInfo:
    """Where, when and how a run was made."""

    id: str
    started: str
    duration_s: float
    command: str
    commit: str
    dirty: bool
    machine: Machine
    plan: RunPlan
    encoders: dict[str, str]
    dataset: str | None = None
    dataset_info: dict[str, Any] = field(default_factory=dict)
    load_average: tuple[float, float, float] | None = None
    """The machine's load averages when the run ended, as `psutil.getloadavg()` gives them (None: not recorded)."""
    took: dict[str, float] = field(default_factory=dict)
    """Seconds each experiment took."""
    planned: dict[str, float] = field(default_factory=dict)
    """Seconds each experiment planned (`Experiment.work`), at the pace the plan was measured at."""
    pace: Pace | None = None
    """This machine's pace against the plan's, measured before the run (`measure_pace`): an experiment's planned
    seconds times its median are what the run expected it to take."""
    systems: tuple[str, ...] | None = None
    """The systems `--systems` chose (None: each experiment's own)."""

    def data_differences(self, other: RunInfo) -> list[str]:
        """What differs between the data two runs measured: each fact of it both runs recorded but where it was
        read from (a file's SHA-256, the passages' fingerprint and how many were used, the turn format)."""
        return [
            f"{name}: {self.dataset_info[name]} vs {other.dataset_info[name]}"
            for name in sorted(self.dataset_info.keys() & other.dataset_info.keys() - WHERE_READ)
            if self.dataset_info[name] != other.dataset_info[name]
        ]


WHERE_READ = frozenset({"file", "corpus"})
"""The facts of `RunInfo.dataset_info` that name where the data was read, not what it was: the same file moved
is the same data."""


class Sections(TypedDict, total=False):
    """What a run measured, section by section, as it goes (the sections of `RunResults`)."""

    scaling: list[Measurement]
    growing: list[Measurement]
    needles: list[Measurement]
    beir: list[Measurement]
    realtext: list[Measurement]
    dialogue: list[DialogueRow]
    answers: list[AnswerRow]
    field_claims: list[Reading]
    updates: list[UpdateRow]
    streaming: list[StreamRow]
    grouping: list[GroupingRow]
    judges: list[JudgeRow]
    serving: list[ServingRow]
    concurrency: list[ConcurrencyRow]
    filtered: list[FilterRow]
    tenants: list[TenantRow]


@dataclass(frozen=True)
class RunResults:
    """Everything a run measured and judged. Sections a run did not measure stay empty."""

    run: RunInfo
    scaling: list[Measurement] = field(default_factory=list)
    growing: list[Measurement] = field(default_factory=list)
    needles: list[Measurement] = field(default_factory=list)
    beir: list[Measurement] = field(default_factory=list)
    realtext: list[Measurement] = field(default_factory=list)
    dialogue: list[DialogueRow] = field(default_factory=list)
    answers: list[AnswerRow] = field(default_factory=list)
    field_claims: list[Reading] = field(default_factory=list)
    """The field's retrieval claims reproduced under each reading of their definitions (`experiments.field_claims`)."""
    updates: list[UpdateRow] = field(default_factory=list)
    streaming: list[StreamRow] = field(default_factory=list)
    grouping: list[GroupingRow] = field(default_factory=list)
    judges: list[JudgeRow] = field(default_factory=list)
    serving: list[ServingRow] = field(default_factory=list)
    concurrency: list[ConcurrencyRow] = field(default_factory=list)
    filtered: list[FilterRow] = field(default_factory=list)
    tenants: list[TenantRow] = field(default_factory=list)
    claims: list[Verdict] = field(default_factory=list)
    targets: list[Verdict] = field(default_factory=list)

    TIMED_SECTIONS = ("scaling", "growing", "needles", "beir", "realtext")

    def measurements(self) -> dict[MeasurementKey, Measurement]:
        """Every measurement of the timed sections by its key (see `Measurement.key`)."""
        return {m.key(section): m for section in self.TIMED_SECTIONS for m in getattr(self, section)}

    def defaults(self, system: str, section: str = "scaling") -> list[Measurement]:
        """One measurement per size at the system's default query parameters, by size, from a timed section."""
        return sorted(
            (m for m in getattr(self, section) if m.system == system and not m.params), key=lambda m: m.n_docs
        )

    def to_json(self) -> str:
        """The schema-versioned JSON of `results.json` (the raw per-pass latencies included)."""
        data = {"schema": SCHEMA_VERSION, **_ADAPTER.dump_python(self)}
        return json.dumps(data, indent=1, default=_plain)

    @classmethod
    def from_json(cls, text: str, *, source: str = "results") -> RunResults:
        """Parse and validate; another schema version or a malformed file raises `ResultsFileError`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ResultsFileError(f"{source} is not JSON ({error})") from None
        except RecursionError:
            raise ResultsFileError(f"{source} nests deeper than any results file") from None
        version = data.get("schema", 1) if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            raise ResultsFileError(
                f"{source} has results schema {version}; this magbench reads schema {SCHEMA_VERSION} "
                "(streaming section): rerun `magbench run` with this version to compare against it"
            )
        data.pop("schema")
        try:
            return _ADAPTER.validate_python(data)
        except ValidationError as error:
            raise ResultsFileError(f"{source} is not a valid results file: {error}") from None

    @classmethod
    def load(cls, run: str | Path) -> RunResults:
        """A run directory's `results.json`, or a results file."""
        path = Path(run)
        path = path / "results.json" if path.is_dir() else path
        if not path.is_file():
            raise FileNotFoundError(f"no results.json at {path}")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ResultsFileError(f"{path} is not a results file (not UTF-8 text)") from None
        return cls.from_json(text, source=str(path))


_ADAPTER = TypeAdapter(RunResults)


def _plain(value: Any) -> Any:
    """NumPy scalars and paths that engines put into `describe()`."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")
