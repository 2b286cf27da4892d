"""The published needle case: a haystack with needles, each to be found in the top 3."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.data.encoding import encode_evalset
from harness.data.generated import needles_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.plan import NEEDLE_DOCS, NEEDLE_TOP, NEEDLES
from harness.measure.timing import FOUND_KS, job, timed
from harness.output.formats import share
from harness.output.results import Measurement, RunResults
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column

SYSTEMS = ("reference", "reference-no-entities", "flat-chroma", "flat-numpy", "kmeans")


def run(context: RunContext) -> list[Measurement]:
    """The published case (a haystack with needles, top 3) over several seeds and encoders."""
    plan = context.plan
    results: list[Measurement] = []
    for encoder_name, encoder in context.encoders.items():
        for seed in context.progress(plan.needle_seeds, f"needles ({encoder_name})"):
            evalset = encode_evalset(needles_evalset(NEEDLE_DOCS, NEEDLES, seed=seed), encoder)
            jobs = [job(plan, system, evalset, encoder_name) for system in context.systems_of(NEEDLES_EXPERIMENT)]
            results += timed(plan, jobs)
    return results


SECONDS = 15.0


def work(context: RunContext) -> float:
    each = len(context.plan.needle_seeds) * len(context.encoders)
    default_each = len(DEFAULT_PLAN.needle_seeds) * len(DEFAULT_PLAN.encoders)
    return context.scaled(SECONDS, NEEDLES_EXPERIMENT, each, default_each)


def headline(results: RunResults) -> list[Table]:
    rows = needle_rows(results.needles)
    if not rows:
        return []
    return [
        Table(
            "needles-headline",
            f"Needles: {NEEDLES} in a haystack of {NEEDLE_DOCS} documents",
            f"How many needles each system put in its top {NEEDLE_TOP}, over every haystack (seed) of each encoder.",
            (
                SYSTEM,
                column("encoder", "encoder"),
                column(f"in the top {NEEDLE_TOP}", f"found_at_{NEEDLE_TOP}", "needles"),
            ),
            rows,
            csv=False,
        )
    ]


def table(results: RunResults) -> list[Table]:
    rows = needle_rows(results.needles)
    if not rows:
        return []
    return [
        Table(
            "needles",
            f"Needles: {NEEDLE_DOCS} documents, {NEEDLES} needles each, per encoder",
            "A needle is a fact carrying an entity (e-mail, URL, file, code, place) asked about by a question; it is "
            "found at k when its document is among the first k hits. MRR: the mean of 1 / the needle's rank.",
            (
                SYSTEM,
                column("encoder", "encoder"),
                column("haystacks", "haystacks"),
                column("needles", "needles"),
                *(column(f"found at {k}", f"found_at_{k}") for k in FOUND_KS),
                column("MRR", "mrr", format=share),
            ),
            rows,
        )
    ]


def needle_rows(needles: Sequence[Measurement]) -> list[dict[str, Any]]:
    rows = []
    for system, encoder in sorted({(m.system, m.encoder) for m in needles}):
        mine = [m for m in needles if (m.system, m.encoder) == (system, encoder)]
        rows.append(
            {
                "system": system,
                "encoder": encoder,
                "haystacks": len(mine),
                "needles": sum(m.queries for m in mine),
                **{f"found_at_{k}": sum(m.found_at[k] for m in mine) for k in FOUND_KS},
                "mrr": sum(m.mrr * m.queries for m in mine) / sum(m.queries for m in mine),
            }
        )
    return rows


NEEDLES_EXPERIMENT = Experiment(
    "needles",
    section="needles",
    data=["default"],
    run=run,
    systems=SYSTEMS,
    work=work,
    headlines=(headline,),
    tables=(table,),
)
