"""A search call's two ends: its queries checked and made unit vectors (encoded in one batch) with their entities,
and the candidates it found made hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypedDict

import numpy as np

from where_syntax import check_where

from ..cells.entities import extract_entities
from ..cells.table import CellTable
from ..common.errors import InvalidInputError
from ..common.validation import (
    check_result_count,
    check_same_length,
    check_scope,
    check_text,
    check_timestamp,
    unit_rows,
    unit_vector,
)
from ..encoders import Encoder
from .hit import Hit
from .pipeline import Candidates

NO_ENTITIES: frozenset[str] = frozenset()


class SearchRestriction(TypedDict, total=False):
    """What a search may return (`CellularMemory.search_batch`'s keyword arguments of that name)."""

    scope: str | None
    where: Mapping[str, Any] | None
    since: float | datetime | None
    until: float | datetime | None


class Restriction(NamedTuple):
    """A search's `SearchRestriction`, checked."""

    scope: str | None
    where: dict[str, Any] | None
    since: float | None
    until: float | None


def check_batch(queries: Any, k: Any, mode: Any, vectors: Any) -> int:
    """Check a search batch's queries, `k`, `mode` and `vectors` (one per query, when given); returns `k`."""
    checked = check_result_count(k)
    if mode not in ("similarity", "memory"):
        raise InvalidInputError(f"mode must be 'similarity' or 'memory', got {mode!r}")
    if isinstance(queries, str) or not isinstance(queries, Sequence) or len(queries) == 0:
        raise InvalidInputError("queries must be a non-empty list of strings or vectors")
    check_same_length("vectors", vectors, len(queries))
    return checked


def checked_restriction(scope: Any, where: Any, since: Any, until: Any) -> Restriction:
    """A search's restriction checked: a scope name, a `where` filter (`filters.py`), timestamps."""
    return Restriction(
        None if scope is None else check_scope(scope),
        None if where is None else check_where(where, error=InvalidInputError),
        None if since is None else check_timestamp(since),
        None if until is None else check_timestamp(until),
    )


def encoded_queries(
    queries: Sequence[str | Any], vectors: Any, encoder: Encoder, dim: int
) -> tuple[list[np.ndarray], list[frozenset[str]], list[str | None]]:
    """Unit query vectors (given, else encoded in one batch), each text query's entities, and each query's text
    (None for a vector query)."""
    written = [q for q in queries if isinstance(q, str)]
    for position, text in enumerate(written):
        check_text(text, what=f"query {position}")
    texts: list[str | None] = [q if isinstance(q, str) else None for q in queries] if written else [None] * len(queries)
    if vectors is not None:
        units = [unit_vector(v, dim=dim, what="query vectors") for v in vectors]
    elif written:
        batch = iter(unit_rows(encoder.encode(written), dim=dim))
        units = [next(batch) if text is not None else unit_vector(q, dim=dim) for q, text in zip(queries, texts)]
    else:  # vectors only: no encoder
        units = [unit_vector(q, dim=dim) for q in queries]
    if not written:  # no entities either
        return units, [NO_ENTITIES] * len(queries), texts
    return units, [NO_ENTITIES if text is None else extract_entities(text) for text in texts], texts


def hits_of(table: CellTable, found: Sequence[Candidates]) -> list[list[Hit]]:
    """The hits of each query's candidates, made in one pass over them all (`hit_list`)."""
    if len(found) == 1:
        return [hit_list(table, found[0].rows, found[0].scores)]
    made = hit_list(table, np.concatenate([f.rows for f in found]), np.concatenate([f.scores for f in found]))
    ends = np.cumsum([len(f.rows) for f in found]).tolist()
    return [made[start:end] for start, end in zip([0, *ends], ends)]


def hit_list(table: CellTable, rows: np.ndarray, scores: np.ndarray) -> list[Hit]:
    """The hits of these rows with their scores: each by `tuple.__new__` (`Hit`'s generated constructor is a Python
    function), each with a copy of its cell's metadata by its own `copy` (for the shared read-only empty mapping,
    the cheapest way to a fresh dict)."""
    make = tuple.__new__
    ids, texts, metadata = table.ids, table.texts, table.metadata
    return [
        make(Hit, (ids[row], texts[row], score, group, metadata[row].copy()))
        for row, score, group in zip(rows.tolist(), scores.tolist(), table.group[rows].tolist())
    ]
