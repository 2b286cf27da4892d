"""What a run measures: sizes, systems, encoders, seeds (the default run and `--quick`).

Scaling runs on synthetic clustered vectors in two regimes. "fixed": 100 clusters at every N, so each
cluster (and each group) grows with N — the published claims are judged here. "growing": one
cluster per 1,000 vectors, so topics multiply as memory grows and cluster size stays constant.
`spread` sets how diffuse the clusters are (two points of a cluster have a cosine close to 1 / (1 + spread²):
`clustered_unit_vectors`); real text embeddings are more diffuse still, hence the real-text regime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

FIXED_CLUSTERS = 100
"""Clusters at every size in the "fixed" regime."""
GROWING_CLUSTER = 1_000
"""Vectors per cluster in the "growing" regime."""
REGIMES: dict[str, Callable[[int], int]] = {
    "fixed": lambda n: FIXED_CLUSTERS,
    "growing": lambda n: max(1, n // GROWING_CLUSTER),
}
"""Clusters at size N, per scaling regime."""
NEEDLE_DOCS, NEEDLES, NEEDLE_TOP = 200, 5, 3
"""The published needle case: a haystack of 200 documents holding 5 needles, each to be found in the top 3."""

SCALING_SYSTEMS = ("reference", "reference-chroma", "flat-numpy", "flat-chroma", "kmeans", "faiss-ivf", "faiss-hnsw")
NEEDLE_SYSTEMS = ("reference", "reference-no-entities", "flat-chroma", "flat-numpy", "kmeans")
GROUPING_SYSTEMS = ("reference", "reference-slept", "reference-concepts", "kmeans")
"""Systems that declare `groups`, against a topic haystack's true topics (`experiments.grouping`)."""
GROWING_SYSTEMS = ("reference", "flat-numpy", "faiss-ivf", "faiss-hnsw")
REALTEXT_SYSTEMS = (
    "reference-dense",
    "reference-slept",
    "flat-numpy",
    "kmeans",
    "faiss-ivf",
    "faiss-hnsw",
    "bm25",
    "hybrid-rrf",
)
"""Real text, recall against exact dense search: the engine with vector queries (its dense path), also after
one sleep pass, and BM25 and hybrid-rrf to show how far ranking by words moves from dense neighbours."""
DIALOGUE_SYSTEMS = (
    "reference",
    "reference-fusion",
    "reference-episodes",
    "reference-neighbours",
    "reference-turns",
    "reference-undated",
    "reference-dense",
    "flat-numpy",
    "bm25",
    "hybrid-rrf",
)
"""Dialogue memory, with the engine's ablations: fusion alone, + episodes, + neighbours, + turn form (questions
and speakers), all of them (the engine, each session's date as context), and the engine without the date."""
UPDATE_SYSTEMS = ("reference", "reference-dense", "flat-numpy", "bm25", "hybrid-rrf")
"""Facts that change (`experiments.knowledge_update`): the engine in both scoring modes, before and after sleep,
beside the systems that rank by similarity alone."""
STREAM_SYSTEMS = (
    "reference",
    "reference-dense",
    "flat-numpy",
    "bm25",
    "hybrid-rrf",
    "faiss-ivf",
    "faiss-hnsw",
    "flat-chroma",
)
"""The streaming runbook (`runbooks.agent_stream`): faiss-ivf is trained on the first 10 % of the stream."""
LOOP_SYSTEMS = ("reference", "reference-dense", "flat-numpy", "hybrid-rrf")
"""The agent's loop at 100K (`runbooks.agent_loop`); hybrid-rrf stands for every static lexical index (bm25s)."""
CONCURRENCY_SYSTEMS = (
    "reference",
    "reference-dense",
    "flat-numpy",
    "faiss-hnsw",
    "flat-chroma",
    "reference-mcp",
    "chroma-server",
)
"""Many clients at once (`concurrency.py`): the engine by text (as its MCP server searches) and by vector, peers in
this process; the engine's MCP server and a Chroma server, each searched by client processes."""
SERVING_SYSTEMS = ("reference", "reference-mcp")
"""The engine in process and through its MCP server (`serving.SERVICES`)."""
FILTER_SYSTEMS = ("reference", "flat-chroma")
"""Filtered search (`filtered.py`): systems that declare `filters` or `scopes`."""
CAPABILITY_SYSTEMS = ("grouping_systems", "serving_systems", "growing_systems")
"""The plan's lists of systems chosen for a capability (groups, an MCP server, the growing regime's peers): a
`--systems` choice keeps those of them it names (`RunPlan.only`)."""
SLOW_SYSTEMS = {"reference-chroma": 25_000}
"""Systems too slow to build above a size in the default run (Chroma per-group collections)."""


