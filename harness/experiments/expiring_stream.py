"""The expiring stream: replaces and expiry over real text in its written order (reported in the streaming
section's tables, `streaming.py`)."""

from __future__ import annotations

from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.experiments.streaming import SYSTEMS as STREAM_SYSTEMS
from harness.experiments.streaming import replay_text, text_stream_cells
from harness.measure.runbooks import expiring_stream
from harness.output.results import StreamRow


def run(context: RunContext) -> list[StreamRow]:
    """Replaces and expiry over real text in its written order (big-ann-benchmarks' expiration-time runbooks)."""
    return replay_text(context, EXPIRING, text_stream_cells(context, context.plan.expiry_cells), expiring_stream)


SECONDS = 30.0


def work(context: RunContext) -> float:
    cells = text_stream_cells(context, context.plan.expiry_cells)
    return context.scaled(SECONDS, EXPIRING, cells, DEFAULT_PLAN.expiry_cells)


EXPIRING = Experiment(
    "expiring-stream",
    section="streaming",
    data=["default", "beam"],
    run=run,
    systems=STREAM_SYSTEMS,
    work=work,
)
