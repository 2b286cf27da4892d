"""A snapshot of a memory's shape: how many cells and groups, and how the cells spread."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .common.config import MemoryConfig
from .sleep.regrouping import GroupSizes
from .state.calibration import CONFIDENCE
from .state.engine import EngineState


@dataclass(frozen=True)
class MemoryStats:
    cells: int
    groups: int
    groups_per_cell: float
    group_size_min: int
    group_size_median: float
    group_size_max: int
    singleton_groups: int
    target_group_size: int
    group_capacity: int
    target_groups: int
    """N / t(N): where founding stops (adaptive grouping)."""
    group_bound: int
    """The most groups ingest and sleep make (splits stop here)."""
    searches: int
    flat_searches: int
    """Searches that read every cell (a memory within the probe budget, or the `top_k` fallback)."""
    bytes_read_per_search: float
    """Vector bytes the dense stage read per search, on average: a probe's int8 codes (and scales) of
    centroids and cells and the float32 vectors it rescored; a flat search's float32 vectors."""
    entities: int
    episodes: int
    """Episodes with live cells (`episodes.py`)."""
    target_recall: float | None
    estimated_recall: float | None
    """The memory's own estimate of its recall@10 at the probe margin in force (`calibration.py`); None
    before the first estimate."""
    estimated_recall_low: float | None
    """The estimate's one-sided lower bound at `recall_confidence`: the margin in force is the least (of those
    tried) whose bound meets `target_recall`, so the target is a floor with that confidence; below the target only
    where no margin and budget (`probe_reach`) tried meets it."""
    recall_confidence: float
    """How sure the engine is that new text's recall@10 is at least `estimated_recall_low`."""
    probe_margin: float
    """The margin budget probing uses now."""
    probe_reach: int
    """The multiple of the candidate budget in force (more than 1 when the widest margin fell short of the target)."""
    dim: int
    encoder: str
    group_backend: str
    persistent: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def memory_stats(state: EngineState, config: MemoryConfig, *, encoder: str, dim: int) -> MemoryStats:
    """The shape of the state (call under its read lock)."""
    cells, counters = len(state.table), state.counters
    sizes = GroupSizes.of(state.groups.counts)
    return MemoryStats(
        cells=cells,
        groups=sizes.groups,
        groups_per_cell=sizes.groups / cells if cells else 0.0,
        group_size_min=sizes.size_min,
        group_size_median=sizes.size_median,
        group_size_max=sizes.size_max,
        singleton_groups=sizes.singletons,
        target_group_size=config.target_group_size(cells) if config.adaptive else 0,
        group_capacity=config.group_capacity(cells) if config.adaptive else 0,
        target_groups=config.target_groups(cells),
        group_bound=config.group_bound(cells),
        searches=counters.searches,
        flat_searches=counters.flat,
        bytes_read_per_search=counters.bytes_read / counters.searches if counters.searches else 0.0,
        entities=len(state.entities),
        episodes=len(state.episodes),
        target_recall=config.target_recall,
        estimated_recall=state.probe.estimated_recall,
        estimated_recall_low=state.probe.recall_low,
        recall_confidence=CONFIDENCE,
        probe_margin=state.probe.margin,
        probe_reach=state.probe.reach,
        dim=dim,
        encoder=encoder,
        group_backend=config.group_backend,
        persistent=state.store.persistent,
    )
