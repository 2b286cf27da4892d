"""The agent's loop at scale: write a turn, search for it, search again (reported in the streaming section's
tables, `streaming.py`)."""

from __future__ import annotations

from harness.data.encoding import encode_evalset
from harness.data.generated import notes_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.replay import run_streams
from harness.measure.runbooks import agent_loop as loop_runbook
from harness.output.results import StreamRow
from reference.encoders import MockEncoder

SYSTEMS = ("reference", "reference-dense", "flat-numpy", "hybrid-rrf")
"""The agent's loop at 100K (`runbooks.agent_loop`); hybrid-rrf stands for every static lexical index (bm25s)."""


def run(context: RunContext) -> list[StreamRow]:
    """The agent's loop: write a turn, search for it, search again (synthetic notes, the mock encoder)."""
    plan = context.plan
    encoder = MockEncoder(384)
    notes = notes_evalset(plan.loop_cells + plan.loop_rounds, queries=max(2 * plan.loop_rounds, 100))
    data = encode_evalset(notes, encoder, cache=None)  # hashing is cheaper than the cache
    book = loop_runbook(plan.loop_cells, plan.loop_rounds, len(data.queries))
    return run_streams(book, data, context.systems_of(AGENT_LOOP), encoder.name, context.progress)


SECONDS = 120.0


def work(context: RunContext) -> float:
    return context.scaled(SECONDS, AGENT_LOOP, context.plan.loop_cells, DEFAULT_PLAN.loop_cells)


AGENT_LOOP = Experiment("agent-loop", section="streaming", data=["default"], run=run, systems=SYSTEMS, work=work)
