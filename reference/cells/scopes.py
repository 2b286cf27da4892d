"""Each scope's cells as rows of the cell table, in the order they were written.

A scope is a memory of its own inside the store: counting, listing, deleting, sleeping or refining one scope
reads its rows here, never a pass over every cell. Rows are the table's, like the other indexes; the lists are
derived from the cells and rebuilt on open.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import numpy as np

from .table import with_room


class ScopeRows:
    """Scope code → its rows in the order written, each with the stamp of its filling (`CellTable.stamp`): a row
    deleted and filled again by another cell is another entry. Entries no longer live are dropped once they are as
    many as the live ones."""

    def __init__(self) -> None:
        self._rows: dict[int, np.ndarray] = {}
        """Each scope's rows and their stamps (two columns), with room after its `_ends`."""
        self._ends: dict[int, int] = {}
        self._live: dict[int, int] = {}

    def __len__(self) -> int:
        """Scopes that hold cells."""
        return len(self._live)

    def __iter__(self) -> Iterator[int]:
        """The codes of the scopes that hold cells."""
        return iter(self._live)

    def sole(self) -> int | None:
        """The code of the one scope that holds cells; None when none does or several do."""
        return next(iter(self._live)) if len(self._live) == 1 else None

    def count(self, scope: int) -> int:
        return self._live.get(scope, 0)

    def add(self, rows: np.ndarray, scopes: np.ndarray, stamps: np.ndarray) -> None:
        """Note new rows (in the order written) of these scopes, with their stamps."""
        for scope, members in by_code(scopes):
            end = self._ends.get(scope, 0)
            held = with_room(self._rows.get(scope, np.zeros((0, 2), np.int64)), end + len(members), least=16)
            held[end : end + len(members), 0], held[end : end + len(members), 1] = rows[members], stamps[members]
            self._rows[scope], self._ends[scope] = held, end + len(members)
            self._live[scope] = self._live.get(scope, 0) + len(members)

    def remove(self, rows: np.ndarray, scopes: np.ndarray, alive: np.ndarray, stamps: np.ndarray) -> None:
        """Note rows gone (`alive`, `stamps`: the table's live mask, already without them, and stamps)."""
        for scope, members in by_code(scopes, rows):
            left = self._live[scope] - len(members)
            if not left:
                del self._rows[scope], self._ends[scope], self._live[scope]
                continue
            self._live[scope] = left
            if 2 * left <= self._ends[scope]:  # as many gone as live: keep the live ones only
                held = self._rows[scope][: self._ends[scope]]
                kept = held[self._held(held, alive, stamps)]
                self._rows[scope], self._ends[scope] = kept.copy(), len(kept)

    def live(self, scope: int, alive: np.ndarray, stamps: np.ndarray) -> np.ndarray:
        """The scope's live rows, in the order written."""
        if scope not in self._rows:
            return np.zeros(0, dtype=np.int64)
        held = self._rows[scope][: self._ends[scope]]
        rows: np.ndarray = held[:, 0] if self._live[scope] == len(held) else held[self._held(held, alive, stamps), 0]
        return rows

    def last(self, scope: int, alive: np.ndarray, stamps: np.ndarray) -> int | None:
        """The scope's live row written last (None: it holds none)."""
        if scope not in self._rows:
            return None
        held = self._rows[scope]
        for end in range(self._ends[scope] - 1, -1, -1):
            if self._held(held[end : end + 1], alive, stamps)[0]:
                return int(held[end, 0])
        return None

    @staticmethod
    def _held(entries: np.ndarray, alive: np.ndarray, stamps: np.ndarray) -> np.ndarray:
        """Which entries (row, stamp) are live: the row is, and still holds the cell of that stamp."""
        rows = entries[:, 0]
        held: np.ndarray = alive[rows] & (stamps[rows] == entries[:, 1])
        return held


def by_code(codes: np.ndarray, values: np.ndarray | None = None) -> list[tuple[int, np.ndarray]]:
    """Each distinct code, ascending, with the `values` at its positions (default: the positions), in order."""
    codes = np.asarray(codes)
    if not len(codes):
        return []
    if (codes == codes[0]).all():  # the usual case: one scope
        return [(int(codes[0]), np.arange(len(codes)) if values is None else np.asarray(values))]
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, codes[order][1:] != codes[order][:-1]])
    picked = order if values is None else np.asarray(values)[order]
    bounds = [*starts.tolist(), len(codes)]
    return [(int(codes[order[a]]), picked[a:b]) for a, b in pairwise(bounds)]
