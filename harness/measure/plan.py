"""What a run measures: sizes, encoders, seeds (the default run and `--quick`); each experiment names its own
systems (`harness.experiments`).

Scaling runs on synthetic clustered vectors in two regimes. "fixed": 100 clusters at every N, so each
cluster (and each group) grows with N — the published claims are judged here. "growing": one
cluster per 1,000 vectors, so topics multiply as memory grows and cluster size stays constant.
`spread` sets how diffuse the clusters are (two points of a cluster have a cosine close to 1 / (1 + spread²):
`clustered_unit_vectors`); real text embeddings are more diffuse still, hence the real-text regime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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

SLOW_SYSTEMS = {"reference-chroma": 25_000}
"""Systems too slow to build above a size in the default run (Chroma per-group collections)."""


@dataclass(frozen=True)
class RunPlan:
    sizes: tuple[int, ...] = (1_000, 10_000, 25_000, 100_000)
    queries: int = 200
    spread: float = 0.8
    encoders: tuple[str, ...] = ("mock", "minilm")
    needle_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    topic_docs: int = 2_000
    sweep: bool = True
    size_limits: dict[str, int] = field(default_factory=lambda: dict(SLOW_SYSTEMS))
    realtext_sizes: tuple[int, ...] = (1_000, 10_000, 25_000, 50_000, 100_000)
    realtext_queries: int = 1_000
    """Held-out passages of the real-text regime: enough that whether a recall meets a target is not decided by
    which passages happened to be drawn."""
    update_conversations: int = 4
    """Generated dialogues whose facts change (`datasets.updates_evalsets`)."""
    stream_cells: int = 4_000
    """Cells of the streaming runbook in the default run (`--stream-size`; a `--dataset beam:` run streams
    every passage)."""
    stream_queries: int = 200
    expiry_cells: int = 4_000
    """Positions of the expiring stream (`runbooks.expiring_stream`; `--stream-size` sets both streams)."""
    loop_cells: int = 100_000
    loop_rounds: int = 30
    serving_clients: int = 8
    serving_calls: int = 200
    """Calls each client of the serving experiment makes (`serving.client_script`)."""
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
    filter_cells: int = 20_000
    tenant_scopes: int = 500
    """Scopes of the multi-tenant runbook (`tenants.py`; `--tenants`), each of `tenant_cells` cells."""
    tenant_cells: int = 100
    passes: int = 5
    """Timing passes over every system of a regime, interleaved (see `timing.measure_together`)."""
    max_passes: int = 12
    """More passes, up to this many, while the timing is unsettled (`confidence.SETTLED`)."""
    experiment_systems: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Systems an experiment measures in this plan instead of its own (`Experiment.systems`), by its name."""
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
            experiment_systems={"concurrency": ("reference", "flat-numpy", "chroma-server")},
            filter_cells=2_000,
            tenant_scopes=50,
            passes=3,
            max_passes=3,
        )

    def systems_at(self, size: int, systems: tuple[str, ...]) -> list[str]:
        return [s for s in systems if size <= self.size_limits.get(s, size)]
