"""A deliberately slowed system: what `magbench run --slow-down SYSTEM=FACTOR` measures, so that a user
can check that `magbench compare` catches a regression before trusting it as a gate."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from harness.protocol import Document, MemorySystem, Query, SearchHit


class Slowed:
    """Wraps a system under its own name; each search takes `factor` times as long (busy waiting)."""

    def __init__(self, system: MemorySystem, factor: float) -> None:
        if factor < 1.0:
            raise ValueError(f"a slow-down factor must be at least 1, not {factor}")
        self._system, self.factor = system, factor
        self.name, self.capabilities = system.name, system.capabilities

    def add(self, docs: Sequence[Document]) -> None:
        self._system.add(docs)

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        started = time.perf_counter_ns()
        hits = self._system.search(query, k=k)
        until = started + (time.perf_counter_ns() - started) * self.factor
        while time.perf_counter_ns() < until:
            pass
        return hits

    def close(self) -> None:
        self._system.close()

    def __getattr__(self, name: str) -> Any:
        """Everything else (query parameters, groups, describe) is the wrapped system's."""
        return getattr(self._system, name)
