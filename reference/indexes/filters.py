"""Search filters: the index that answers a `where` over cell metadata (Chroma's syntax, checked by `where_syntax`).

`MetadataIndex` keeps, for every top-level key of the cells' metadata, the rows holding each value, per scope, and,
for numbers, a column of values by row:

- a filter costs the rows it matches, not a scan of every cell's metadata;
- a filter within a scope costs the rows of that scope alone.

Rows are the table's; the index is derived from the cells and rebuilt on open.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from where_syntax import Scalar, fold, storable_number

from ..cells.table import with_room


def _key(value: Scalar) -> tuple[bool, Scalar]:
    """A value as the index files it (True and 1 are equal in Python, not in a filter)."""
    return isinstance(value, bool), value


class MetadataIndex:
    """Top-level metadata values → scope → rows, and numbers by row, per key."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[tuple[bool, Scalar], dict[int, set[int]]]] = defaultdict(lambda: defaultdict(dict))
        self._numbers: dict[str, np.ndarray] = {}
        self._indexed = np.zeros(0, dtype=bool)
        """Which rows are indexed (a column, not a set: a million Python ints cost more than the vectors' codes)."""

    def add(self, rows: np.ndarray, metadatas: Sequence[Mapping[str, Any]], scopes: np.ndarray) -> list[int]:
        """Index these rows (of these scope codes); returns those holding a number beyond what a store holds (a store
        written before metadata was checked), which filters compare by equality only."""
        end = int(rows.max()) + 1 if len(rows) else 0
        beyond = []
        self._indexed = with_room(self._indexed, end)
        self._indexed[rows] = True
        for row, metadata, scope in zip(rows.tolist(), metadatas, scopes.tolist()):
            for key, value in metadata.items():
                if not isinstance(value, Scalar):
                    continue
                self._rows[key][_key(value)].setdefault(scope, set()).add(row)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    column = with_room(self._numbers.get(key, np.zeros(0)), end, fill=math.nan)
                    column[row] = value if storable_number(value) else math.nan
                    self._numbers[key] = column
                    if not storable_number(value):
                        beyond.append(row)
        return beyond

    def remove(self, rows: np.ndarray, metadatas: Sequence[Mapping[str, Any]], scopes: np.ndarray) -> None:
        self._indexed[rows] = False
        for row, metadata, scope in zip(rows.tolist(), metadatas, scopes.tolist()):
            for key, value in metadata.items():
                if isinstance(value, Scalar):
                    by_scope = self._rows[key][_key(value)]
                    by_scope[scope].discard(row)
                    if not by_scope[scope]:
                        del by_scope[scope]
                        if not by_scope:
                            del self._rows[key][_key(value)]
                    if key in self._numbers and row < len(self._numbers[key]):
                        self._numbers[key][row] = math.nan

    def rows(self) -> np.ndarray:
        """The indexed rows, ascending."""
        return np.flatnonzero(self._indexed)

    def matching(self, where: Mapping[str, Any], scope: int | None = None, rows: np.ndarray | None = None) -> set[int]:
        """The indexed rows (of `scope`, whose live rows are `rows`; None: of every scope) that match a checked
        filter."""
        return fold(
            where,
            lambda key, operator, value: self._clause(key, operator, value, scope, rows),
            lambda parts: set.intersection(*parts),
            lambda parts: set.union(*parts),
        )

    def _clause(self, key: str, operator: str, value: Any, scope: int | None, rows: np.ndarray | None) -> set[int]:
        postings = self._rows.get(key, {})

        def held(by_scope: dict[int, set[int]]) -> set[int]:
            return set().union(*by_scope.values()) if scope is None else by_scope.get(scope, set())

        if operator in ("$eq", "$in"):
            values = value if operator == "$in" else [value]
            return set().union(*(held(postings.get(_key(v), {})) for v in values))
        if operator in ("$ne", "$nin"):
            values = {_key(v) for v in (value if operator == "$nin" else [value])}
            return set().union(*(held(by_scope) for other, by_scope in postings.items() if other not in values))
        column = self._numbers.get(key, np.zeros(0))
        if scope is not None and rows is not None:  # the scope's rows alone
            rows = rows[rows < len(column)]
            column = column[rows]
        with np.errstate(invalid="ignore"):
            mask = {"$gt": column > value, "$gte": column >= value, "$lt": column < value, "$lte": column <= value}
        found = np.flatnonzero(mask[operator])
        return set((found if scope is None or rows is None else rows[found]).tolist())


@dataclass(frozen=True)
class Within:
    """Which live cells a search may return: those of one scope (`scope`, a code; None: every scope) and,
    when filtered, only `rows` (ascending; already of that scope). `EVERYTHING` restricts nothing."""

    scope: int | None = None
    rows: np.ndarray | None = None

    @property
    def restricts(self) -> bool:
        return self.scope is not None or self.rows is not None

    def allows(self, scope: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Which of `rows` may be returned (`scope`: the table's scope codes by row)."""
        keep: np.ndarray
        if self.rows is not None:
            keep = self._row_mask[np.minimum(rows, len(self._row_mask) - 1)]
        elif self.scope is not None:
            keep = scope[rows] == self.scope
        else:
            keep = np.ones(len(rows), dtype=bool)
        return keep

    @cached_property
    def _row_mask(self) -> np.ndarray:
        """`rows` as a mask by row number, with one False past the last for every later row: a text query's
        lexical candidates can be every row, which a mask checks at once where a binary search would not."""
        assert self.rows is not None
        mask = np.zeros(int(self.rows[-1]) + 2 if len(self.rows) else 1, dtype=bool)
        mask[self.rows] = True
        return mask


EVERYTHING = Within()
"""The search that restricts nothing (one shared value, not a frozen dataclass made per search)."""
