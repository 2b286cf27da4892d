"""Any BEIR-format directory (`--dataset DIR`): recall@10, MRR and nDCG@10 from its qrels, with latency."""

from __future__ import annotations

from harness.data.beir import load_beir
from harness.data.encoding import encode_evalset
from harness.experiments.definition import DATASET_SECONDS, Experiment, RunContext
from harness.experiments.scaling import SYSTEMS as SCALING_SYSTEMS
from harness.measure.timing import K, job, timed
from harness.output.formats import share
from harness.output.results import Measurement, RunResults
from harness.output.sections.common import P50, SIZE, SYSTEM
from harness.output.tables import Table, column


def run(context: RunContext) -> list[Measurement]:
    """Any BEIR-format directory: recall@10, MRR and nDCG@10 from its qrels, with latency."""
    assert context.dataset is not None
    encoder_name, encoder = context.encoder
    evalset = encode_evalset(load_beir(context.dataset.location), encoder)
    jobs = [job(context.plan, system, evalset, encoder_name) for system in context.systems_of(BEIR)]
    return timed(context.plan, jobs, context.progress, f"BEIR {evalset.name}")


def work(context: RunContext) -> float:
    return DATASET_SECONDS


def headline(results: RunResults) -> list[Table]:
    """The whole table: a BEIR run measures nothing else."""
    if not results.beir:
        return []
    return [
        Table(
            "beir",
            f"BEIR-format dataset `{results.beir[0].dataset}`",
            f"Recall@10 divides by the number of relevant documents (BEIR, MTEB); capped recall by min({K}, "
            "relevant). MRR and nDCG@10 from the qrels' grades; p50 and p95 of one query on one core.",
            (
                SYSTEM,
                column("encoder", "encoder"),
                SIZE,
                column("recall@10", "recall_at_10", format=share),
                column("capped recall@10", "capped_recall_at_10", format=share),
                column("MRR", "mrr", format=share),
                column("nDCG@10", "ndcg_at_10", format=share),
                P50,
                column("p95 (ms)", "latency_p95_ms"),
            ),
            [m.row() for m in results.beir],
        )
    ]


BEIR = Experiment(
    "beir",
    section="beir",
    data=["beir"],
    run=run,
    systems=SCALING_SYSTEMS,
    work=work,
    headlines=(headline,),
)
