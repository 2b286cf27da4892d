"""Many users in one memory: interleaved writes, then one scope's searches against its cells alone
(`harness.measure.tenants`)."""

from __future__ import annotations

from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.tenants import DIM, PROBE_WORDS, TURN_CELLS, run_tenants, tenant_data, tenant_runbook
from harness.output.formats import share
from harness.output.results import RunResults, TenantRow
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column

SYSTEMS = ("reference",)


def run(context: RunContext) -> list[TenantRow]:
    """Many users in one memory: interleaved writes, then one scope's searches against its cells alone."""
    plan = context.plan
    book = tenant_runbook(plan.tenant_scopes, plan.tenant_cells)
    return run_tenants(book, tenant_data(book), context.systems_of(MULTI_TENANT), "vectors", context.progress)


SECONDS = 20.0


def work(context: RunContext) -> float:
    plan, default = context.plan, DEFAULT_PLAN
    return context.scaled(
        SECONDS, MULTI_TENANT, plan.tenant_scopes * plan.tenant_cells, default.tenant_scopes * default.tenant_cells
    )


def table(results: RunResults) -> list[Table]:
    if not results.tenants:
        return []
    return [
        Table(
            "tenants",
            "Many users in one memory: a scope's searches in the shared memory against its cells alone",
            f"Scopes written in interleaved turns of {TURN_CELLS[0]}–{TURN_CELLS[1]} cells (clustered {DIM}-d vectors "
            f"given with each write, faker notes), then, in each probed scope, a text query ({PROBE_WORDS} words of "
            "one of its cells, with that cell's vector) and a vector query, timed on one core in the shared memory "
            "and, one after the other, against the same scope's cells in a memory of their own: `shared / alone` "
            "is the ratio of the medians. Recall@10 is each probed scope's own vectors as queries against exact "
            "search over that scope; every hit is checked to be of the scope searched. Resident memory: the "
            "process's growth over the writes, against the raw float32 vectors. "
            + "; ".join(row.description for row in results.tenants[:1]),
            (
                SYSTEM,
                column("scopes", "scopes"),
                column("cells", "cells"),
                column("text p50 (ms): shared / alone", "text_p50_ms", "text_alone_p50_ms"),
                column("text shared / alone", "text_shared_over_alone"),
                column("vector p50 (ms): shared / alone", "vector_p50_ms", "vector_alone_p50_ms"),
                column("vector shared / alone", "vector_shared_over_alone"),
                column("write p50 / p99 (ms)", "write_p50_ms", "write_p99_ms"),
                column("recall@10", "recall@10", format=share),
                column("resident / raw vectors", "resident_over_raw_vectors"),
                column("status", "skipped"),
            ),
            [row.row() for row in results.tenants],
        )
    ]


MULTI_TENANT = Experiment(
    "multi-tenant",
    section="tenants",
    data=["default"],
    run=run,
    systems=SYSTEMS,
    work=work,
    tables=(table,),
)
