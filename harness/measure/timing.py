"""Build systems once, time their queries in rotating passes, check and score their answers.

- Every system of a job list is built first (build time and memory measured one by one).
- Each query setting of every system (its defaults, and with `sweep` each value of its query parameter) answers
  all queries once per pass, back to back, as ann-benchmarks times an index: another system's search between two
  of a setting's would flush its data from the caches.
- The settings' order rotates from pass to pass, and a verdict reads each query's fastest pass
  (`confidence.best_of_passes`), so a burst of load that falls on one setting's queries in one pass does not
  reach it. When the planned passes leave the median of a measurement that decides a verdict unsettled
  (`confidence.unsettled`), more passes follow, up to `max_passes`.
- Queries are timed on one core (`one_core`: BLAS and OpenMP pools held to one thread), as ann-benchmarks and
  annbench time them, so that an exact scan is not measured on two cores against an index on one, and with every
  thread of the process on one CPU (`one_cpu`), so that a library answering on its own threads (Chroma) is not
  timed on wherever the scheduler happened to put them.
- Warm-up queries before each setting's queries stay out of timing; every answer goes through `check_hits`.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import psutil
from threadpoolctl import threadpool_limits

from harness.data.evalset import EvalSet
from harness.data.generated import vectors_evalset
from harness.measure.checking import check_documents, check_hits
from harness.measure.metrics import capped_recall_at_k, hits_at_k, mrr, ndcg_at_k, recall_at_k
from harness.measure.plan import NEEDLE_TOP, RunPlan
from harness.output.progress import Progress, silent
from harness.output.results import Measurement
from harness.protocol import (
    DeletingSystem,
    Document,
    GroupingSystem,
    MemorySystem,
    Query,
    SystemContext,
    TunableSystem,
    UpdatingSystem,
)
from harness.systems.registry import SystemSpecError, check_declaration, resolve
from harness.systems.scoped import in_one_scope
from harness.systems.slowdown import Slowed
from harness.verdicts.claims import decides_a_verdict
from harness.verdicts.confidence import unsettled
from reference.encoders import Encoder

K = 10
"""Hits a measured search asks for: the recall@10, nDCG@10 and the other figures at 10 are read from them."""
WARMUP_QUERIES = 3
"""Untimed queries before a setting's timed ones in each pass (the evaluation set's first ones)."""
WARM_CELLS = 1_500
"""Cells a system's warm-up writes (`warm`): enough that the engine probes its groups rather than searching flat."""
FOUND_KS = (1, NEEDLE_TOP, K)
"""The cutoffs a needle is counted found at: the first hit, the published case's, and every hit."""
_warmed: set[tuple[str, str]] = set()
"""The systems warmed up in this process, and with which kind of query ("vector", "text")."""


@dataclass(frozen=True)
class Job:
    """One system to build on one evaluation set. `sweep` also times every value of its query parameter;
    `slow_down` > 1 deliberately slows its searches (to check that `compare` catches a regression)."""

    spec: str
    evalset: EvalSet
    encoder: str
    options: Mapping[str, Any] = field(default_factory=dict)
    sweep: bool = False
    slow_down: float = 1.0
    decides: bool = False
    """Its latency decides a verdict: timing goes on while it is unsettled (`confidence.unsettled`)."""

    @property
    def name(self) -> str:
        """How progress lines name the job."""
        return f"{self.spec} N={len(self.evalset.docs):,}"


@dataclass(frozen=True)
class _Built:
    job: Job
    system: MemorySystem
    build_s: float
    rss_per_doc: float
    known_ids: frozenset[str]


def open_system(
    spec: str, evalset: EvalSet, *, encoder: str, workdir: Path, options: Mapping[str, Any] | None = None
) -> MemorySystem:
    first_vector = evalset.docs[0].vector
    context = SystemContext(dim=None if first_vector is None else len(first_vector), workdir=workdir, encoder=encoder)
    system = resolve(spec)(context, **(options or {}))
    check_declaration(system)
    system = in_one_scope(system)
    if "vectors" in system.capabilities and first_vector is None:
        raise ValueError(f"{spec} takes vectors but the evaluation set has none; encode it first")
    return system


def one_core() -> threadpool_limits:
    """A context that holds the BLAS and OpenMP thread pools (NumPy's, FAISS's) to one thread, for timing queries."""
    return threadpool_limits(limits=1)


