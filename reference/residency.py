"""Scopes beyond RAM: with `MemoryConfig(resident_cells=N)` a memory keeps the scopes in use in RAM, lets the
least recently used go past N cells, and loads a scope from its store before a call that needs it.

A call names the scopes it needs (a search's scope, a write's scopes, the scopes of the ids it names; None: every
scope) and takes the engine's lock through `reading` or `writing`, which first bring those scopes into RAM. Loading
follows the engine's rule for every change: the scope's cells are read from the store outside the lock (searches
in other scopes go on) and put in under the write lock only if the scope is still out of RAM and was not let go
since they were read (its generation), else read again. A scope out of RAM never changes in the store (a write
loads its scope first), so cells read while it stayed out are current. What a scope derives from its cells
(groups as stored, lexical postings, entities, episodes, filters) is rebuilt from them as it loads
(`EngineState.commit_load`). Letting a scope go writes what the store has not been told of its cells yet (access
counts, moves) and hands their rows back to be filled again (`EngineState.commit_evict`); the estimate of its recall
stays, so a scope loaded again is not estimated again. The scopes a call needs are never let go by it, so one call
may hold more than N cells for a moment (a search of every scope holds them all).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from .cells import CellBatch
from .state import EngineState
from .store import CellStore

Wanted = Sequence[str] | None
"""The scopes a call needs (None: every scope)."""


class Residency:
    """Which scopes are in RAM, least recently used first, and how many times each was let go."""

    def __init__(
        self, state: EngineState, store: CellStore, budget: int | None, loaded: Callable[[], None] = lambda: None
    ) -> None:
        self._state, self._store, self._budget, self._loaded = state, store, budget, loaded
        """`loaded` runs under the write lock after scopes load (the recall estimates they make due)."""
        self._order: OrderedDict[str, None] = OrderedDict()
        self._generation: defaultdict[str, int] = defaultdict(int)
        self._touching = threading.Lock()
        """Searches mark their scopes used at once, under the read lock."""
        self.loads = 0
        """Scopes loaded from the store so far."""

    @property
    def bounded(self) -> bool:
        """Whether only some scopes are kept in RAM."""
        return self._budget is not None

    def reading(self, scopes: Wanted = None, ids: Sequence[str] = ()) -> AbstractContextManager[None]:
        """The state's read lock, with these scopes (None: every scope) and those of these ids in RAM."""
        if self._budget is None:
            return self._state.reading()
        return self._holding(self._state.reading, scopes, ids)

    def writing(self, scopes: Wanted = None, ids: Sequence[str] = ()) -> AbstractContextManager[None]:
        """The state's write lock, with these scopes and those of these ids in RAM (the least recently used others
        let go past the budget)."""
        if self._budget is None:
            return self._state.writing()
        return self._holding(self._state.writing, scopes, ids)

    def count(self, scope: str | None) -> int:
        """Cells held (of `scope`: None, every scope), in RAM or not."""
        state = self._state
        with state.reading():
            if self._budget is None or (scope is not None and scope in self._order):
                if scope is None:
                    return len(state.table)
                code = state.table.known_scope(scope)
                return 0 if code is None else state.scopes.count(code)
        return self._store.count(scope)

    def holds(self, cell_id: str) -> bool:
        """Whether a cell of this id is held, in RAM or not."""
        return cell_id in self._state.table.row_of or (
            self._budget is not None and bool(self._store.scopes_of([cell_id]))
        )

    @contextmanager
    def _holding(
        self, lock: Callable[[], AbstractContextManager[None]], scopes: Wanted, ids: Sequence[str]
    ) -> Iterator[None]:
        """`lock` held with the scopes wanted in RAM: those missing are loaded (and others let go) first, and if one
        is let go before `lock` is taken, loaded again."""
        while True:
            names = self._names(scopes, ids)
            empty = self._load(names)
            with lock():
                if all(name in self._order or empty.get(name) == self._generation[name] for name in names):
                    with self._touching:
                        for name in names:
                            if name in self._order:
                                self._order.move_to_end(name)
                    yield
                    return

    def _names(self, scopes: Wanted, ids: Sequence[str]) -> list[str]:
        """The scopes a call needs: `scopes` (None: every scope held) and those of the stored ids not in RAM."""
        row_of = self._state.table.row_of
        elsewhere = [cell_id for cell_id in ids if cell_id not in row_of]
        with self._touching:
            names = list(self._store.scopes()) + list(self._order) if scopes is None else list(scopes)
        names += self._store.scopes_of(elsewhere).values() if elsewhere else []
        return list(dict.fromkeys(names))

    def _load(self, names: list[str]) -> dict[str, int]:
        """Bring these scopes into RAM, letting the least recently used others go past the budget; returns those
        the store holds nothing of, with their generations when found so (they are in RAM as they are: empty)."""
        with self._state.reading():
            missing = {name: self._generation[name] for name in names if name not in self._order}
        if not missing:
            return {}
        found: dict[str, CellBatch | None] = {name: self._store.load_scope(name) for name in missing}
        with self._state.writing():
            for name, batch in found.items():
                if name in self._order or self._generation[name] != missing[name]:
                    continue  # loaded by another call, or let go and perhaps written since: read again if needed
                if batch is not None:
                    self._state.commit_load(batch)
                    self.loads += 1
                    with self._touching:
                        self._order[name] = None
            self._loaded()
            self._evict(keep=set(names))
        return {name: missing[name] for name, batch in found.items() if batch is None}

    def _evict(self, keep: set[str]) -> None:
        """Let the least recently used scopes (but those in `keep`) go until the budget holds (under the write
        lock)."""
        state, budget = self._state, self._budget
        assert budget is not None
        for name in [name for name in self._order if name not in keep]:
            if len(state.table) <= budget:
                return
            code = state.table.known_scope(name)
            rows = state.scope_rows(code) if code is not None else None
            if rows is not None and len(rows):
                state.commit_evict(rows)
            with self._touching:
                del self._order[name]
            self._generation[name] += 1

    def written(self, scopes: Sequence[str]) -> None:
        """Note scopes a write just gave cells to (under the write lock): they are in RAM."""
        if self._budget is None:
            return
        with self._touching:
            for name in scopes:
                self._order[name] = None
                self._order.move_to_end(name)
        self._evict(keep=set(scopes))
