"""The one way into an engine's state: `Residency.reading(scopes)` and `writing(scopes)`, and, with
`MemoryConfig(resident_cells=N)`, scopes beyond RAM: the scopes in use stay in RAM, the least recently used go past
N cells, and a scope is loaded from its store before a call that needs it.

Every public call names the scopes it needs (a search's scope, a write's scopes, the scopes of the ids it names;
None: every scope) and holds the engine's lock through `reading` or `writing`. `writing` runs the post-write hook
(`settle`: the recall estimates the write made due) before it lets the lock go, so no write path can skip it.

With a budget:

- **Pinning.** The scopes a call needs are worked out under the lock (an id's scope from the table, or, for an id
  out of RAM, from the store, which under the lock agrees with RAM) and pinned: no call lets a pinned scope go,
  so once loaded it stays until the call that pinned it returns.
- **Rounds.** A call whose scopes are not all in RAM lets the lock go, loads them and looks again; each round pins
  what it found, so the rounds end whatever the budget (a call over budget holds its scopes over budget for its
  duration; a search of every scope holds them all).
- **Loading** follows the engine's rule for every change: a scope's cells are read from the store outside the
  lock (searches in other scopes go on) and put in under the write lock only if the scope is still out of RAM and
  was not let go since they were read (its generation), else read again. A scope out of RAM never changes in the
  store (a write loads its scope first), so cells read while it stayed out are current. What a scope derives from
  its cells (groups as stored, lexical postings, entities, episodes, filters) is rebuilt as it loads
  (`EngineState.commit_load`).
- **Letting go** writes what the store has not been told of its cells yet (access counts, moves) and hands their
  rows back to be filled again (`EngineState.commit_evict`); the estimate of its recall stays, so a scope loaded
  again is not estimated again. Scopes are let go when a load or a write returns, never while a call pins them.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType

from ..cells.table import CellBatch
from ..store import CellStore
from .engine import EngineState

Wanted = Sequence[str] | None
"""The scopes a call needs (None: every scope)."""


class Residency:
    """Which scopes are in RAM, least recently used first, which of them calls pin, and how many times each was let
    go; and the post-write hook."""

    def __init__(
        self, state: EngineState, store: CellStore, budget: int | None, settle: Callable[[], None] = lambda: None
    ) -> None:
        self._state, self._store, self._budget, self._settle = state, store, budget, settle
        """`settle` runs under the write lock after every write and every load (the recall estimates they made
        due)."""
        self._order: OrderedDict[str, None] = OrderedDict()
        self._generation: defaultdict[str, int] = defaultdict(int)
        self._pins: Counter[str] = Counter()
        self._known: set[str] = set(store.scopes()) if budget is not None else set()
        """The scopes the store may hold cells of (those found empty when loaded are dropped)."""
        self._touching = threading.Lock()
        """Guards the order, the pins and the known scopes: searches touch them at once, under the read lock."""
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
        """The state's write lock, with these scopes and those of these ids in RAM; when the write returns, the
        post-write hook runs and the least recently used scopes not pinned go past the budget (still under the
        lock)."""
        if self._budget is None:
            return self._settled()
        return _Holding(self, self._state.writing, scopes, ids, wrote=True)

    def pinned(self, scopes: Wanted = (), ids: Sequence[str] = ()) -> AbstractContextManager[None]:
        """These scopes and those of these ids in RAM until it exits, without the lock (for a read-modify-write
        that encodes between its read and its write: its cell's row stays the one it read)."""
        if self._budget is None:
            return nullcontext()
        return _Holding(self, self._state.reading, scopes, ids, lock_kept=False)

    def each_scope(self) -> list[list[str] | None]:
        """The holds a call that covers every scope one scope at a time takes in turn: one of every scope without a
        budget (`[None]`), else one per scope the store holds cells of."""
        if self._budget is None:
            return [None]
        with self._touching:
            return [[name] for name in sorted(self._known | set(self._order))]

    @contextmanager
    def _settled(self) -> Iterator[None]:
        with self._state.writing():
            yield
            self._settle()

    def count(self, scope: str | None) -> int:
        """Cells held (of `scope`: None, every scope), in RAM or not (under the caller's hold: the store, read
        under the lock, agrees with RAM)."""
        state = self._state
        if self._budget is None or (scope is not None and scope in self._order):
            if scope is None:
                return len(state.table)
            code = state.table.known_scope(scope)
            return 0 if code is None else state.scopes.count(code)
        return self._store.count(scope)

    def holds(self, cell_id: str) -> bool:
        """Whether a cell of this id is held, in RAM or not."""
        with self._state.reading():
            return cell_id in self._state.table.row_of or (
                self._budget is not None and bool(self._store.scopes_of([cell_id]))
            )

    def _needed(self, scopes: Wanted, ids: Sequence[str]) -> set[str]:
        """The scopes a call needs (under the lock): `scopes` (None: every scope held) and those of its ids, from
        the table for those in RAM and from the store for the others (which, under the lock, agrees with RAM)."""
        table = self._state.table
        if scopes is None:
            with self._touching:
                names = self._known | set(self._order)
        else:
            names = set(scopes)
        elsewhere = []
        for cell_id in ids:
            row = table.row_of.get(cell_id)
            if row is None:
                elsewhere.append(cell_id)
            else:
                names.add(table.scope_names[int(table.scope[row])])
        if elsewhere:
            names.update(self._store.scopes_of(elsewhere).values())
        return names

    def _pin(self, names: set[str]) -> None:
        with self._touching:
            self._pins.update(names)

    def _unpin(self, names: set[str]) -> None:
        with self._touching:
            self._pins.subtract(names)
            for name in names:
                if self._pins[name] <= 0:
                    del self._pins[name]

    def _in_ram(self, names: set[str], empty: dict[str, int]) -> bool:
        """Whether these scopes are in RAM (or were found empty in the store, and not let go since), each then marked
        used now (under the engine's lock)."""
        with self._touching:
            if not all(name in self._order or empty.get(name) == self._generation[name] for name in names):
                return False
            for name in names:
                if name in self._order:
                    self._order.move_to_end(name)
        return True

    def _load(self, names: set[str]) -> dict[str, int]:
        """Bring these (pinned) scopes into RAM, letting the least recently used others not pinned go past the
        budget; returns those the store holds nothing of, with their generations when found so (they are in RAM as
        they are: empty)."""
        with self._state.reading(), self._touching:
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
                else:
                    with self._touching:
                        self._known.discard(name)
            self._settle()
            self._evict()
        return {name: missing[name] for name, batch in found.items() if batch is None}

    def _wrote(self, names: set[str]) -> None:
        """After a write that held these scopes (under the write lock): the post-write hook, the scopes that hold
        cells now noted in RAM, and the least recently used others let go past the budget."""
        self._settle()
        table, scopes = self._state.table, self._state.scopes
        with self._touching:
            for name in names:
                code = table.known_scope(name)
                if code is not None and scopes.count(code):
                    self._order[name] = None
                    self._order.move_to_end(name)
                    self._known.add(name)
        self._evict()

    def _evict(self) -> None:
        """Let the least recently used scopes no call pins go until the budget holds (under the write lock)."""
        state, budget = self._state, self._budget
        assert budget is not None
        with self._touching:
            order = [name for name in self._order if not self._pins[name]]
        for name in order:
            if len(state.table) <= budget:
                return
            code = state.table.known_scope(name)
            rows = state.scope_rows(code) if code is not None else None
            if rows is not None and len(rows):
                state.commit_evict(rows)
            with self._touching:  # no call pins a scope but under the lock, which this one holds alone
                del self._order[name]
                if rows is None or not len(rows):
                    self._known.discard(name)
            self._generation[name] += 1


class _Holding:
    """`with residency.reading(...)` / `writing(...)` / `pinned(...)`: the scopes a call needs pinned and in RAM,
    with the engine's lock held (but for `pinned`); those missing are loaded first, the lock let go meanwhile.
    A plain object, as `state.reading()` is: a search takes it on every call."""

    __slots__ = ("_held", "_ids", "_lock", "_lock_kept", "_names", "_residency", "_scopes", "_wrote")

    def __init__(
        self,
        residency: Residency,
        lock: Callable[[], AbstractContextManager[None]],
        scopes: Wanted,
        ids: Sequence[str],
        *,
        wrote: bool = False,
        lock_kept: bool = True,
    ) -> None:
        self._residency, self._lock, self._scopes, self._ids = residency, lock, scopes, ids
        self._wrote, self._lock_kept = wrote, lock_kept
        self._held: AbstractContextManager[None] | None = None
        self._names: set[str] = set()

    def __enter__(self) -> None:
        residency, empty, names = self._residency, dict[str, int](), set[str]()
        try:
            while True:
                held = self._lock()
                held.__enter__()
                try:
                    needed = residency._needed(self._scopes, self._ids) - names
                    residency._pin(needed)
                    names |= needed
                    ready = residency._in_ram(names, empty)
                except BaseException:
                    held.__exit__(None, None, None)
                    raise
                if ready:
                    self._names = names
                    if self._lock_kept:
                        self._held = held
                    else:
                        held.__exit__(None, None, None)
                    return
                held.__exit__(None, None, None)
                empty = residency._load(names)
        except BaseException:
            residency._unpin(names)
            raise

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        residency, names = self._residency, self._names
        held, self._held = self._held, None
        try:
            if held is not None:
                try:
                    if self._wrote and kind is None:
                        residency._wrote(names)
                finally:
                    held.__exit__(kind, error, trace)
        finally:
            residency._unpin(names)
