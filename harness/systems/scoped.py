"""Systems that refuse a search without a scope (the `scoped_only` capability, as mem0 refuses one without a
`user_id`): the harness and the conformance suite search them in the scope its unscoped documents are in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from harness.protocol import Document, MemorySystem, Query, SearchHit

UNSCOPED = ""
"""The scope of a document written without one (`Document.scope`'s default)."""


class InOneScope:
    """Wraps a `scoped_only` system under its own name: a query without a scope searches `UNSCOPED`."""

    def __init__(self, system: MemorySystem) -> None:
        self._system = system
        self.name, self.capabilities = system.name, system.capabilities

    def add(self, docs: Sequence[Document]) -> None:
        self._system.add(docs)

    def search(self, query: Query, *, k: int, **options: Any) -> list[SearchHit]:
        scoped = query if query.scope is not None else replace(query, scope=UNSCOPED)
        hits: list[SearchHit] = self._system.search(scoped, k=k, **options)
        return hits

    def close(self) -> None:
        self._system.close()

    def __getattr__(self, name: str) -> Any:
        """Everything else (upsert, get, delete, query parameters) is the wrapped system's."""
        return getattr(self._system, name)


def in_one_scope(system: MemorySystem) -> MemorySystem:
    """The system itself, or for a `scoped_only` one, the system searched in one scope where a query names none."""
    return InOneScope(system) if "scoped_only" in system.capabilities else system
