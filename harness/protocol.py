"""The adapter protocol: what a memory system must offer to be measured (the conformance contract).

A system is built once (`add`), queried many times (`search`), then closed. It declares what it
can do in `capabilities` instead of being probed with `hasattr`:

- ``"text"``: it can work from document and query texts (it embeds them itself, or uses them);
- ``"vectors"``: it accepts the harness's vectors (every system that does gets the same ones);
- ``"persist"``, ``"consolidate"``, ``"memory_scoring"``: engine features the conformance suite tests;
- ``"delete"``: it removes documents (`delete(doc_ids)`), so churn can be tested;
- ``"tunable"``: it has query-time parameters (`query_params`, `set_query_params`) for sweeps;
- ``"groups"``: it groups documents (`group_labels(doc_ids)`, `describe()` with a "groups" count);
- ``"scopes"``: it keeps each `Document.scope` apart, and a `Query.scope` searches one scope only;
- ``"filters"``: a `Query.where` (Chroma's `where` syntax over metadata) restricts a search;
- ``"update"``: `upsert(docs)` writes documents or replaces the ones stored under their ids;
- ``"get"``: `get(doc_ids)` returns the stored documents, in the order asked, skipping unknown ids;
- ``"threads"``: searches and writes may come from several threads at once (others are guarded by a lock when
  the harness searches them from several threads);
- ``"own_ids"``: the system makes its own ids; its adapter keeps the caller's id with each document and answers in
  the caller's ids (hits, `get`, `delete`), its bookkeeping never shown (MB-ID-1);
- ``"scoped_only"``: the system refuses a search without a scope; a query that names none is sent to the scope of
  unscoped documents (`Document.scope` ""), which its adapter maps to one of the system's own (e.g. a user id).

The checks every adapter shares live here too: `check_k` (the number of hits), `vector_of` (an item's vector) and
`check_where` / `fold` (a `Query.where`, by the one grammar of `where_syntax` that the engine also uses).

Example, an adapter over a matrix of vectors:

    class Flat:
        name, capabilities = "flat", frozenset({"vectors"})

        def add(self, docs):
            self.ids, self.matrix = [d.id for d in docs], np.stack([vector_of(d) for d in docs])

        def search(self, query, *, k):
            scores = self.matrix @ vector_of(query)
            return [SearchHit(self.ids[i], float(scores[i])) for i in np.argsort(-scores)[: check_k(k)]]

        def close(self):
            pass
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np

from where_syntax import check_where as check_where
from where_syntax import fold as fold
from where_syntax import is_number as is_number

CAPABILITIES = frozenset(
    {"text", "vectors", "persist", "consolidate", "memory_scoring", "tunable", "groups", "delete"}
    | {"scopes", "filters", "update", "get", "threads", "own_ids", "scoped_only"}
)


@dataclass(frozen=True)
class Document:
    """One document of an evaluation set, as every system is given it."""

    id: str
    """The caller's id, unique in a run; hits, `get` and `delete` answer in it."""
    text: str
    vector: np.ndarray | None = None
    """Its embedding by the run's encoder (None in a run without vectors)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Strings, numbers and booleans that a `Query.where` filters on."""
    scope: str = ""
    """Whose document it is (systems with the "scopes" capability keep scopes apart)."""


@dataclass(frozen=True)
class Query:
    """One search of an evaluation set."""

    id: str
    text: str
    vector: np.ndarray | None = None
    """Its embedding by the run's encoder (None in a run without vectors)."""
    scope: str | None = None
    """Search this scope only (None: every scope); for systems with the "scopes" capability."""
    where: Mapping[str, Any] | None = None
    """A metadata filter in Chroma's `where` syntax (`check_where`); for systems with the "filters" capability."""


class SearchHit(NamedTuple):
    """One hit of a search. A named tuple: every system makes ten per query inside its timed search, and a
    named tuple is cheaper to make than a frozen dataclass."""

    doc_id: str
    score: float


def check_k(k: Any) -> int:
    """The number of hits asked for, as an int.

    Raises:
        ValueError: `k` is not a positive integer (MB-ERR-1).
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def vector_of(item: Document | Query) -> np.ndarray:
    """The item's vector, for systems that take vectors.

    Raises:
        ValueError: the item has none (the evaluation set was not encoded); never a zero vector instead.
    """
    if item.vector is None:
        raise ValueError(f"{type(item).__name__.lower()} {item.id} has no vector; encode the evaluation set first")
    return item.vector


@runtime_checkable
class MemorySystem(Protocol):
    """What every system offers: `name` (as reports show it), `capabilities` (a subset of `CAPABILITIES`),
    `add(docs)` (store documents; an id already added is the adapter's to refuse or replace, as "update" says),
    `search(query, k=k)` (at most `k` hits, best first, higher scores better; a bad `k` or `where` is a
    `ValueError`) and `close()` (release what it holds)."""

    name: str
    capabilities: frozenset[str]

    def add(self, docs: Sequence[Document]) -> None: ...

    def search(self, query: Query, *, k: int) -> list[SearchHit]: ...

    def close(self) -> None: ...


class TunableSystem(MemorySystem, Protocol):
    """A system with query-time parameters; each maps to the values a sweep should try.
    `set_query_params()` with no arguments restores the defaults (the harness interleaves settings)."""

    query_params: Mapping[str, Sequence[Any]]

    def set_query_params(self, **params: Any) -> None: ...


class DeletingSystem(MemorySystem, Protocol):
    """A system that removes documents by id."""

    def delete(self, doc_ids: Sequence[str]) -> None: ...


class ScoringSystem(MemorySystem, Protocol):
    """A system that also ranks by memory-mode scores (the "memory_scoring" capability)."""

    def search(
        self, query: Query, *, k: int, mode: Literal["similarity", "memory"] = "similarity"
    ) -> list[SearchHit]: ...


class ConsolidatingSystem(MemorySystem, Protocol):
    """A system that runs a sleep pass on demand (the "consolidate" capability)."""

    def consolidate(self) -> None: ...


class UpdatingSystem(MemorySystem, Protocol):
    """A system that writes documents over the ones stored under their ids."""

    def upsert(self, docs: Sequence[Document]) -> None: ...


class ReadingSystem(MemorySystem, Protocol):
    """A system that returns stored documents by id."""

    def get(self, doc_ids: Sequence[str]) -> list[Document]: ...


class GroupingSystem(MemorySystem, Protocol):
    """A system that puts documents into groups (for ARI/NMI and group statistics)."""

    def group_labels(self, doc_ids: Sequence[str]) -> list[int]: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class SystemContext:
    """What a factory gets to build a system."""

    dim: int | None
    """The vectors' dimension (None in a run without vectors)."""
    workdir: Path
    """A private working directory for the system's files."""
    encoder: str = "mock"
    """The encoder the run uses (systems that embed text themselves may ask)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Further settings for the factory (a system's own options arrive as its keyword arguments)."""

    def vector_dim(self) -> int:
        """The dimension, for systems that take vectors.

        Raises:
            ValueError: the run has no vectors.
        """
        if self.dim is None:
            raise ValueError("this system takes vectors, and the evaluation set has none; encode it first")
        return self.dim
