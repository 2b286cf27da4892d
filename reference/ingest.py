"""Writing cells: the write path beside `search.py` (reading) and `sleep.py` (consolidating).

The facade checks and encodes what is written outside the lock (`NewCells`); here, under the write lock,
the clustering plans the cells' groups within their scopes and the state commits them: new cells with
`EngineState.commit_write`, cells written again under ids the memory holds (`update`, an upsert) with
`EngineState.commit_replace`, grouped as if their old versions were gone and stored in one replacing write.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .cells import CellBatch, ConflictNote
from .clustering import LeaderClustering
from .episodes import inferred_names
from .state import EngineState


@dataclass(frozen=True)
class NewCells:
    """Checked, encoded cells to write (one entry per cell in every list)."""

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray
    kinds: list[str]
    importance: list[float]
    timestamps: list[float]
    metadata: list[dict[str, Any]]
    scopes: list[str]
    entities: list[frozenset[str]]
    episodes: list[str] | None = None
    """None: inferred from the time between writes when written (`episodes.py`)."""
    histories: list[list[dict[str, Any]]] = field(default_factory=list)
    conflicts: list[list[ConflictNote]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: Sequence[int]) -> NewCells:
        """The cells at these positions (these cells themselves when that is all of them, in order)."""
        if list(positions) == list(range(len(self))):
            return self

        def pick(values: Sequence[Any]) -> list[Any]:
            return [values[i] for i in positions]

        return NewCells(
            pick(self.ids),
            pick(self.texts),
            self.vectors[list(positions)],
            pick(self.kinds),
            pick(self.importance),
            pick(self.timestamps),
            pick(self.metadata),
            pick(self.scopes),
            pick(self.entities),
            None if self.episodes is None else pick(self.episodes),
            pick(self.histories) if self.histories else [],
            pick(self.conflicts) if self.conflicts else [],
        )


def write(state: EngineState, clustering: LeaderClustering, gap: float, cells: NewCells) -> None:
    """Commit new cells (their ids are free); an episode left to inference continues the last write's
    when it comes within `gap` seconds."""
    if cells.episodes is None:
        cells = replace(cells, episodes=inferred_names(cells.ids, cells.timestamps, state.last_written(), gap))
    scopes = state.scope_codes(cells.scopes)
    plan = clustering.assign(state.groups, cells.vectors, members=state.members, scopes=scopes)
    state.commit_write(_batch(cells, plan.groups), plan, cells.entities)


def rewrite(state: EngineState, clustering: LeaderClustering, rows: np.ndarray, cells: NewCells) -> None:
    """Commit cells written again under the ids `rows` hold now, grouped as if their old versions were gone
    (no split moves them; their groups' sums lose them first)."""
    groups = state.groups.copy()
    groups.remove_members(state.table.group[rows], state.index.vectors_of(rows))
    leaving = set(rows.tolist())

    def members(group: int) -> tuple[np.ndarray, np.ndarray]:
        found, vectors = state.members(group)
        staying = np.fromiter((row not in leaving for row in found.tolist()), dtype=bool, count=len(found))
        return found[staying], vectors[staying]

    plan = clustering.assign(groups, cells.vectors, members=members, scopes=state.scope_codes(cells.scopes))
    state.commit_replace(rows, _batch(cells, plan.groups), plan, cells.entities)


def _batch(cells: NewCells, groups: np.ndarray) -> CellBatch:
    assert cells.episodes is not None
    count = len(cells)
    none: Sequence[Sequence[Any]] = [()] * count  # one shared empty tuple: the table copies what it keeps
    return CellBatch(
        ids=cells.ids,
        texts=cells.texts,
        vectors=cells.vectors,
        groups=groups,
        kinds=cells.kinds,
        importance=np.asarray(cells.importance, dtype=np.float64),
        timestamps=np.asarray(cells.timestamps, dtype=np.float64),
        access=np.zeros(count, dtype=np.int64),
        metadata=cells.metadata,
        conflicts=cells.conflicts or none,
        episodes=cells.episodes,
        scopes=cells.scopes,
        histories=cells.histories or none,
    )


_LIBC = ctypes.CDLL(None)
"""The symbols the process has loaded (its C library among them): no search for a library at import."""


def release_freed_memory() -> None:
    """Hand the pages a large write freed back to the OS (glibc's `malloc_trim`; elsewhere nothing). Its chunk
    temporaries (each chunk's scores against every centroid: 21 MB at a million cells) are freed into the heap,
    which kept them resident: 0.15× the raw vectors after a million-cell write, 0 after the trim."""
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)
