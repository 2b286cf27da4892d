"""Episodes: the cells written together (a conversation's session, an agent's task), as context for search.

A cell's episode is given by the caller (`add(..., episode="session-3")`) or inferred: a cell added
without one continues the inferred episode of the cell written just before it when its timestamp is at
most `MemoryConfig.episode_gap_s` later, and starts a new one otherwise (named `@` + the id of its first
cell). Within an episode, cells are linked in the order they were written; in an episode the caller named
(a session's turns), those are a cell's neighbouring turns. Rows are the table's, like the other indexes;
the index is derived from the cells' stored episode names and rebuilt on open. How episodes enter ranking
is `search.py`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .table import with_room

INFERRED = "@"
"""The first character of an inferred episode's name (given names may not start with it)."""


class EpisodeIndex:
    """Row → episode (as an integer code) and the rows written just before and after it in its episode."""

    def __init__(self) -> None:
        self._code_of: dict[tuple[int, str], int] = {}
        self._names: list[str] = []
        self._last_row: dict[int, int] = {}
        self._named = np.zeros(0, dtype=bool)
        self.code = np.full(0, -1, dtype=np.int64)
        self.before = np.full(0, -1, dtype=np.int64)
        self.after = np.full(0, -1, dtype=np.int64)

    def __len__(self) -> int:
        """Episodes with live cells."""
        return len(self._last_row)

    def add(self, rows: np.ndarray, names: Sequence[str], scopes: np.ndarray) -> None:
        """Index new rows (in the order they were written) under their episodes' names, within their scopes
        (an episode of one scope never holds another scope's cells, whatever its name)."""
        if not len(rows):
            return
        end = int(rows.max()) + 1
        self.code, self.before, self.after = (with_room(a, end, fill=-1) for a in (self.code, self.before, self.after))
        pairs = list(zip(scopes.tolist(), names))
        known = len(self._names)
        for scope, name in dict.fromkeys(pairs):
            if (scope, name) not in self._code_of:
                self._code_of[scope, name] = len(self._names)
                self._names.append(name)
        self._named = with_room(self._named, len(self._names))
        self._named[known : len(self._names)] = [not name.startswith(INFERRED) for name in self._names[known:]]
        codes = np.fromiter((self._code_of[pair] for pair in pairs), dtype=np.int64, count=len(pairs))
        order = np.argsort(codes, kind="stable")  # each episode's new rows together, in the order written
        codes, rows = codes[order], rows[order]
        first = np.r_[True, codes[1:] != codes[:-1]]  # each episode's first new row
        before = np.r_[-1, rows[:-1]]
        before[first] = [self._last_row.get(code, -1) for code in codes[first].tolist()]
        self.code[rows], self.before[rows], self.after[rows] = codes, before, -1
        linked = before >= 0
        self.after[before[linked]] = rows[linked]
        last = np.r_[first[1:], True]
        self._last_row.update(zip(codes[last].tolist(), rows[last].tolist()))

    def remove(self, rows: np.ndarray) -> None:
        """Unlink rows from their episodes (the rows before and after each are linked to each other)."""
        for row in rows.tolist():
            code, before, after = int(self.code[row]), int(self.before[row]), int(self.after[row])
            if before >= 0:
                self.after[before] = after
            if after >= 0:
                self.before[after] = before
            elif before >= 0:
                self._last_row[code] = before
            else:
                del self._last_row[code]
            self.code[row] = self.before[row] = self.after[row] = -1

    def neighbours(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows written just before and just after each of `rows` in its episode, where the caller named
        the episode (-1 otherwise: an inferred episode's order of writing says nothing about its cells)."""
        named = self._named[self.code[rows]]
        return np.where(named, self.before[rows], -1), np.where(named, self.after[rows], -1)

    def name(self, row: int) -> str:
        return self._names[int(self.code[row])]

    def rows(self) -> set[int]:
        return set(np.flatnonzero(self.code >= 0).tolist())

    def problems(self) -> list[str]:
        """Links that do not agree with each other or with the episodes (for `check_invariants`)."""
        rows = np.flatnonzero(self.code >= 0)
        before, after = self.before[rows], self.after[rows]
        linked = after >= 0
        found = []
        if (self.before[after[linked]] != rows[linked]).any() or (
            self.after[before[before >= 0]] != rows[before >= 0]
        ).any():
            found.append("an episode's links disagree")
        if (self.code[after[linked]] != self.code[rows[linked]]).any():
            found.append("an episode link crosses episodes")
        if np.count_nonzero(~linked) != len(self) or set(rows[~linked].tolist()) != set(self._last_row.values()):
            found.append("an episode's last cell is not where its links end")
        return found


def inferred_names(
    ids: Sequence[str], timestamps: Sequence[float], previous: tuple[str, float] | None, gap: float
) -> list[str]:
    """Episode names for cells added without one, in write order: each continues the inferred episode of
    the cell before it (`previous`: its episode and timestamp, for the first) when at most `gap` seconds
    later, else starts its own."""
    episode, written = previous if previous is not None and previous[0].startswith(INFERRED) else ("", np.nan)
    gaps = np.diff(np.asarray(timestamps, dtype=np.float64), prepend=written)
    starts = ~((gaps >= 0) & (gaps <= gap))  # NaN (no inferred episode before the first cell) starts one
    heads = [episode] + [INFERRED + ids[i] for i in np.flatnonzero(starts).tolist()]
    return [heads[run] for run in np.cumsum(starts).tolist()]