@dataclass(frozen=True)
class RunPlan:
    sizes: tuple[int, ...] = (1_000, 10_000, 25_000, 100_000)
    queries: int = 200
    spread: float = 0.8
    systems: tuple[str, ...] = SCALING_SYSTEMS
    needle_systems: tuple[str, ...] = NEEDLE_SYSTEMS
    encoders: tuple[str, ...] = ("mock", "minilm")
    needle_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    topic_docs: int = 2_000
    grouping_systems: tuple[str, ...] = GROUPING_SYSTEMS
    sweep: bool = True
    growing_systems: tuple[str, ...] = GROWING_SYSTEMS
    size_limits: dict[str, int] = field(default_factory=lambda: dict(SLOW_SYSTEMS))
    realtext_sizes: tuple[int, ...] = (1_000, 10_000, 25_000, 50_000, 100_000)
    realtext_queries: int = 1_000
    """Held-out passages of the real-text regime: enough that whether a recall meets a target is not decided by
    which passages happened to be drawn."""
    realtext_systems: tuple[str, ...] = REALTEXT_SYSTEMS
    update_conversations: int = 4
    """Generated dialogues whose facts change (`datasets.updates_evalsets`)."""
    update_systems: tuple[str, ...] = UPDATE_SYSTEMS
    stream_cells: int = 4_000
    """Cells of the streaming runbook in the default run (`--stream-size`; a `--dataset beam:` run streams
    every passage)."""
    stream_queries: int = 200
    expiry_cells: int = 4_000
    """Positions of the expiring stream (`runbooks.expiring_stream`; `--stream-size` sets both streams)."""
    stream_systems: tuple[str, ...] = STREAM_SYSTEMS
    loop_cells: int = 100_000
    loop_rounds: int = 30
    loop_systems: tuple[str, ...] = LOOP_SYSTEMS
    serving_clients: int = 8
    serving_calls: int = 200
    """Calls each client of the serving experiment makes (`serving.client_script`)."""
    serving_systems: tuple[str, ...] = SERVING_SYSTEMS
    concurrency_cells: int = 10_000
    concurrency_levels: tuple[int, ...] = (1, 2, 4, 8)
    """Clients searching at once, one level after another."""
    concurrency_seconds: float = 1.0
    """How long each level searches, in all."""
    concurrency_windows: int = 3
    """Windows of time each level's seconds are split into, taken in turn with the other levels' windows: a
    burst of other load on a shared machine then shows as one window's spread, not as one level's figure."""
    concurrency_write_rate: float = 20.0
    """Cells written per second (one a write) while searching, in the second half of the levels."""
    concurrency_systems: tuple[str, ...] = CONCURRENCY_SYSTEMS
    filter_cells: int = 20_000
    filter_systems: tuple[str, ...] = FILTER_SYSTEMS
    tenant_scopes: int = 500
    """Scopes of the multi-tenant runbook (`tenants.py`; `--tenants`), each of `tenant_cells` cells."""
    tenant_cells: int = 100
    tenant_systems: tuple[str, ...] = ("reference",)
    passes: int = 5
    """Timing passes over every system of a regime, interleaved (see `timing.measure_together`)."""
    max_passes: int = 12
    """More passes, up to this many, while the timing is unsettled (`confidence.SETTLED`)."""
    slow_down: dict[str, float] = field(default_factory=dict)
    """Systems deliberately slowed by a factor (`--slow-down`), to check that `compare` catches it."""

    @classmethod
    def quick(cls) -> RunPlan:
        return cls(
            sizes=(1_000, 10_000),
            queries=100,
            needle_seeds=(0, 1),
            topic_docs=600,
            realtext_sizes=(1_000,),
            update_conversations=1,
            stream_cells=1_000,
            stream_queries=100,
            expiry_cells=1_000,
            loop_cells=10_000,
            loop_rounds=10,
            serving_clients=4,
            serving_calls=50,
            concurrency_cells=2_000,
            concurrency_levels=(1, 2),
            concurrency_seconds=0.3,
            concurrency_windows=2,
            concurrency_systems=("reference", "flat-numpy", "chroma-server"),
            filter_cells=2_000,
            tenant_scopes=50,
            passes=3,
            max_passes=3,
        )

    def systems_at(self, size: int, systems: tuple[str, ...]) -> list[str]:
        return [s for s in systems if size <= self.size_limits.get(s, size)]

    def only(self, systems: tuple[str, ...]) -> RunPlan:
        """The plan with `--systems`: every experiment's systems replaced by them, except where an experiment
        measures a capability only its own systems have (grouping, serving, growing): there, those of its own the
        choice names."""
        changes: dict[str, Any] = {f.name: systems for f in fields(self) if f.name.endswith("systems")}
        changes |= {name: tuple(s for s in getattr(self, name) if s in systems) for name in CAPABILITY_SYSTEMS}
        return replace(self, **changes)