@contextmanager
def one_cpu() -> Iterator[None]:
    """Every thread of this process on the CPU the caller runs on, for timing queries one at a time (restored on
    exit; where the OS cannot pin threads, nothing changes). A library that answers on its own threads (embedded
    Chroma's runtime and SQLite workers) hands each query between them many times, and a hand-off to a thread on
    another CPU (one gone idle, on a virtual machine most of all) costs many times one on the same CPU: left to
    the scheduler, where those threads happened to land would set the latency of a whole run."""
    process = psutil.Process()
    if not hasattr(os, "sched_setaffinity") or not hasattr(process, "cpu_num"):
        yield
        return
    cpu = process.cpu_num()
    previous: dict[int, set[int]] = {}
    for thread in process.threads():
        with suppress(ProcessLookupError):  # a thread that ended meanwhile
            previous[thread.id] = os.sched_getaffinity(thread.id)
            os.sched_setaffinity(thread.id, {cpu})
    try:
        yield
    finally:
        for tid, cpus in previous.items():
            with suppress(ProcessLookupError):
                os.sched_setaffinity(tid, cpus)


def measure_together(
    jobs: Sequence[Job],
    *,
    k: int = K,
    passes: int = 1,
    max_passes: int = 0,
    progress: Progress = silent,
    label: str = "measure",
) -> list[Measurement]:
    """Build every job's system, then time all their query settings in `passes` rotating passes, and
    in more (up to `max_passes`) while the timing is unsettled (`confidence.unsettled`)."""
    if passes < 1:
        raise ValueError(f"passes must be at least 1, not {passes}")
    with ExitStack() as stack:
        built = [stack.enter_context(_build(job)) for job in progress(jobs, f"{label}: build")]
        _check_names(built)
        units = [(b, params) for b in built for params in [{}, *(_settings(b.system) if b.job.sweep else [])]]
        timings: list[list[list[int]]] = [[] for _ in units]
        answers: list[list[list[str]]] = [[] for _ in units]

        def time_pass(one_pass: int) -> None:
            start = one_pass * len(units) // passes % len(units)
            for index in [*range(start, len(units)), *range(start)]:
                item, params = units[index]
                _set(item, params)
                retrieved, latencies = _run_queries(item.system, item.job.evalset, item.known_ids, k)
                timings[index].append(latencies)
                if one_pass == 0:
                    answers[index] = retrieved

        with one_core(), one_cpu():
            for one_pass in progress(range(passes), f"{label}: timing passes over {len(units)} settings"):
                time_pass(one_pass)
            deciding = [timings[i] for i, (item, _) in enumerate(units) if item.job.decides]
            for one_pass in range(passes, max_passes):
                if passes < 2 or not deciding or not unsettled(deciding):  # one planned pass: no spread to judge
                    break
                for _ in progress([one_pass + 1], f"{label}: timing unsettled, another pass"):
                    time_pass(one_pass)
        return [_score(item, params, answers[i], timings[i]) for i, (item, params) in enumerate(units)]


def measure(
    spec: str,
    evalset: EvalSet,
    *,
    encoder: str,
    k: int = K,
    sweep: bool = False,
    options: Mapping[str, Any] | None = None,
    passes: int = 1,
) -> list[Measurement]:
    """One system: its defaults (params {}) and, with `sweep`, every setting of its query parameter."""
    return measure_together([Job(spec, evalset, encoder, options or {}, sweep)], k=k, passes=passes)


def group_labels(spec: str, evalset: EvalSet, *, encoder: str, options: Mapping[str, Any] | None = None) -> list[int]:
    """Each document's group, from a system that declares the "groups" capability."""
    with built(spec, evalset, encoder=encoder, options=options) as system:
        if "groups" not in system.capabilities:
            raise ValueError(f"{spec} does not declare the 'groups' capability")
        return list(cast(GroupingSystem, system).group_labels([d.id for d in evalset.docs]))


@contextmanager
def built(
    spec: str, evalset: EvalSet, *, encoder: str, options: Mapping[str, Any] | None = None
) -> Iterator[MemorySystem]:
    """A system holding the set's documents, in a private directory (untimed); closed on exit."""
    with tempfile.TemporaryDirectory(prefix=f"magbench-{spec.replace(':', '_')}-") as workdir:
        system = open_system(spec, evalset, encoder=encoder, workdir=Path(workdir), options=options)
        try:
            system.add(evalset.docs)
            yield system
        finally:
            system.close()


