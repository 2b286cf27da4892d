"""Every constant of the engine's behaviour, in one validated, immutable place."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .errors import InvalidInputError

GroupBackend = Literal["numpy", "chroma"]


@dataclass(frozen=True)
class ScoringWeights:
    """Weights of the `memory`-mode score; they must sum to 1."""

    similarity: float = 0.6
    importance: float = 0.2
    recency: float = 0.15
    access: float = 0.05

    def __post_init__(self) -> None:
        total = self.similarity + self.importance + self.recency + self.access
        if min(self.similarity, self.importance, self.recency, self.access) < 0 or abs(total - 1) > 1e-9:
            raise InvalidInputError(f"scoring weights must be >= 0 and sum to 1, got {total:.6f}")


@dataclass(frozen=True)
class MemoryConfig:
    """Tunable behaviour of a `CellularMemory` (defaults are the specification's).

    Group bound policy: at most `max_groups` groups exist; once that many exist, a cell that
    would found a new group joins its most similar group instead (G never exceeds the bound).
    """

    join_threshold: float = 0.6
    max_groups: int = 4096
    group_top_k: int = 3
    min_score: float = 0.0
    entity_boost: float = 1.0
    use_entities: bool = True
    merge_threshold: float = 0.85
    weights: ScoringWeights = field(default_factory=ScoringWeights)
    half_life_days: float = 7.0
    access_saturation: int = 10
    score_threshold: float = 0.0
    superseded_penalty: float = 0.2
    kind_importance: dict[str, float] = field(default_factory=lambda: {"episodic": 0.3, "fact": 0.9})
    search_threads: int = 4
    parallel_min_cells: int = 8192
    group_backend: GroupBackend = "numpy"
    namespace: str = "mem"
    ingest_chunk: int = 2048

    def __post_init__(self) -> None:
        checks = {
            "join_threshold must be in (-1, 1)": -1 < self.join_threshold < 1,
            "merge_threshold must be in (-1, 1)": -1 < self.merge_threshold < 1,
            "max_groups must be >= 1": self.max_groups >= 1,
            "group_top_k must be >= 1": self.group_top_k >= 1,
            "entity_boost must be >= 0": self.entity_boost >= 0,
            "superseded_penalty must be >= 0": self.superseded_penalty >= 0,
            "half_life_days must be > 0": self.half_life_days > 0,
            "access_saturation must be >= 1": self.access_saturation >= 1,
            "search_threads must be >= 1": self.search_threads >= 1,
            "parallel_min_cells must be >= 0": self.parallel_min_cells >= 0,
            "ingest_chunk must be >= 1": self.ingest_chunk >= 1,
            "group_backend must be 'numpy' or 'chroma'": self.group_backend in ("numpy", "chroma"),
            "namespace must be 3-40 characters of [a-zA-Z0-9_-]": _valid_namespace(self.namespace),
            "kind_importance values must be in [0, 1]": all(0 <= v <= 1 for v in self.kind_importance.values()),
        }
        failed = [message for message, ok in checks.items() if not ok]
        if failed:
            raise InvalidInputError("invalid MemoryConfig: " + "; ".join(failed))

    def importance_of(self, kind: str) -> float:
        """Default importance of a memory kind; unknown kinds are an error."""
        try:
            return self.kind_importance[kind]
        except (KeyError, TypeError):
            known = ", ".join(sorted(self.kind_importance))
            raise InvalidInputError(f"unknown kind {kind!r}; use one of: {known}") from None


def _valid_namespace(name: str) -> bool:
    return 3 <= len(name) <= 40 and all(c.isalnum() or c in "_-" for c in name)
