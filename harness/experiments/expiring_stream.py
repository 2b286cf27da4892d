"""The expiring stream: replaces and expiry over real text in its written order (reported in the streaming
section's tables, `streaming.py`)."""

from __future__ import annotations

from harness.data.encoding import encode_corpus
from harness.data.generated import stream_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.experiments.streaming import SYSTEMS as STREAM_SYSTEMS
from harness.measure.replay import run_streams
from harness.measure.runbooks import expiring_stream
from harness.output.results import StreamRow


def run(context: RunContext) -> list[StreamRow]:
    """Replaces and expiry over real text in its written order (big-ann-benchmarks' expiration-time runbooks)."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder)
    cells = min(len(corpus.passages) - plan.stream_queries, context.stream_size or plan.expiry_cells)
    data = stream_evalset(corpus, vectors, cells, queries=plan.stream_queries)
    options = {"faiss-ivf": {"train_after": max(1, cells // 10)}}  # trained on the first 10 % of the stream
    book = expiring_stream(cells, plan.stream_queries)
    return run_streams(book, data, context.systems_of(EXPIRING), encoder.name, context.progress, options)


SECONDS = 30.0


def work(context: RunContext) -> float:
    plan = context.plan
    cells = min(context.stream_size or plan.expiry_cells, len(context.corpus.passages) - plan.stream_queries)
    share = cells * len(context.systems_of(EXPIRING)) / (DEFAULT_PLAN.expiry_cells * len(STREAM_SYSTEMS))
    return SECONDS * share


EXPIRING = Experiment(
    "expiring-stream",
    section="streaming",
    data=["default", "beam"],
    run=run,
    systems=STREAM_SYSTEMS,
    work=work,
)