def ranked_until(
    spec: str,
    evalset: EvalSet,
    *,
    encoder: str,
    enough: Callable[[list[str]], bool],
    k: int = 64,
    options: Mapping[str, Any] | None = None,
) -> list[list[str]]:
    """Each query's hits from a freshly built system (untimed), as deep as `enough` asks: searched at `k`, then
    at twice that until `enough(ids)` or every document is returned."""
    with tempfile.TemporaryDirectory(prefix="magbench-ranked-") as workdir:
        system = open_system(spec, evalset, encoder=encoder, workdir=Path(workdir), options=options)
        known = frozenset(d.id for d in evalset.docs)
        try:
            system.add(evalset.docs)
            ranked = []
            for query in evalset.queries:
                depth = min(k, len(known))
                while True:
                    hits = check_hits(system.name, system.search(query, k=depth), k=depth, known_ids=known)
                    found = [h.doc_id for h in hits]
                    if enough(found) or depth >= len(known):
                        break
                    depth = min(2 * depth, len(known))
                ranked.append(found)
            return ranked
        finally:
            system.close()


def warm(spec: str, data: EvalSet, encoder: str, options: Mapping[str, Any] | None = None) -> None:
    """Once per system, kind of query and process, untimed, on a throwaway instance: a write, a one-document write,
    a search, an upsert, a delete, a sleep and a search, so that what a process pays once (kernels compiled, or
    loaded from their cache, on first use) is timed neither as a build nor as a step. Vector queries are warmed on
    `WARM_CELLS` generated vectors of the data's dimension (a small first set would leave the probing path cold),
    text queries on the data's own first documents."""
    vector = data.docs[0].vector
    warm_ups = {
        "vector": None if vector is None else vectors_evalset(WARM_CELLS, queries=1, dim=len(vector), seed=WARM_CELLS),
        "text": data if data.queries[0].text else None,
    }
    for kind, warm_data in warm_ups.items():
        if warm_data is None or (spec, kind) in _warmed:
            continue
        _warmed.add((spec, kind))
        with tempfile.TemporaryDirectory(prefix="magbench-warm-") as workdir:
            system = open_system(spec, warm_data, encoder=encoder, workdir=Path(workdir), options=options)
            try:
                if kind == "vector" and "vectors" not in system.capabilities:
                    continue
                _warm_up(system, warm_data.docs[:WARM_CELLS], warm_data.queries[0])
            finally:
                system.close()


def _warm_up(system: MemorySystem, docs: Sequence[Document], query: Query) -> None:
    system.add(docs[:-1])
    system.add(docs[-1:])
    system.search(query, k=K)
    if "update" in system.capabilities:
        cast(UpdatingSystem, system).upsert([dataclasses.replace(docs[0], id=docs[1].id)])
    if "delete" in system.capabilities:
        cast(DeletingSystem, system).delete([docs[-1].id])
    if "consolidate" in system.capabilities:
        system.consolidate()  # type: ignore[attr-defined]
    system.search(query, k=K)


@contextmanager
def _build(job: Job) -> Iterator[_Built]:
    """The job's system, built on its documents in a private directory after its warm-up; closed on exit."""
    check_documents(job.evalset.docs)
    warm(job.spec, job.evalset, job.encoder, job.options)
    with tempfile.TemporaryDirectory(prefix=f"magbench-{job.spec.replace(':', '_')}-") as workdir:
        system = open_system(job.spec, job.evalset, encoder=job.encoder, workdir=Path(workdir), options=job.options)
        if job.slow_down != 1.0:
            system = Slowed(system, job.slow_down)
        try:
            rss_before = resident_bytes()
            started = time.perf_counter()
            system.add(job.evalset.docs)
            build_s = time.perf_counter() - started
            grown = resident_bytes() - rss_before  # the allocator may hand memory back: a drop is no reading
            rss_per_doc = grown / len(job.evalset.docs) if grown >= 0 else float("nan")
            yield _Built(job, system, build_s, rss_per_doc, frozenset(d.id for d in job.evalset.docs))
        finally:
            system.close()


def _check_names(built: Sequence[_Built]) -> None:
    """A report labels a system by its adapter's `name`: two systems of one run may not share one."""
    spec_of: dict[str, str] = {}
    for item in built:
        other = spec_of.setdefault(item.system.name, item.job.spec)
        if other != item.job.spec:
            raise SystemSpecError(
                f"{other} and {item.job.spec} are both named {item.system.name!r}, and a report labels a system by "
                "its name: give one a name of its own (--system-option SYSTEM:name=..., where its factory takes one)"
            )


