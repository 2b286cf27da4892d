"""Filtered search, as VectorDBBench measures it: searches restricted to the documents that a metadata filter
matches (1 % and 99 % of them) or to a scope that holds 1 %, beside the same searches unrestricted; recall@10
against exact search over the matching documents, and latency, for every system that declares `filters` or
`scopes` (others get a row saying so).

Every document belongs to one of `OWNERS` owners, an equal share each, assigned at random (seeded, so owners are
independent of the clusters). A system with `filters` is built once with its owner in each document's metadata,
one with `scopes` once with its owner as each document's scope. Each case's queries are timed back to back on one
core, the cases of every system taking turns in an order that rotates from pass to pass (as `timing` times query
settings); every answer is checked, and a hit that the restriction does not match fails its row.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.data.evalset import EvalSet
from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.checking import check_hits
from harness.measure.metrics import latency_stats, recall_at_k
from harness.measure.timing import WARMUP_QUERIES, K, one_core, open_system
from harness.output.formats import share
from harness.output.progress import Progress, silent
from harness.output.results import FilterRow, RunResults
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column
from harness.protocol import Document, MemorySystem, Query

OWNERS = 100
CHOSEN = "o0"
"""The owner whose documents the 1 % cases match (and the 99 % filter leaves out)."""


@dataclass(frozen=True)
class Case:
    """One restriction of the queries: a `where` filter or a scope (neither: unrestricted), the capability
    it needs, and which owners' documents it matches."""

    name: str
    capability: str
    matches: Callable[[str], bool]
    where: dict[str, Any] | None = None
    scope: str | None = None

    @property
    def restriction(self) -> str:
        return f"where {self.where}" if self.where else f"scope {self.scope!r}" if self.scope else "none"


CASES = (
    Case("unfiltered", "", lambda owner: True),
    Case("filter 1%", "filters", lambda owner: owner == CHOSEN, where={"owner": CHOSEN}),
    Case("filter 99%", "filters", lambda owner: owner != CHOSEN, where={"owner": {"$ne": CHOSEN}}),
    Case("scope 1%", "scopes", lambda owner: owner == CHOSEN, scope=CHOSEN),
)


@dataclass(frozen=True)
class _Unit:
    """One case on one built system: its queries, the exact answers over its matching documents, and what it
    found and how long each search took, pass by pass."""

    system: MemorySystem
    case: Case
    queries: list[Query]
    truth: list[list[str]]
    matching: frozenset[str]
    found: list[list[str]]
    latencies: list[list[int]]


def owners_of(cells: int, *, seed: int = 0) -> list[str]:
    """Each document's owner: `OWNERS` equal shares, in a seeded random order."""
    order = np.random.default_rng(seed).permutation(cells)
    return [f"o{position % OWNERS}" for position in order.tolist()]


def filtered_rows(
    systems: tuple[str, ...],
    *,
    cells: int,
    queries: int,
    spread: float = 0.8,
    passes: int = 3,
    progress: Progress = silent,
) -> list[FilterRow]:
    """Every case on every system that declares what it needs, over `cells` clustered vectors."""
    data = clustered_unit_vectors(cells, 384, 100, spread=spread, queries=queries, seed=cells)
    owners = owners_of(cells)
    docs = [Document(f"v{i}", f"vector {i}", vector) for i, vector in enumerate(data.vectors)]
    asked = [Query(f"q{j}", "", vector) for j, vector in enumerate(data.queries)]
    evalset = EvalSet(f"owners-{cells}-sp{spread:g}", docs, asked, {})
    known = frozenset(doc.id for doc in docs)
    rows, units = [], []
    with ExitStack() as stack:
        for spec in progress(systems, f"filtered search: build N={cells:,}"):
            name, built = _built(stack, spec, evalset, owners)
            if not built:
                rows.append(FilterRow(name, "—", "—", cells, cells, skipped="declares neither filters nor scopes"))
                continue
            for case in CASES:
                system = built.get(case.capability) or next(iter(built.values()))
                if case.capability and case.capability not in built:
                    rows.append(
                        FilterRow(system.name, case.name, case.restriction, cells, 0, skipped=f"no {case.capability}")
                    )
                else:
                    units.append(_unit(system, case, data.vectors, owners, asked))
        with one_core():
            for one_pass in progress(range(passes), f"filtered search: timing passes over {len(units)} cases"):
                start = one_pass * len(units) // passes % max(1, len(units))
                for unit in [*units[start:], *units[:start]]:
                    _time(unit, known, first=one_pass == 0)
    return [_row(unit, cells) for unit in units] + rows


def _built(stack: ExitStack, spec: str, evalset: EvalSet, owners: list[str]) -> tuple[str, dict[str, MemorySystem]]:
    """The system's name, and the system built once per capability it declares of `filters` and `scopes`, with each
    document's owner in its metadata or as its scope (closed with `stack`)."""
    built: dict[str, MemorySystem] = {}
    system = stack.enter_context(_opened(spec, evalset))
    for capability, owned in (("filters", _with_metadata), ("scopes", _scoped)):
        if capability in system.capabilities:
            system = system if not built else stack.enter_context(_opened(spec, evalset))
            system.add([owned(doc, owner) for doc, owner in zip(evalset.docs, owners)])
            built[capability] = system
    return system.name, built


