"""What a search returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hit:
    """One search result: higher `score` is better."""

    id: str
    text: str
    score: float
    group_id: int
    metadata: dict[str, Any] = field(default_factory=dict)
