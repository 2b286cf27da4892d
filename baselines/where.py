"""Chroma's `where` syntax (the harness's `Query.where`) folded into another library's filter.

A filter is {"key": value} (equality), {"key": {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}},
{"key": {"$in" | "$nin": [values]}}, or {"$and": [...]} / {"$or": [...]} of filters; several keys mean all of
them. Each peer turns the clauses into its own filter (Qdrant's `Filter`, LanceDB's SQL, a predicate), so the
filtering itself is the library's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"})


def fold(
    where: Mapping[str, Any],
    clause: Callable[[str, str, Any], T],
    all_of: Callable[[Sequence[T]], T],
    any_of: Callable[[Sequence[T]], T],
) -> T:
    """`clause(key, operator, value)` for each condition, combined by `all_of` and `any_of`; a malformed
    filter is a `ValueError` that names what is wrong."""
    if not isinstance(where, Mapping) or not where:
        raise ValueError(f"where must be a non-empty mapping, got {where!r:.200}")
    parts = []
    for key, condition in where.items():
        if key in ("$and", "$or"):
            if not isinstance(condition, list) or not condition:
                raise ValueError(f"{key} takes a non-empty list of filters, got {condition!r:.200}")
            folded = [fold(part, clause, all_of, any_of) for part in condition]
            parts.append(all_of(folded) if key == "$and" else any_of(folded))
        elif not isinstance(key, str) or key.startswith("$"):
            raise ValueError(f"unknown operator or key {key!r} in where; keys are metadata names")
        elif isinstance(condition, Mapping):
            if len(condition) != 1 or next(iter(condition)) not in OPERATORS:
                raise ValueError(f"{key}: one of {sorted(OPERATORS)} per condition, got {dict(condition)!r:.200}")
            [(operator, value)] = condition.items()
            if operator in ("$in", "$nin") and (not isinstance(value, list) or not value):
                raise ValueError(f"{key}: {operator} takes a non-empty list of values, got {value!r:.200}")
            _check_values(key, value if operator in ("$in", "$nin") else [value])
            parts.append(clause(key, operator, value))
        else:
            _check_values(key, [condition])
            parts.append(clause(key, "$eq", condition))
    return parts[0] if len(parts) == 1 else all_of(parts)


def _check_values(key: str, values: Sequence[Any]) -> None:
    for value in values:
        if not isinstance(value, str | bool) and not (is_number(value) and math.isfinite(value)):
            raise ValueError(f"{key}: values are strings, finite numbers or booleans, got {value!r:.50}")


def is_number(value: Any) -> bool:
    """An int or a float, not a bool (a filter never takes True for 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
