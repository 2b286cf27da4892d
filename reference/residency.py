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
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from types import TracebackType

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
        return _Holding(self, self._state.reading, scopes, ids)

    def writing(self, scopes: Wanted = None, ids: Sequence[str] = ()) -> AbstractContextManager[None]:
        """The state's write lock, with these scopes and those of these ids in RAM (the least recently used others
        let go past the budget)."""
        if self._budget is None:
            return self._state.writing()
        return _Holding(self, self._state.writing, scopes, ids)

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

    def in_ram(self, names: list[str], empty: dict[str, int]) -> bool:
        """Whether these scopes are in RAM (or were found empty in the store, and not let go since), each then marked
        used now (under the engine's lock)."""
        if not all(name in self._order or empty.get(name) == self._generation[name] for name in names):
            return False
        with self._touching:
            for name in names:
                if name in self._order:
                    self._order.move_to_end(name)
        return True

    def names(self, scopes: Wanted, ids: Sequence[str]) -> list[str]:
        """The scopes a call needs: `scopes` (None: every scope held) and those of the stored ids not in RAM."""
        if scopes is not None and not ids:
            return list(scopes)
        row_of = self._state.table.row_of
        elsewhere = [cell_id for cell_id in ids if cell_id not in row_of]
        with self._touching:
            names = list(self._store.scopes()) + list(self._order) if scopes is None else list(scopes)
        names += self._store.scopes_of(elsewhere).values() if elsewhere else []
        return list(dict.fromkeys(names))

    def load(self, names: list[str]) -> dict[str, int]:
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


class _Holding:
    """`with residency.reading(...)` / `writing(...)`: the engine's lock held with the scopes a call needs in RAM;
    those missing are loaded first (and others let go), and if one is let go before the lock is taken again, loaded
    again. A plain object, as `state.reading()` is: a search takes it on every call."""

    __slots__ = ("_held", "_ids", "_lock", "_residency", "_scopes")

    def __init__(
        self, residency: Residency, lock: Callable[[], AbstractContextManager[None]], scopes: Wanted, ids: Sequence[str]
    ) -> None:
        self._residency, self._lock, self._scopes, self._ids = residency, lock, scopes, ids
        self._held: AbstractContextManager[None] | None = None

    def __enter__(self) -> None:
        residency, empty = self._residency, dict[str, int]()
        while True:
            names = residency.names(self._scopes, self._ids)
            held = self._lock()
            held.__enter__()
            try:
                if residency.in_ram(names, empty):
                    self._held = held
                    return
            except BaseException:
                held.__exit__(None, None, None)
                raise
            held.__exit__(None, None, None)
            empty = residency.load(names)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._held is not None
        held, self._held = self._held, None
        held.__exit__(kind, error, trace)
