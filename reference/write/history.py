"""What a cell written again keeps of its old self: its history (each text it replaced, with when) and its conflicts
while its text stays. An update, an upsert and a supersession all keep it so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..cells.table import CellRecord, ConflictNote


class Kept(NamedTuple):
    """Per cell written again: its history and its conflicts."""

    histories: list[list[dict[str, Any]]]
    conflicts: list[list[ConflictNote]]


def kept_of(old: Sequence[CellRecord], texts: Sequence[str], now: float) -> Kept:
    """What cells `old` keep when written again with `texts` at `now`: each its history, with its old text
    added when the text changes, and its conflicts while its text stays (a new text drops them on both cells,
    `EngineState.commit_replace`: they were judged on the old text, and the next sleep pass judges the new one)."""
    changed = {r.id for r, text in zip(old, texts) if r.text != text}
    histories = [[*r.history, {"text": r.text, "replaced": now}] if r.id in changed else r.history for r in old]
    conflicts = [[] if r.id in changed else [note for note in r.conflicts if note.other not in changed] for r in old]
    return Kept(histories, conflicts)


def superseding(older: CellRecord, newer: CellRecord, now: float) -> list[dict[str, Any]]:
    """The history of `newer` once it supersedes `older` at `now`: the older cell's history and text, then its own."""
    return [*older.history, {"text": older.text, "replaced": now}, *newer.history]
