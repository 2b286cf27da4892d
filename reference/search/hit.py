"""What a search returns."""

from __future__ import annotations

from typing import Any, NamedTuple


class Hit(NamedTuple):
    """One search result: higher `score` is better (immutable; a named tuple, cheap to build per hit)."""

    id: str
    text: str
    score: float
    group_id: int
    metadata: dict[str, Any]
