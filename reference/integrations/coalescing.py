"""Concurrent searches that ask for the same results shape answered by one `search_batch` call.

A server's clients search at once from worker threads. One search at a time spends most of its time in Python
around the compiled probe, which holds the interpreter's lock, so threads add little; a batch pays that once and
probes its queries together. `SearchCoalescer` lets the first caller of a restriction (k, mode, scope, filter) run
at once and queues the callers that arrive while it runs; when it ends, the first of them runs every one queued
meanwhile as one batch, and so on. Nobody waits for a timer, only for the batch before theirs. A batch holds one
restriction only, so no caller is ever answered from another scope.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import MagneticError
from ..hit import Hit
from ..memory import CellularMemory
from ..search import Mode

MAX_BATCH = 64
"""Queries answered by one `search_batch` call at most; callers past it wait for the next batch."""

Restriction = tuple[int, str, str | None, str]


@dataclass(eq=False)
class _Caller:
    """One search waiting for its hits, or handed a batch to run (`lead`)."""

    query: str | Any
    woken: threading.Event = field(default_factory=threading.Event)
    hits: list[Hit] | None = None
    error: BaseException | None = None
    lead: list[_Caller] | None = None

    def answer(self) -> list[Hit]:
        if self.error is not None:
            raise self.error
        assert self.hits is not None
        return self.hits


class SearchCoalescer:
    """`search` for many threads at once: callers with the same restriction share `search_batch` calls."""

    def __init__(self, memory: CellularMemory, *, max_batch: int = MAX_BATCH) -> None:
        self.memory, self.max_batch = memory, max_batch
        self._lock = threading.Lock()
        self._queued: dict[Restriction, list[_Caller]] = {}
        """The callers waiting behind each restriction's running batch (present while one runs)."""

    def waiting(self) -> int:
        """Callers queued behind a running batch, every restriction together."""
        with self._lock:
            return sum(len(queue) for queue in self._queued.values())

    def search(
        self, query: str | Any, k: int, *, mode: Mode = "similarity", scope: str | None = None, where: Any = None
    ) -> list[Hit]:
        """As `CellularMemory.search(query, k, mode=, scope=, where=)`, answered with others where they wait."""
        key = _restriction(k, mode, scope, where)
        if key is None:  # a filter JSON cannot write: the engine names what is wrong with it
            return self.memory.search(query, k, mode=mode, scope=scope, where=where)
        me = _Caller(query)
        with self._lock:
            queue = self._queued.get(key)
            if queue is None:
                self._queued[key] = []
            else:
                queue.append(me)
        if queue is not None:
            me.woken.wait()
            if me.lead is None:
                return me.answer()
        self._run(key, me.lead or [me], k, mode, scope, where)
        return me.answer()

    def _run(self, key: Restriction, batch: list[_Caller], k: int, mode: Mode, scope: str | None, where: Any) -> None:
        """Answer `batch`, then hand the callers queued meanwhile to the first of them (or end the queue)."""
        try:
            self._answer(batch, k, mode, scope, where)
        finally:
            with self._lock:
                queue = self._queued[key]
                if queue:
                    queue[0].lead, self._queued[key] = queue[: self.max_batch], queue[self.max_batch :]
                else:
                    del self._queued[key]
            for caller in batch:
                caller.woken.set()
            if queue:
                queue[0].woken.set()

    def _answer(self, batch: list[_Caller], k: int, mode: Mode, scope: str | None, where: Any) -> None:
        """Each caller's hits, or its own error: a batch the engine refuses is asked again one query at a time,
        so that one caller's bad query is that caller's error alone."""
        try:
            found = self.memory.search_batch([c.query for c in batch], k, mode=mode, scope=scope, where=where)
        except MagneticError as error:
            if len(batch) == 1:
                batch[0].error = error
                return
            for caller in batch:
                self._answer([caller], k, mode, scope, where)
            return
        except BaseException as error:
            for caller in batch:
                caller.error = error
            raise
        for caller, hits in zip(batch, found, strict=True):
            caller.hits = hits


def _restriction(k: int, mode: str, scope: str | None, where: Mapping[str, Any] | None) -> Restriction | None:
    """What a batch's callers share, with the filter as canonical JSON; None when the filter is not JSON."""
    try:
        return k, mode, scope, json.dumps(where, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
