"""What each experiment plans to take, in seconds, before it starts: what it took in a default run on the machine
the defaults were measured on (`DEFAULT_SECONDS`), scaled by how much of that work this run's plan asks for (the
cells its systems build, the seeds, the streams), plus the first run's encoding of a real-text corpus. A run
learns its own machine's pace from these as it goes (`harness.output.progress.RunProgress`), so they need to be
right in proportion more than in size.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.data.encoding import corpus_cache
from harness.measure.experiment_registry import RunContext
from harness.measure.plan import DIALOGUE_SYSTEMS, RunPlan

DEFAULT = RunPlan()
DEFAULT_SECONDS = {
    "scaling": 660.0,
    "growing": 120.0,
    "needles": 15.0,
    "grouping": 35.0,
    "judges": 2.0,
    "realtext": 45.0,
    "streaming": 40.0,
    "agent-loop": 120.0,
    "serving": 60.0,
    "expiring-stream": 30.0,
    "concurrency": 150.0,
    "filtered": 60.0,
    "knowledge-update": 100.0,
    "multi-tenant": 20.0,
}
"""Each experiment of the default run, in seconds, on the machine the defaults were measured on."""
ENCODING_PER_PASSAGE = 0.025
"""Seconds MiniLM takes per passage of real text there (once per corpus: the vectors are cached)."""
DATASET_SECONDS = 120.0
"""A `--dataset` experiment, whose size is known only once its file is read."""
DIALOGUE_SECONDS_PER_MB = 40.0
"""A dialogue file's evidence retrieval, per megabyte of the file and per system (a file's turns and questions grow
with its size); a system from outside the registry is planned as a registered one until its first conversation
is timed (`progress.Steps`)."""


def scaling(context: RunContext) -> float:
    plan = context.plan
    return DEFAULT_SECONDS["scaling"] * _cells(plan, plan.systems) / _cells(DEFAULT, DEFAULT.systems)


def growing(context: RunContext) -> float:
    plan = context.plan
    systems = [s for s in plan.growing_systems if s in plan.systems]
    return DEFAULT_SECONDS["growing"] * _cells(plan, systems) / _cells(DEFAULT, DEFAULT.growing_systems)


def needles(context: RunContext) -> float:
    plan = context.plan
    share = len(plan.needle_seeds) * len(context.encoders) * len(plan.needle_systems)
    return DEFAULT_SECONDS["needles"] * share / (len(DEFAULT.needle_seeds) * 2 * len(DEFAULT.needle_systems))


def grouping(context: RunContext) -> float:
    plan = context.plan
    share = plan.topic_docs * len(context.encoders) * len(plan.grouping_systems)
    return DEFAULT_SECONDS["grouping"] * share / (DEFAULT.topic_docs * 2 * len(DEFAULT.grouping_systems))


def judges(context: RunContext) -> float:
    return DEFAULT_SECONDS["judges"]


def realtext(context: RunContext) -> float:
    plan, passages = context.plan, len(context.corpus.passages)
    cells = _realtext_cells(plan, passages) * len(plan.realtext_systems)
    default = _realtext_cells(DEFAULT, passages) * len(DEFAULT.realtext_systems)
    return DEFAULT_SECONDS["realtext"] * cells / default + encoding(context)


def streaming(context: RunContext) -> float:
    plan = context.plan
    cells = min(context.stream_size or plan.stream_cells, len(context.corpus.passages) - plan.stream_queries)
    share = cells * len(plan.stream_systems) / (DEFAULT.stream_cells * len(DEFAULT.stream_systems))
    return DEFAULT_SECONDS["streaming"] * share + (0.0 if "realtext" in context.chosen else encoding(context))


def agent_loop(context: RunContext) -> float:
    plan = context.plan
    share = plan.loop_cells * len(plan.loop_systems) / (DEFAULT.loop_cells * len(DEFAULT.loop_systems))
    return DEFAULT_SECONDS["agent-loop"] * share


def serving(context: RunContext) -> float:
    plan = context.plan
    share = plan.serving_clients * plan.serving_calls * len(plan.serving_systems)
    return DEFAULT_SECONDS["serving"] * share / (DEFAULT.serving_clients * DEFAULT.serving_calls * 2)


def expiring_stream(context: RunContext) -> float:
    plan = context.plan
    cells = min(context.stream_size or plan.expiry_cells, len(context.corpus.passages) - plan.stream_queries)
    share = cells * len(plan.stream_systems) / (DEFAULT.expiry_cells * len(DEFAULT.stream_systems))
    return DEFAULT_SECONDS["expiring-stream"] * share


def concurrency(context: RunContext) -> float:
    plan = context.plan
    share = (len(plan.concurrency_systems) * len(plan.concurrency_levels) * plan.concurrency_seconds) / (
        len(DEFAULT.concurrency_systems) * len(DEFAULT.concurrency_levels) * DEFAULT.concurrency_seconds
    )
    return DEFAULT_SECONDS["concurrency"] * share


def filtered(context: RunContext) -> float:
    plan = context.plan
    share = plan.filter_cells * len(plan.filter_systems) / (DEFAULT.filter_cells * len(DEFAULT.filter_systems))
    return DEFAULT_SECONDS["filtered"] * share


def knowledge_update(context: RunContext) -> float:
    if context.dataset is not None:
        return DATASET_SECONDS
    plan = context.plan
    share = (
        plan.update_conversations
        * len(plan.update_systems)
        / (DEFAULT.update_conversations * len(DEFAULT.update_systems))
    )
    return DEFAULT_SECONDS["knowledge-update"] * share


def tenants(context: RunContext) -> float:
    plan = context.plan
    share = (
        plan.tenant_scopes
        * plan.tenant_cells
        * len(plan.tenant_systems)
        / (DEFAULT.tenant_scopes * DEFAULT.tenant_cells * len(DEFAULT.tenant_systems))
    )
    return DEFAULT_SECONDS["multi-tenant"] * share


def dataset(context: RunContext) -> float:
    return DATASET_SECONDS


def dialogue(context: RunContext) -> float:
    assert context.dataset is not None
    megabytes = context.dataset.location.stat().st_size / 1e6
    return DIALOGUE_SECONDS_PER_MB * megabytes * len(context.systems or DIALOGUE_SYSTEMS)


def encoding(context: RunContext) -> float:
    """The real-text corpus's encoding, when its vectors are not cached yet."""
    path = corpus_cache(context.corpus, context.text_encoder)
    return 0.0 if path is not None and path.is_file() else len(context.corpus.passages) * ENCODING_PER_PASSAGE


def _cells(plan: RunPlan, systems: Sequence[str]) -> int:
    """Cells the systems build over the plan's sizes."""
    return sum(size * len(plan.systems_at(size, tuple(systems))) for size in plan.sizes)


def _realtext_cells(plan: RunPlan, passages: int) -> int:
    """Cells of the real-text memories: the plan's sizes that the corpus holds, and all it holds."""
    room = passages - plan.realtext_queries
    return sum({*(n for n in plan.realtext_sizes if n < room), room})
