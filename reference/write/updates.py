"""A cell superseded by a newer version of itself: an update in place, and recorded contradictions applied as
updates (the newer cell stays, the older one goes into its history). What the new version keeps of the old one is
`history.py`'s; the write itself is the write path's (`ingest.rewrite`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..cells.table import CellRecord, seen_text
from ..common.errors import NotFoundError
from ..common.validation import unit_rows
from ..encoders import Encoder
from ..groups.clustering import LeaderClustering
from ..judges import Conflict
from ..score.scoring import Clock
from ..sleep.passes import recorded_conflicts
from ..state.engine import EngineState
from ..state.residency import Residency
from . import ingest
from .history import superseding


def update(
    state: EngineState,
    resident: Residency,
    clustering: LeaderClustering,
    cell_id: str,
    *,
    scope: str | None,
    text: str | None,
    metadata: dict[str, Any] | None,
    vector: np.ndarray | None,
    encoder: Encoder,
    clock: Clock,
) -> CellRecord:
    """Replace a cell in place with the fields given (checked), and return its new record. The new version is made
    from the cell as read (encoding outside the lock) and written only if the cell is still that version; if
    another write changed it meanwhile, it is made again from what that write left. A deleted cell stays deleted.
    The cell's scope is pinned in RAM throughout (`Residency.pinned`), so its row stays the one read."""
    with resident.pinned((), [cell_id]):
        while True:
            with resident.reading((), [cell_id]):
                stamp = state.stamp_of(cell_id)
                old = None if stamp < 0 else state.record(state.table.row_of[cell_id])
            if old is None or (scope is not None and old.scope != scope):
                raise NotFoundError(f"unknown ids: [{cell_id!r}]" + ("" if scope is None else f" in scope {scope!r}"))
            new = _revised(old, text, metadata, vector, encoder)
            with resident.writing((), [cell_id]):
                if state.stamp_of(cell_id) < 0:
                    raise NotFoundError(f"cell {cell_id!r} was deleted while it was being updated; nothing was written")
                if state.stamp_of(cell_id) == stamp:
                    ingest.rewrite_kept(state, clustering, ingest.cells_of([new]), now=clock(), keep_episode=True)
                    return state.record(state.table.row_of[cell_id])
            # written meanwhile: made again from what that write left


def _revised(
    old: CellRecord, text: str | None, metadata: dict[str, Any] | None, vector: np.ndarray | None, encoder: Encoder
) -> CellRecord:
    """`old` with the fields `update` was given; its vector encoded anew when what the encoder sees changed."""
    new = replace(old, text=text or old.text, metadata=old.metadata if metadata is None else metadata)
    if vector is None and (text is not None or "context" in {*new.metadata, *old.metadata}):
        vector = unit_rows(encoder.encode([seen_text(new.text, new.metadata)]), dim=encoder.dim)[0]
    return new if vector is None else replace(new, vector=vector)


def apply_recorded(
    state: EngineState, clustering: LeaderClustering, now: float, scope: int | None = None
) -> list[Conflict]:
    """Apply every recorded conflict (of `scope`; None: of every scope in RAM) whose cells are both still held
    (under the write lock): the newer cell keeps its text and takes the older one's text (and its history) into its
    history; the older cell goes. Returns what was applied."""
    applied = []
    for conflict in recorded_conflicts(state, scope):
        row_of = state.table.row_of
        if conflict.first not in row_of or conflict.second not in row_of:
            continue  # one of them went with an earlier supersession
        older, newer = state.records([row_of[conflict.first], row_of[conflict.second]])
        history = superseding(older, newer, now)
        ingest.rewrite(state, clustering, state.rows_of([newer.id]), ingest.cells_of([newer], histories=[history]))
        state.commit_delete(state.rows_of([older.id]))
        applied.append(conflict)
    return applied