def _settings(system: MemorySystem) -> list[dict[str, Any]]:
    """One dict per value of the system's query parameter (none for a system that is not tunable)."""
    if "tunable" not in system.capabilities:
        return []
    (name, values), *others = cast(TunableSystem, system).query_params.items()
    if others:
        raise ValueError(f"{system.name}: sweeps take one query parameter")
    return [{name: value} for value in values]


def _run_queries(
    system: MemorySystem, evalset: EvalSet, known: frozenset[str], k: int
) -> tuple[list[list[str]], list[int]]:
    """Warm up, then time each of the evaluation set's queries, back to back, and check its answer."""
    for query in evalset.queries[:WARMUP_QUERIES]:
        system.search(query, k=k)
    retrieved, latencies = [], []
    for query in evalset.queries:
        started = time.perf_counter_ns()
        hits = system.search(query, k=k)
        latencies.append(time.perf_counter_ns() - started)
        retrieved.append([h.doc_id for h in check_hits(system.name, hits, k=k, known_ids=known)])
    return retrieved, latencies


def given(system: MemorySystem) -> str:
    """What a timed search of the system is given: "vector" for a system that takes vectors (the query's vector,
    encoded by the harness before the clock starts), else "text" (what the system does with it, embedding it
    with a model of its own say, is inside its timed search)."""
    return "vector" if "vectors" in system.capabilities else "text"


def query_encoding_ns(encoder: Encoder, queries: Sequence[Query]) -> list[int]:
    """Each query's text encoded alone, timed on one core as searches are: what the harness pays before the clock
    starts for a system given the vector, and a system that embeds its own text pays inside its search."""
    texts = [q.text for q in queries]
    latencies = []
    with one_core():
        encoder.encode(texts[:WARMUP_QUERIES])
        for text in texts:
            started = time.perf_counter_ns()
            encoder.encode([text])
            latencies.append(time.perf_counter_ns() - started)
    return latencies


def _set(item: _Built, params: dict[str, Any]) -> None:
    """Put a swept system in one of its settings ({} restores its defaults)."""
    if item.job.sweep and "tunable" in item.system.capabilities:
        cast(TunableSystem, item.system).set_query_params(**params)


def _score(item: _Built, params: dict[str, Any], retrieved: list[list[str]], timings: list[list[int]]) -> Measurement:
    """The measurement of one setting; the system describes itself in that setting (a recall target's
    estimate is that target's, not the last one timed)."""
    evalset, system = item.job.evalset, item.system
    relevant = evalset.relevant()
    _set(item, params)
    return Measurement.timed(
        timings,
        system=system.name,
        dataset=evalset.name,
        encoder=item.job.encoder,
        n_docs=len(evalset.docs),
        params=dict(params),
        build_s=item.build_s,
        ingest_per_s=len(evalset.docs) / item.build_s if item.build_s > 0 else float("inf"),
        rss_bytes_per_doc=item.rss_per_doc,
        recall_at_10=recall_at_k(retrieved, relevant, 10),
        capped_recall_at_10=capped_recall_at_k(retrieved, relevant, 10),
        mrr=mrr(retrieved, relevant),
        ndcg_at_10=ndcg_at_k(retrieved, [evalset.qrels.get(q.id, {}) for q in evalset.queries], 10),
        found_at={k: hits_at_k(retrieved, relevant, k) for k in FOUND_KS},
        queries=len(evalset.queries),
        describe=cast(GroupingSystem, system).describe() if "groups" in system.capabilities else {},
        given=given(system),
        retrieved=retrieved,
    )


def resident_bytes() -> int:
    """This process's resident memory (psutil: any platform)."""
    return int(psutil.Process().memory_info().rss)


def job(plan: RunPlan, system: str, evalset: EvalSet, encoder: str, *, sweep: bool = False, section: str = "") -> Job:
    """A job of a section; it decides a verdict when the claims judge its system's latency there."""
    slow_down = plan.slow_down.get(system, 1.0)
    return Job(system, evalset, encoder, sweep=sweep, slow_down=slow_down, decides=decides_a_verdict(section, system))


def timed(plan: RunPlan, jobs: list[Job], progress: Progress = silent, label: str = "measure") -> list[Measurement]:
    """`jobs` timed together with the plan's passes (and its extra passes while the timing is unsettled)."""
    return measure_together(jobs, passes=plan.passes, max_passes=plan.max_passes, progress=progress, label=label)
