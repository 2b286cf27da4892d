"""Every constant of the engine's behaviour, in one validated, immutable place."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, NamedTuple

from .errors import InvalidInputError

GroupBackend = Literal["numpy", "chroma"]
Grouping = Literal["adaptive", "threshold"]
Probing = Literal["budget", "top_k"]
Fusion = Literal["rrf", "score"]
QUERY_TIME = {"query_time": True}
"""Field metadata of the settings `CellularMemory.set_search_options` may change on an open memory."""


def applies(*conditions: tuple[str, Any], query_time: bool = True) -> dict[str, Any]:
    """Field metadata of a setting that does something only when other settings have these values: a
    configuration that changes it otherwise is refused (a setting never silently does nothing)."""
    return {"applies": conditions, **(QUERY_TIME if query_time else {})}


BUDGET, TOP_K = ("probing", "budget"), ("probing", "top_k")
ADAPTIVE, LEXICAL, ENTITIES = ("grouping", "adaptive"), ("lexical", True), ("use_entities", True)


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


class Rule(NamedTuple):
    """What a setting's value must satisfy (`holds`), and the message's words when it does not (`says`)."""

    holds: Callable[[Any], bool]
    says: str


def at_least(bound: float) -> Rule:
    return Rule(lambda value: value >= bound, f"must be >= {bound:g}")


def above(bound: float) -> Rule:
    return Rule(lambda value: value > bound, f"must be > {bound:g}")


def one_of(*choices: str) -> Rule:
    return Rule(lambda value: value in choices, f"must be one of {', '.join(map(repr, choices))}")


SHARE = Rule(lambda value: 0 <= value <= 1, "must be in [0, 1]")
COSINE = Rule(lambda value: -1 < value < 1, "must be in (-1, 1)")
RULES: dict[str, Rule] = {
    "grouping": one_of("adaptive", "threshold"),
    "join_threshold": COSINE,
    "max_groups": at_least(1),
    "group_size": at_least(2),
    "group_size_per_sqrt_n": at_least(0),
    "split_factor": above(1),
    "fragment_divisor": above(1),
    "sleep_rounds": at_least(1),
    "sleep_settled": SHARE,
    "probing": one_of("budget", "top_k"),
    "probe_per_k": at_least(1),
    "probe_per_sqrt_n": at_least(0),
    "probe_margin": at_least(0),
    "target_recall": Rule(
        lambda value: value is None or (isinstance(value, int | float) and 0 < value <= 1), "must be None or in (0, 1]"
    ),
    "probe_cost_cells": at_least(0),
    "group_top_k": at_least(1),
    "fusion": one_of("rrf", "score"),
    "fusion_depth": at_least(1),
    "rrf_k": at_least(0),
    "lexical_weight": SHARE,
    "episode_weight": at_least(0),
    "neighbour_weight": at_least(0),
    "asking_penalty": at_least(0),
    "speaker_key": Rule(
        lambda value: value is None or (isinstance(value, str) and bool(value)), "must be None or a non-empty string"
    ),
    "speaker_weight": at_least(0),
    "episode_gap_s": at_least(0),
    "entity_boost": at_least(0),
    "merge_threshold": COSINE,
    "half_life_days": above(0),
    "access_saturation": at_least(1),
    "superseded_penalty": at_least(0),
    "kind_importance": Rule(lambda value: all(0 <= v <= 1 for v in value.values()), "values must be in [0, 1]"),
    "group_backend": one_of("numpy", "chroma"),
    "namespace": Rule(
        lambda name: 3 <= len(name) <= 40 and all(c.isalnum() or c in "_-" for c in name),
        "must be 3-40 characters of [a-zA-Z0-9_-]",
    ),
    "lease_seconds": at_least(0.5),
    "ingest_chunk": at_least(1),
    "concept_limit": at_least(3),
    "resident_cells": Rule(
        lambda value: value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1),
        "must be None or an int >= 1",
    ),
}
"""Each checked setting's rule, in the order of the fields (the others are free: booleans, weights, thresholds)."""


