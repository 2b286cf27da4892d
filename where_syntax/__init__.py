"""Chroma's `where` syntax over metadata: the one grammar that the engine and every baseline check a filter by.

A filter is one of:

- {"key": value}: equality;
- {"key": {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}};
- {"key": {"$in" | "$nin": [values]}};
- {"$and": [filters]} or {"$or": [filters]}, nested at most `MAX_NESTING` levels.

Several keys in one mapping mean all of them. Values are strings, finite numbers (integers within the 64-bit range
a store holds) or booleans; a boolean is never equal to a number, and the ranges compare numbers.

Standard library only, and apart from the engine (`reference`) and the harness: both check filters here, and
neither imports the other's side (the baselines measured against the engine never import it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
Scalar = str | int | float | bool
COMPARISONS = ("$gt", "$gte", "$lt", "$lte")
OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin", *COMPARISONS})
MAX_NESTING = 32
"""How deep `$and` / `$or` may nest: a deeper filter is refused before any walk over it can exhaust the stack."""
INT64_RANGE = (-(2**63), 2**63 - 1)
"""The integers a store holds (Chroma's and SQLite's 64-bit integers)."""
_RANGE_NOTE = " (integers within the 64-bit range a store holds)"


def check_where(where: Any, *, error: type[ValueError] = ValueError) -> dict[str, Any]:
    """`where`, checked through and through, as a dict.

    Raises `error` (a `ValueError` or a subclass, e.g. the engine's `InvalidInputError`) naming what is wrong.
    """
    _check(where, 0, error)
    return dict(where)


def fold(
    where: Mapping[str, Any],
    clause: Callable[[str, str, Any], T],
    all_of: Callable[[Sequence[T]], T],
    any_of: Callable[[Sequence[T]], T],
) -> T:
    """A checked filter (`check_where`) folded into another form: `clause(key, operator, value)` for each
    condition (equality as "$eq"), combined by `all_of` (`$and`, several keys) and `any_of` (`$or`)."""
    parts = []
    for key, condition in where.items():
        if key in ("$and", "$or"):
            folded = [fold(part, clause, all_of, any_of) for part in condition]
            parts.append(all_of(folded) if key == "$and" else any_of(folded))
        elif isinstance(condition, Mapping):
            [(operator, value)] = condition.items()
            parts.append(clause(key, operator, value))
        else:
            parts.append(clause(key, "$eq", condition))
    return parts[0] if len(parts) == 1 else all_of(parts)


def is_number(value: Any) -> bool:
    """An int or a float, not a bool (a filter never takes True for 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def storable_number(value: Any) -> bool:
    """A finite float, or an integer in `INT64_RANGE`."""
    if isinstance(value, int):
        return INT64_RANGE[0] <= value <= INT64_RANGE[1]
    return isinstance(value, float) and math.isfinite(value)


def _check(where: Any, depth: int, error: type[ValueError]) -> None:
    if not isinstance(where, Mapping) or not where:
        raise error(f"where must be a non-empty mapping, got {where!r:.200}")
    for key, condition in where.items():
        if key in ("$and", "$or"):
            if not isinstance(condition, list) or not condition:
                raise error(f"{key} takes a non-empty list of filters, got {condition!r:.200}")
            if depth >= MAX_NESTING:
                raise error(f"where nests $and / $or deeper than {MAX_NESTING} levels")
            for part in condition:
                _check(part, depth + 1, error)
        elif not isinstance(key, str) or key.startswith("$"):
            raise error(f"unknown operator or key {key!r:.100} in where; keys are metadata names")
        elif isinstance(condition, Mapping):
            if len(condition) != 1 or next(iter(condition)) not in OPERATORS:
                raise error(f"{key}: one of {sorted(OPERATORS)} per condition, got {dict(condition)!r:.200}")
            [(operator, value)] = condition.items()
            _check_operand(key, operator, value, error)
        else:
            _check_scalar(key, condition, error)


def _check_operand(key: str, operator: str, value: Any, error: type[ValueError]) -> None:
    if operator in ("$in", "$nin"):
        if not isinstance(value, list) or not value:
            raise error(f"{key}: {operator} takes a non-empty list of values, got {value!r:.200}")
        for item in value:
            _check_scalar(key, item, error)
    elif operator in COMPARISONS:
        if not is_number(value) or not storable_number(value):
            raise error(f"{key}: {operator} compares finite numbers, got {value!r:.50}{_RANGE_NOTE}")
    else:
        _check_scalar(key, value, error)


def _check_scalar(key: str, value: Any, error: type[ValueError]) -> None:
    if not isinstance(value, str | bool) and not (is_number(value) and storable_number(value)):
        raise error(f"{key}: values are strings, finite numbers or booleans, got {value!r:.50}{_RANGE_NOTE}")
