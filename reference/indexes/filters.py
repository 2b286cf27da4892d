"""Search filters: a `where` over cell metadata, in Chroma's syntax, and the index that answers it.

`where` is {"key": value} (equality), {"key": {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}},
{"key": {"$in" | "$nin": [values]}}, or {"$and": [...]} / {"$or": [...]} of such filters; a filter of
several keys means all of them. Values are strings, numbers or booleans (a boolean is never equal to a
number); the ranges compare numbers. `$ne` and `$nin` match cells that have the key with another value.

`MetadataIndex` keeps, for every top-level key of the cells' metadata, the rows holding each value, per scope, and,
for numbers, a column of values by row, so a filter costs the rows it matches, not a scan of every cell's metadata,
and a filter within a scope the rows of that scope alone. Rows are the table's; the index is derived from the cells
and rebuilt on open.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..cells.table import with_room
from ..common.errors import InvalidInputError
from ..common.validation import INT_RANGE, MAX_DEPTH

COMPARISONS = ("$gt", "$gte", "$lt", "$lte")
OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin", *COMPARISONS})
Scalar = str | int | float | bool


def check_where(where: Any, *, depth: int = 0) -> dict[str, Any]:
    """A `where` filter, checked through and through (a typed error names what is wrong); `$and` and `$or`
    nest at most `MAX_DEPTH` levels."""
    if not isinstance(where, Mapping) or not where:
        raise InvalidInputError(f"where must be a non-empty mapping, got {where!r:.200}")
    for key, condition in where.items():
        if key in ("$and", "$or"):
            if not isinstance(condition, list) or not condition:
                raise InvalidInputError(f"{key} takes a non-empty list of filters")
            if depth >= MAX_DEPTH:
                raise InvalidInputError(f"where nests $and / $or deeper than {MAX_DEPTH} levels")
            for part in condition:
                check_where(part, depth=depth + 1)
        elif not isinstance(key, str) or key.startswith("$"):
            raise InvalidInputError(f"unknown operator or key {key!r} in where; keys are metadata names")
        elif isinstance(condition, Mapping):
            if len(condition) != 1 or next(iter(condition)) not in OPERATORS:
                raise InvalidInputError(f"{key}: one of {sorted(OPERATORS)} per condition, got {dict(condition)!r}")
            [(operator, value)] = condition.items()
            _check_value(key, operator, value)
        else:
            _check_scalar(key, condition)
    return dict(where)


def _check_value(key: str, operator: str, value: Any) -> None:
    if operator in ("$in", "$nin"):
        if not isinstance(value, list) or not value:
            raise InvalidInputError(f"{key}: {operator} takes a non-empty list of values")
        for item in value:
            _check_scalar(key, item)
    elif operator in COMPARISONS:
        if isinstance(value, bool) or not isinstance(value, int | float) or not _storable_number(value):
            raise InvalidInputError(f"{key}: {operator} compares finite numbers, got {value!r:.50}{_RANGE_NOTE}")
    else:
        _check_scalar(key, value)


def _check_scalar(key: str, value: Any) -> None:
    if not isinstance(value, Scalar) or (not isinstance(value, str | bool) and not _storable_number(value)):
        raise InvalidInputError(
            f"{key}: values are strings, finite numbers or booleans, got {value!r:.50}{_RANGE_NOTE}"
        )


_RANGE_NOTE = " (integers within the 64-bit range a store holds)"


def _storable_number(value: Any) -> bool:
    """A finite float, or an integer in the range a store holds (`validation.INT_RANGE`)."""
    if isinstance(value, int):
        return INT_RANGE[0] <= value <= INT_RANGE[1]
    return isinstance(value, float) and math.isfinite(value)


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
                    column[row] = value if _storable_number(value) else math.nan
                    self._numbers[key] = column
                    if not _storable_number(value):
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
        found: set[int] | None = None
        for key, condition in where.items():
            if key == "$and":
                part = set.intersection(*(self.matching(w, scope, rows) for w in condition))
            elif key == "$or":
                part = set.union(*(self.matching(w, scope, rows) for w in condition))
            else:
                [(operator, value)] = condition.items() if isinstance(condition, Mapping) else [("$eq", condition)]
                part = self._clause(key, operator, value, scope, rows)
            found = part if found is None else found & part
        return found or set()

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
