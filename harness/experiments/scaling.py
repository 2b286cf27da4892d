"""Scaling: latency and recall against exact search as memory grows, over synthetic clustered vectors, in two
regimes (`plan.REGIMES`): as many topics at every size (`scaling`, where the published claims are judged) and topics
that multiply with N (`growing`). The report's scaling tables and the sweep are this module's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from harness.data.generated import vectors_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.plan import FIXED_CLUSTERS, GROWING_CLUSTER, REGIMES, RunPlan
from harness.measure.timing import K, job, timed
from harness.output import plots
from harness.output.progress import Progress
from harness.output.results import Measurement, RunResults
from harness.output.sections.timed import (
    BUILD,
    BYTES,
    ESTIMATE,
    FASTER,
    SWEPT,
    TIMED,
    TIMING,
    VERSUS_EXACT,
    largest,
    same_at_every_setting,
    swept,
    swept_rows,
    timed_rows,
    versus_exact,
)
from harness.output.tables import Table

SYSTEMS = ("reference", "reference-chroma", "flat-numpy", "flat-chroma", "kmeans", "faiss-ivf", "faiss-hnsw")


GROWING_SYSTEMS = ("reference", "flat-numpy", "faiss-ivf", "faiss-hnsw")


SECTION_OF_REGIME = {"fixed": "scaling", "growing": "growing"}
"""The results section a scaling regime fills."""


def run(context: RunContext) -> list[Measurement]:
    """Latency and recall vs exact search as memory grows, over clustered vectors (as many topics at every size)."""
    return _scaling(context.plan, context.systems_of(SCALING), context.progress, regime="fixed")


def run_growing(context: RunContext) -> list[Measurement]:
    """Latency and recall as memory grows with its topics (clusters of one size, more of them)."""
    return _scaling(context.plan, _growing_systems(context), context.progress, "growing")


def _growing_systems(context: RunContext) -> tuple[str, ...]:
    """The growing regime's systems that the fixed regime measures too."""
    fixed = context.systems_of(SCALING)
    return tuple(s for s in context.systems_of(GROWING) if s in fixed)


def _scaling(plan: RunPlan, systems: tuple[str, ...], progress: Progress, regime: str) -> list[Measurement]:
    """Latency and recall vs exact for every system at every size of a regime (`plan.REGIMES`), all
    timed together; in the fixed regime, a query-parameter sweep at the largest size."""
    jobs = []
    largest = max(plan.sizes)
    for size in plan.sizes:
        evalset = vectors_evalset(
            size, queries=plan.queries, clusters=REGIMES[regime](size), spread=plan.spread, seed=size
        )
        sweep = plan.sweep and size == largest and regime == "fixed"
        jobs += [
            job(plan, system, evalset, "vectors", sweep=sweep, section=SECTION_OF_REGIME[regime])
            for system in plan.systems_at(size, systems)
        ]
    return timed(plan, jobs, progress, f"scaling ({regime})")


SECONDS, GROWING_SECONDS = 660.0, 120.0
"""Each regime in a default run on the machine the defaults were measured on (`harness.experiments.definition`)."""


def work(context: RunContext) -> float:
    return SECONDS * _cells(context.plan, context.systems_of(SCALING)) / _cells(DEFAULT_PLAN, SYSTEMS)


def work_growing(context: RunContext) -> float:
    return GROWING_SECONDS * _cells(context.plan, _growing_systems(context)) / _cells(DEFAULT_PLAN, GROWING_SYSTEMS)


def _cells(plan: RunPlan, systems: Sequence[str]) -> int:
    """Cells the systems build over the plan's sizes."""
    return sum(size * len(plan.systems_at(size, tuple(systems))) for size in plan.sizes)


def headline(results: RunResults) -> list[Table]:
    rows = largest(results.scaling)
    if not rows:
        return []
    return [
        Table(
            "scaling-headline",
            f"Synthetic clusters at N = {rows[0].n_docs:,}",
            f"{FIXED_CLUSTERS} clustered topics, {rows[0].queries:,} queries, k = {K}: p50 of one query on one core; "
            f"{FASTER}; recall@10 against exact search. Every size, the sweep and the units are under Scaling below.",
            VERSUS_EXACT,
            versus_exact(rows),
            csv=False,
        )
    ]


def table(results: RunResults) -> list[Table]:
    plan = results.run.plan
    rows = timed_rows(results.scaling)
    if not rows:
        return []
    queries = results.scaling[0].queries
    return [
        Table(
            "scaling",
            "Scaling (synthetic)",
            f"{FIXED_CLUSTERS} clustered topics at every N (spread {plan.spread}), {queries:,} held-out queries, "
            f"k = {K}; recall@10 against exact search over the same vectors. {TIMING} {BUILD} {BYTES} {ESTIMATE}",
            TIMED,
            rows,
            plot="latency_vs_n.png",
        )
    ]


def growing_table(results: RunResults) -> list[Table]:
    rows = timed_rows(results.growing)
    if not rows:
        return []
    return [
        Table(
            "growing",
            "Scaling when topics multiply (synthetic)",
            f"One cluster per {GROWING_CLUSTER:,} vectors, so only the number of groups grows with N; otherwise as "
            "Scaling above.",
            TIMED,
            rows,
        )
    ]


def sweep_table(results: RunResults) -> list[Table]:
    rows = swept_rows(results.scaling)
    if not rows:
        return []
    return [
        Table(
            "sweep",
            "Query-parameter sweep at the largest size (synthetic)",
            f"Each row is one setting of a system's query parameter ({swept(results.scaling)}); its default "
            "setting is its row in the Scaling table. Recall@10 against exact search; p50 on one core.",
            SWEPT,
            rows,
            notes=same_at_every_setting(results.scaling),
            plot="recall_vs_latency.png",
        )
    ]


def figures(out: Path, results: RunResults) -> list[Path]:
    """Latency against N at each system's defaults; recall against latency of the sweep at the largest size."""
    drawn = []
    if any(not m.params for m in results.scaling):
        drawn.append(latency_vs_n(out / "latency_vs_n.png", results.scaling))
    if any(m.params for m in results.scaling):
        drawn.append(plots.recall_vs_latency(out / "recall_vs_latency.png", results.scaling, "synthetic clusters"))
    return drawn


def latency_vs_n(path: Path, measurements: Sequence[Measurement]) -> Path:
    """p50 against N for every system at its default setting (log-log)."""
    figure, axes = plt.subplots(figsize=(8.5, 4.8))
    defaults = [m for m in measurements if not m.params]
    for system, kind in plots.styles([m.system for m in defaults]).items():
        rows = sorted((m for m in defaults if m.system == system), key=lambda m: m.n_docs)
        axes.plot([m.n_docs for m in rows], [m.latency.p50_ms for m in rows], **kind)
    axes.set(xscale="log", yscale="log", xlabel="cells (N)", ylabel="p50 of one query (ms, one core)")
    axes.set_title(f"Query latency against N (synthetic clusters, k = {K})")
    return plots.save(figure, axes, path)


SCALING = Experiment(
    "scaling",
    section="scaling",
    data=["default"],
    run=run,
    systems=SYSTEMS,
    work=work,
    headlines=(headline,),
    tables=(table, growing_table, sweep_table),
    figures=(figures,),
)
GROWING = Experiment(
    "growing",
    section="growing",
    data=["default"],
    run=run_growing,
    systems=GROWING_SYSTEMS,
    capability=True,
    work=work_growing,
)
"""The growing regime's tables are the scaling module's (`SCALING.tables`), beside the fixed regime's."""
