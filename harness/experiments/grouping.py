"""Grouping: how well each system's groups agree with a topic haystack's true topics."""

from __future__ import annotations

from harness.data.encoding import encode_evalset
from harness.data.generated import topics_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.metrics import agreement, group_stats
from harness.measure.timing import group_labels
from harness.output.formats import share
from harness.output.results import GroupingRow, RunResults
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column

SYSTEMS = ("reference", "reference-slept", "reference-concepts", "kmeans")
"""Systems that declare `groups`, against a topic haystack's true topics."""


def run(context: RunContext) -> list[GroupingRow]:
    """ARI / NMI of each grouping system against the true topics of a topic haystack."""
    rows = []
    for encoder_name, encoder in context.encoders.items():
        evalset = encode_evalset(topics_evalset(context.plan.topic_docs, seed=11), encoder)
        for system in context.progress(context.systems_of(GROUPING), f"grouping ({encoder_name})"):
            options = {"n_clusters": len(evalset.topics)} if system == "kmeans" else {}
            labels = group_labels(system, evalset, encoder=encoder_name, options=options)
            if evalset.labels is None:
                raise ValueError(f"{evalset.name} has no true topics to compare groups with")
            rows.append(
                GroupingRow(
                    system + (f" (k={options['n_clusters']})" if options else ""),
                    encoder_name,
                    len(evalset.docs),
                    agreement(evalset.labels.tolist(), labels),
                    group_stats(labels),
                )
            )
    return rows


SECONDS = 35.0


def work(context: RunContext) -> float:
    each = context.plan.topic_docs * len(context.encoders)
    return context.scaled(SECONDS, GROUPING, each, DEFAULT_PLAN.topic_docs * len(DEFAULT_PLAN.encoders))


def table(results: RunResults) -> list[Table]:
    if not results.grouping:
        return []
    return [
        Table(
            "grouping",
            "Grouping against true topics (topic haystack)",
            "ARI and NMI: agreement of each system's groups with the true topics (1: the same partition). k-means is "
            "given the true number of topics; the reference engine finds its groups online with no k "
            "(`reference-slept`: after one sleep pass). Its groups are sized for search (a multiple of √N cells, "
            "`group_size_per_sqrt_n`), so a "
            "topic spans several groups: homogeneity near 1 with low completeness means pure but fragmented "
            "groups, which ARI penalises. `reference-concepts` scores the layer above the groups after the same "
            "sleep: groups gathered by Ward linkage of their centroids, cut at the largest gap (no k given).",
            (
                SYSTEM,
                column("encoder", "encoder"),
                column("documents", "docs"),
                column("ARI", "ari", format=share),
                column("NMI", "nmi", format=share),
                column("homogeneity", "homogeneity", format=share),
                column("completeness", "completeness", format=share),
                column("groups", "groups"),
                column("size (min / median / max)", "size_min", "size_median", "size_max"),
                column("singletons", "singletons"),
            ),
            [g.row() for g in results.grouping],
        )
    ]


GROUPING = Experiment(
    "grouping",
    section="grouping",
    data=["default"],
    run=run,
    systems=SYSTEMS,
    capability=True,
    work=work,
    tables=(table,),
)