@dataclass(frozen=True)
class MemoryConfig:
    """Tunable behaviour of a `CellularMemory`, immutable and checked when made (`InvalidInputError` names every
    setting that is wrong). The defaults are the adaptive policy; `MemoryConfig.prototype()` is the seed design
    (fixed threshold, fixed `group_top_k`). The design behind each group of settings is in docs/engine.md.

    Grouping (how cells gather under centroids):

    - `grouping`: "adaptive" (a group's target size t(N) = max(`group_size`, `group_size_per_sqrt_n` · √N)
      grows with the memory) or "threshold" (only `join_threshold` and `max_groups` apply).
    - `join_threshold`: the cosine above which a cell joins its most similar group; an adaptive memory also
      joins once it has its target count of groups, N / t(N).
    - `max_groups`: a hard cap in both policies.
    - `split_factor`: a group above `split_factor` · t(N) cells is split in two (2-means), and splits stop at
      `split_factor` times the target count of groups.
    - `settle`: a write ends with k-means steps: over every cell of its scopes when it is a large share of them
      (`ingest.settled`), else one step over its cells and a window of stored ones (`ingest.refining`).

    Sleep (`consolidate`, `start_sleep`):

    - `fragment_divisor`, `merge_threshold`: groups below t(N) / `fragment_divisor` cells, or above this
      cosine to their nearest neighbour, merge into it.
    - `sleep_rounds`, `sleep_settled`: k-means steps over every cell, until at most that share of cells moves.
    - `concept_limit`: at most this many groups are linked into concepts (O(G²)); the rest join the concept of
      their nearest linked centroid.

    Probing (which groups a search reads):

    - `probing`: "budget" reads groups in centroid order until max(`probe_per_k` · k, `probe_per_sqrt_n` · √N)
      candidates (the budget); past the first `probe_per_k` · k, a group is read only if its centroid is within
      `probe_margin` of the k-th best score. "top_k" reads the best `group_top_k` groups, and a flat search
      fills in when fewer than k hits score above `min_score`.
    - `target_recall`: with the numpy backend, the margin widens as far as an estimate of the memory's own
      recall@10 requires (`calibration.py`); None keeps `probe_margin`.
    - `probe_cost_cells`: a memory of at most the budget plus this many cells is searched flat (exact).

    Text queries (hybrid, `lexical=True`; vector-only queries stay dense):

    - `fusion`, `fusion_depth`, `lexical_weight`, `rrf_k`: the dense and BM25 candidates (the best
      `fusion_depth` of each) fused by calibrated scores ("score": `lexical_weight` on BM25) or reciprocal rank
      ("rrf", constant `rrf_k`): `fusion.py`.
    - `episode_weight`, `neighbour_weight`, `episode_gap_s`: a candidate scored with its episode's best
      candidate and its neighbours in the episode (`episodes.py`); cells written without an episode continue
      the one before them when written at most `episode_gap_s` seconds later.
    - `asking_penalty`, `speaker_key`, `speaker_weight`: scored by form (`turns.py`): less for a question, more
      when the query names the speaker held in metadata under `speaker_key`.
    - `use_entities`, `entity_boost`: the boost of cells that share an entity with the query.

    Memory-mode scores (`search(mode="memory")`):

    - `weights` (`ScoringWeights`), `half_life_days` (recency), `access_saturation` (access counts),
      `score_threshold` (weaker hits dropped), `superseded_penalty` (cells a newer one contradicts),
      `kind_importance` (the default importance of each kind).

    Storage and resources:

    - `group_backend`: "numpy" (the vectors held once, probed by int8 codes: `index.NumpyGroupIndex`) or "chroma".
    - `namespace`: the store's collection (3-40 characters of [a-zA-Z0-9_-]); `lease_seconds`: how long a
      claim on it lasts without renewal.
    - `ingest_chunk`: cells encoded and grouped at a time in a write.
    - `resident_cells`: see below.

    A setting that does something only under others (marked `applies` on its field) is refused when changed
    from its default where it would do nothing; the message names what it applies to. The settings marked
    query-time may change on an open memory (`CellularMemory.set_search_options`).

    Example:
        ```python
        config = MemoryConfig(target_recall=0.97, resident_cells=200_000)
        memory = CellularMemory(path="memory", config=config)
        ```
    """

    grouping: Grouping = "adaptive"
    join_threshold: float = 0.6
    max_groups: int = 65_536
    group_size: int = field(default=32, metadata=applies(ADAPTIVE, query_time=False))
    group_size_per_sqrt_n: float = field(default=0.5, metadata=applies(ADAPTIVE, query_time=False))
    split_factor: float = field(default=2.0, metadata=applies(ADAPTIVE, query_time=False))
    fragment_divisor: float = field(default=4.0, metadata=applies(ADAPTIVE, query_time=False))
    sleep_rounds: int = field(default=10, metadata=applies(ADAPTIVE, query_time=False))
    sleep_settled: float = field(default=0.005, metadata=applies(ADAPTIVE, query_time=False))
    probing: Probing = field(default="budget", metadata=QUERY_TIME)
    probe_per_k: int = field(default=60, metadata=applies(BUDGET))
    probe_per_sqrt_n: float = field(default=32.0, metadata=applies(BUDGET))
    probe_margin: float = field(default=0.2, metadata=applies(BUDGET))
    target_recall: float | None = field(default=0.95, metadata=applies(BUDGET, ("group_backend", "numpy")))
    probe_cost_cells: int = field(default=0, metadata=applies(BUDGET))
    group_top_k: int = field(default=3, metadata=applies(TOP_K))
    min_score: float = field(default=0.0, metadata=applies(TOP_K))
    lexical: bool = field(default=True, metadata=QUERY_TIME)
    fusion: Fusion = field(default="score", metadata=applies(LEXICAL))
    fusion_depth: int = field(default=100, metadata=applies(LEXICAL))
    rrf_k: int = field(default=5, metadata=applies(LEXICAL, ("fusion", "rrf")))
    lexical_weight: float = field(default=0.5, metadata=applies(LEXICAL, ("fusion", "score")))
    episode_weight: float = field(default=0.75, metadata=applies(LEXICAL))
    neighbour_weight: float = field(default=0.5, metadata=applies(LEXICAL))
    asking_penalty: float = field(default=0.15, metadata=applies(LEXICAL))
    speaker_key: str | None = field(default="speaker", metadata=applies(LEXICAL, query_time=False))
    speaker_weight: float = field(default=0.1, metadata=applies(LEXICAL))
    episode_gap_s: float = 1800.0
    entity_boost: float = field(default=1.0, metadata=applies(ENTITIES))
    use_entities: bool = field(default=True, metadata=QUERY_TIME)
    merge_threshold: float = 0.85
    settle: bool = field(default=True, metadata=applies(ADAPTIVE, query_time=False))
    weights: ScoringWeights = field(default_factory=ScoringWeights, metadata=QUERY_TIME)
    half_life_days: float = field(default=7.0, metadata=QUERY_TIME)
    access_saturation: int = field(default=10, metadata=QUERY_TIME)
    score_threshold: float = field(default=0.0, metadata=QUERY_TIME)
    superseded_penalty: float = field(default=0.2, metadata=QUERY_TIME)
    kind_importance: dict[str, float] = field(default_factory=lambda: {"episodic": 0.3, "fact": 0.9})
    group_backend: GroupBackend = "numpy"
    namespace: str = "mem"
    lease_seconds: float = 5.0
    ingest_chunk: int = 2048
    concept_limit: int = 2048
    resident_cells: int | None = None
    """With an embedded store, keep at most about this many cells in RAM: the scopes in use stay, the least
    recently used go, and a scope out of RAM loads from the store when a call needs it (`residency.py`). None:
    every cell in RAM."""

    def __post_init__(self) -> None:
        failed = [f"{name} {rule.says}" for name, rule in RULES.items() if not rule.holds(getattr(self, name))]
        failed += self._settings_that_do_nothing()
        if failed:
            raise InvalidInputError("invalid MemoryConfig: " + "; ".join(failed))

    def _settings_that_do_nothing(self) -> list[str]:
        """A message for each setting changed from its default where it does nothing."""
        found = []
        for setting in fields(self):
            unmet = [(key, value) for key, value in setting.metadata.get("applies", ()) if getattr(self, key) != value]
            if unmet and getattr(self, setting.name) != setting.default:
                wanted = " and ".join(f"{key}={value!r}" for key, value in setting.metadata["applies"])
                found.append(
                    f"{setting.name} applies only with {wanted}, and this configuration has "
                    + ", ".join(f"{key}={getattr(self, key)!r}" for key, _ in unmet)
                )
        return found

    @classmethod
    def prototype(cls, **changes: Any) -> MemoryConfig:
        """The seed design: join above cosine 0.6, at most 4,096 groups, search the best 3 groups, no BM25."""
        return cls(**{"grouping": "threshold", "max_groups": 4096, "probing": "top_k", "lexical": False, **changes})

    @property
    def adaptive(self) -> bool:
        return self.grouping == "adaptive"

    def target_group_size(self, cells: int) -> int:
        """t(N): the size a group aims at when the memory holds `cells` cells."""
        return max(self.group_size, round(self.group_size_per_sqrt_n * math.sqrt(cells)))

    def target_groups(self, cells: int) -> int:
        """N / t(N): the groups a memory of `cells` cells aims at; founding stops here."""
        if not self.adaptive:
            return self.max_groups
        return min(self.max_groups, max(1, math.ceil(cells / self.target_group_size(cells))))

    def group_bound(self, cells: int) -> int:
        """How many groups ingest and sleep may make: splits stop at `split_factor` times the target,
        so the mean group size stays above t(N) / `split_factor`; `max_groups` caps both."""
        if not self.adaptive:
            return self.max_groups
        return min(self.max_groups, math.ceil(self.split_factor * self.target_groups(cells)))

    def group_capacity(self, cells: int) -> int:
        """A group larger than this is split (adaptive grouping only)."""
        return math.ceil(self.split_factor * self.target_group_size(cells)) if self.adaptive else 2**62

    def probe_candidates(self, k: int, cells: int, reach: int = 1) -> int:
        """The candidate budget that budget probing reads before it stops (`reach` times it: `calibration.py`)."""
        return reach * max(self.probe_per_k * k, math.ceil(self.probe_per_sqrt_n * math.sqrt(cells)))

    def flat_is_cheaper(self, k: int, cells: int, reach: int = 1) -> bool:
        """Budget probing: whether scanning every cell costs no more than probing would."""
        return cells <= self.probe_candidates(k, cells, reach) + self.probe_cost_cells

    def importance_of(self, kind: str) -> float:
        """Default importance of a memory kind; unknown kinds are an error."""
        try:
            return self.kind_importance[kind]
        except (KeyError, TypeError):
            known = ", ".join(sorted(self.kind_importance))
            raise InvalidInputError(f"unknown kind {kind!r}; use one of: {known}") from None


SEARCH_OPTIONS = frozenset(f.name for f in fields(MemoryConfig) if f.metadata.get("query_time"))
"""The names of the query-time settings."""
