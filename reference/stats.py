"""A snapshot of a memory's shape: how many cells and groups, and how the cells spread."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .memory import CellularMemory


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
    searches: int
    flat_searches: int
    """Searches that read every cell (a memory within the probe budget, or the `top_k` fallback)."""
    entities: int
    dim: int
    encoder: str
    group_backend: str
    persistent: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def memory_stats(memory: CellularMemory) -> MemoryStats:
    sizes = memory._groups.counts[memory._groups.counts > 0]
    cells = len(memory)
    return MemoryStats(
        cells=cells,
        groups=len(sizes),
        groups_per_cell=len(sizes) / cells if cells else 0.0,
        group_size_min=int(sizes.min()) if len(sizes) else 0,
        group_size_median=float(np.median(sizes)) if len(sizes) else 0.0,
        group_size_max=int(sizes.max()) if len(sizes) else 0,
        singleton_groups=int(np.count_nonzero(sizes == 1)),
        target_group_size=memory.config.target_group_size(cells) if memory.config.adaptive else 0,
        group_capacity=memory.config.group_capacity(cells) if memory.config.adaptive else 0,
        searches=memory._counters.searches,
        flat_searches=memory._counters.flat,
        entities=len(memory._entities),
        dim=memory.dim,
        encoder=memory.encoder.name,
        group_backend=memory.config.group_backend,
        persistent=memory._store.persistent,
    )