@contextmanager
def _opened(spec: str, evalset: EvalSet) -> Iterator[MemorySystem]:
    with tempfile.TemporaryDirectory(prefix=f"magbench-filtered-{spec.replace(':', '_')}-") as workdir:
        system = open_system(spec, evalset, encoder="vectors", workdir=Path(workdir))
        try:
            yield system
        finally:
            system.close()


def _with_metadata(doc: Document, owner: str) -> Document:
    return replace(doc, metadata={"owner": owner})


def _scoped(doc: Document, owner: str) -> Document:
    return replace(doc, scope=owner)


def _unit(system: MemorySystem, case: Case, vectors: np.ndarray, owners: list[str], asked: list[Query]) -> _Unit:
    rows = np.flatnonzero([case.matches(owner) for owner in owners])
    query_vectors = np.stack([q.vector for q in asked if q.vector is not None])
    truth = [[f"v{rows[r]}" for r in best] for best in exact_top_k(vectors[rows], query_vectors, K).tolist()]
    queries = [replace(q, where=case.where, scope=case.scope) for q in asked]
    return _Unit(system, case, queries, truth, frozenset(f"v{r}" for r in rows), [], [])


def _time(unit: _Unit, known: frozenset[str], *, first: bool) -> None:
    """One pass of a case: warm-up queries, then each query timed and its answer checked (a hit outside the
    matching documents is counted by `_row`)."""
    system = unit.system
    for query in unit.queries[:WARMUP_QUERIES]:
        system.search(query, k=K)
    latencies = []
    for query in unit.queries:
        started = time.perf_counter_ns()
        hits = system.search(query, k=K)
        latencies.append(time.perf_counter_ns() - started)
        if first:
            unit.found.append([h.doc_id for h in check_hits(system.name, hits, k=K, known_ids=known)])
    unit.latencies.append(latencies)


def _row(unit: _Unit, cells: int) -> FilterRow:
    stats = latency_stats([t for one_pass in unit.latencies for t in one_pass])
    return FilterRow(
        unit.system.name,
        unit.case.name,
        unit.case.restriction,
        cells,
        len(unit.matching),
        queries=len(unit.queries),
        recall_at_10=recall_at_k(unit.found, unit.truth, K),
        p50_ms=stats.p50_ms,
        p99_ms=stats.p99_ms,
        outside=sum(doc not in unit.matching for found in unit.found for doc in found),
    )


SYSTEMS = ("reference", "flat-chroma")
"""Filtered search: systems that declare `filters` or `scopes`."""


FILTER_PASSES = 3
"""Timing passes of the filtered searches: no verdict reads them, so fewer than the plan's."""


def run(context: RunContext) -> list[FilterRow]:
    """Recall and latency of searches filtered to 1 % and 99 % of the documents, and in a scope of 1 %."""
    plan = context.plan
    return filtered_rows(
        context.systems_of(FILTERED),
        cells=plan.filter_cells,
        queries=plan.queries,
        spread=plan.spread,
        passes=min(plan.passes, FILTER_PASSES),
        progress=context.progress,
    )


SECONDS = 60.0
"""A default run's filtered searches, on the machine the defaults were measured on
(`harness.experiments.definition`)."""


def work(context: RunContext) -> float:
    return context.scaled(SECONDS, FILTERED, context.plan.filter_cells, DEFAULT_PLAN.filter_cells)


def table(results: RunResults) -> list[Table]:
    if not results.filtered:
        return []
    one, rest = f"{100 / OWNERS:g} %", f"{100 - 100 / OWNERS:g} %"
    return [
        Table(
            "filtered",
            f"Filtered search: metadata filters matching {one} and {rest} of the documents, and a scope of {one}",
            f"{results.run.plan.filter_cells:,} clustered vectors, each of {OWNERS} owners holding {one} (at random): "
            "the owner in a document's metadata for systems that declare `filters`, as its scope for those that "
            "declare `scopes`. Recall@10 against exact search over the matching documents; `outside`: hits the "
            "restriction does not match (any fails the row). Timed on one core like the scaling table.",
            (
                SYSTEM,
                column("case", "case"),
                column("restriction", "restriction"),
                column("matching", "matching"),
                column("recall@10 vs exact over the matching", "recall_at_10", format=share),
                column("p50 / p99 (ms)", "p50_ms", "p99_ms"),
                column("status", "status"),
            ),
            [_filter_fields(r) for r in results.filtered],
        )
    ]


def _filter_fields(row: FilterRow) -> dict[str, Any]:
    if row.skipped:
        return {"system": row.system, "case": row.case, "status": f"skipped: {row.skipped}"}
    return {
        "system": row.system,
        "case": row.case,
        "restriction": row.restriction,
        "matching": row.matching,
        "recall_at_10": row.recall_at_10,
        "p50_ms": row.p50_ms,
        "p99_ms": row.p99_ms,
        "status": f"FAILED: {row.outside} hits outside the restriction" if row.outside else "ok",
    }


FILTERED = Experiment(
    "filtered",
    section="filtered",
    data=["default"],
    run=run,
    systems=SYSTEMS,
    work=work,
    tables=(table,),
)
