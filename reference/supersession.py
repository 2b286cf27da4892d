"""Recorded contradictions applied as updates: the newer cell stays, the older one goes into its history.

What any cell written again keeps of its old self (history, conflicts) is the write path's (`ingest.kept_of`).
"""

from __future__ import annotations

from . import ingest
from .clustering import LeaderClustering
from .judges import Conflict
from .sleep import recorded_conflicts
from .state import EngineState


def apply_recorded(state: EngineState, clustering: LeaderClustering, now: float) -> list[Conflict]:
    """Apply every recorded conflict whose cells are both still held (under the write lock): the newer cell
    keeps its text and takes the older one's text (and its history) into its history; the older cell goes.
    Returns what was applied."""
    applied = []
    for conflict in recorded_conflicts(state):
        row_of = state.table.row_of
        if conflict.first not in row_of or conflict.second not in row_of:
            continue  # one of them went with an earlier supersession
        older, newer = state.records([row_of[conflict.first], row_of[conflict.second]])
        history = [*older.history, {"text": older.text, "replaced": now}, *newer.history]
        ingest.rewrite(state, clustering, state.rows_of([newer.id]), ingest.cells_of([newer], histories=[history]))
        state.commit_delete(state.rows_of([older.id]))
        applied.append(conflict)
    return applied
