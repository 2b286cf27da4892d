"""`EngineState`: what one engine holds, and the lock that guards it.

The cell table is the truth in memory (the store's cells on disk); the group state, the group index,
the entity index and the lexical index are derived from it and kept in step by the methods here.
The facade, search, sleep and stats each take the state; none of them reaches into another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from ..cells.entities import EntityIndex, extract_entities
from ..cells.episodes import EpisodeIndex
from ..cells.scopes import ScopeRows, by_code
from ..cells.table import CellBatch, CellRecord, CellTable, ConflictNote, seen_text, superseded
from ..common.errors import InvalidInputError, InvariantError, NotFoundError
from ..common.locks import ReadWriteLock
from ..groups.clustering import GroupPart, GroupState, Placement
from ..indexes.filters import EVERYTHING, MetadataIndex, Within
from ..indexes.lexical import LexicalIndex
from ..indexes.vectors import GroupIndex
from ..judges.base import Conflict
from ..kernels.grouping import centroids_from_sums
from ..kernels.rows import BYTES_READ, FLAT, SEARCHES, count_reads, tally
from ..store import CellStore
from .calibration import ProbeSetting

log = logging.getLogger(__name__)


class _Reading:
    """`with state.reading():` acquires the read side of the state's lock and checks the state is open (a plain
    object: a search takes it on every call, and a generator-based context manager costs more)."""

    def __init__(self, state: EngineState) -> None:
        self._state = state

    def __enter__(self) -> None:
        self._state.lock.acquire_read()
        if self._state.closed or self._state.fence is not None:
            try:
                self._state.check_open()
            except BaseException:
                self._state.lock.release_read()
                raise

    def __exit__(self, *exc_info: object) -> None:
        self._state.lock.release_read()


class SearchCounters:
    """How many searches ran, how many of them read every cell, and the vector bytes they read: `tallies`, added to
    atomically (`kernels.rows.tally`), so that the compiled probe counts its own search without a lock."""

    def __init__(self) -> None:
        self.tallies = np.zeros(3, dtype=np.int64)

    def count(self, *, flat: bool, searches: int = 1, bytes_read: int = 0) -> None:
        """Count `searches` searches, all of them flat or none, and the vector bytes they read."""
        tally(self.tallies, searches, flat * searches, bytes_read)

    def read(self, bytes_read: int) -> None:
        tally(self.tallies, 0, 0, bytes_read)

    @property
    def searches(self) -> int:
        return int(self.tallies[SEARCHES])

    @property
    def flat(self) -> int:
        return int(self.tallies[FLAT])

    @property
    def bytes_read(self) -> int:
        return int(self.tallies[BYTES_READ])


class EngineState:
    """Cells, groups, indexes and store of one engine. Read under `reading()`, change under `writing()`.

    Only this class changes what it holds: a write goes through one of its commits (`commit_write`,
    `commit_replace`, `commit_delete`, `commit_regroup`, `record_conflicts`), each writing the store first
    (so a failed store write changes nothing) and bumping `version` once, in `_changed`.
    """

    def __init__(
        self,
        *,
        table: CellTable,
        groups: GroupState,
        index: GroupIndex,
        entities: EntityIndex,
        lexical: LexicalIndex | None,
        store: CellStore,
        probe: ProbeSetting,
        fence: Callable[[], None] | None = None,
        reuse_rows: bool = False,
    ) -> None:
        self.table, self.index, self.entities, self.store = table, index, entities, store
        self.fence = fence
        """Called before every read and write: raises when this process may no longer serve the store's cells
        (a lease on a Chroma server, `store/lease.py`)."""
        self._initial = probe
        self._probe_of: dict[int | None, ProbeSetting] = {}
        """The probing margin of each scope (None: of a search of every scope), where it was estimated."""
        self._turnover = 0
        self._turnover_of: dict[int, int] = {}
        self._changed_scopes: set[int] = set()
        self._probes: dict[tuple[int | None, float | None, float], ProbeSetting] = {}
        """The settings estimated since the cells last changed, by (scope, target recall, margin floor)."""
        self.routes: dict[tuple[object, int | None, int, int], Any] = {}
        """The search routes made since the cells last changed (`SearchPipeline._route`; added by `keep_route`),
        dropped by every change: a route binds the index's and the table's arrays, and none keeps alive those a
        write replaced."""
        self._groups, self._lexical, self._episodes = groups, lexical, EpisodeIndex()
        self._metadata = MetadataIndex()
        self._scopes = ScopeRows()
        self.counters = SearchCounters()
        self.lock = ReadWriteLock()
        self._reading = _Reading(self)
        self._reads_lock = threading.Lock()
        """Searches run in parallel under the read lock; they note the cells they read for the next flush under
        this one (their access counts are atomic adds)."""
        self._refine_start: dict[int, int] = {}
        self._dirty: set[int] = set()
        self._touched: dict[int, set[int]] = {}
        """Each scope's groups that gained cells or changed since its last sleep."""
        self._version = 0
        self._closed = False
        self._reuse_rows = reuse_rows
        """Whether rows of cells deleted or let go are filled again (a memory that keeps some scopes in RAM)."""

    @property
    def groups(self) -> GroupState:
        return self._groups

    @property
    def lexical(self) -> LexicalIndex | None:
        return self._lexical

    @property
    def episodes(self) -> EpisodeIndex:
        return self._episodes

    @property
    def scopes(self) -> ScopeRows:
        """Each scope's rows (`scopes.ScopeRows`)."""
        return self._scopes

    @property
    def version(self) -> int:
        """Bumped by every commit, so a sleep plan made under the read lock knows when it is stale."""
        return self._version

    @property
    def closed(self) -> bool:
        return self._closed

    def reading(self) -> _Reading:
        """`with state.reading():` the read lock, on a state still open."""
        return self._reading

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self.lock.write():
            self.check_open()
            yield

    def check_open(self) -> None:
        if self._closed:
            raise InvalidInputError("this CellularMemory is closed; open a new one")
        if self.fence is not None:
            self.fence()

    # ---- commits (call under the write lock) --------------------------------------------------------

    def commit_write(self, batch: CellBatch, plan: Placement, found: list[frozenset[str]]) -> None:
        """New cells: stored, then grouped as `plan` says (splits move stored cells too) and indexed."""
        self.store.put(batch)
        self._apply(batch, plan, found)

    def commit_replace(self, rows: np.ndarray, batch: CellBatch, plan: Placement, found: list[frozenset[str]]) -> None:
        """Cells written again under their ids (`rows` hold them now): stored in one replacing write, then
        the old rows leave the indexes and the new ones enter them; `plan` was made without the old rows.
        A cell with a new text leaves the conflicts judged on its old one, on the other cells too."""
        previous = self.records(rows.tolist())
        self.store.replace(batch, previous)
        self._forget(rows)
        self._apply(batch, plan, found)
        self._drop_conflicts_with({r.id for r, text in zip(previous, batch.texts) if r.text != text})

    def commit_delete(self, rows: np.ndarray) -> None:
        """Cells deleted, and the conflicts other cells had with them (a delete is final)."""
        self._turn_over(self.table.scope[rows])
        gone = [self.table.ids[row] for row in rows.tolist()]
        self.store.delete(gone, {self.table.scope_names[code] for code in np.unique(self.table.scope[rows])})
        self._groups.remove_members(self.table.group[rows], self.index.vectors_of(rows))
        self._forget(rows)
        self._changed()
        self._drop_conflicts_with(set(gone))

    def _drop_conflicts_with(self, ids: set[str]) -> None:
        """Take the notes naming these cells off every live cell (and the store), its superseded mark with them."""
        table = self.table
        if not ids or not table.conflicts:
            return
        changed = []
        for row, notes in list(table.conflicts.items()):
            if not table.alive[row] or not any(note.other in ids for note in notes):
                continue
            kept = [note for note in notes if note.other not in ids]
            if kept:
                table.conflicts[row] = kept
            else:
                del table.conflicts[row]
            table.superseded[row] = superseded(kept)
            changed.append(row)
        if changed:
            self.store.update(self.records(changed))

    def _turn_over(self, scopes: np.ndarray) -> None:
        """Count cells of these scopes written, restored or deleted."""
        self._turnover += len(scopes)
        for scope, members in by_code(scopes):
            self._turnover_of[scope] = self._turnover_of.get(scope, 0) + len(members)
            self._changed_scopes.add(scope)

    def turnover(self, scope: int | None = None) -> int:
        """Cells written, restored or deleted since this state was made (of `scope`; None: of every scope), for
        `calibration.due`."""
        return self._turnover if scope is None else self._turnover_of.get(scope, 0)

    def take_changed_scopes(self) -> set[int]:
        """The scopes written to or deleted from since the last call (whose estimates may be due); cleared."""
        changed, self._changed_scopes = self._changed_scopes, set()
        return changed

    def refine_start(self, scope: int) -> int:
        """Where in the scope's rows the next write's refining window starts (`ingest.refining`)."""
        return self._refine_start.get(scope, 0)

    def commit_refine_start(self, scope: int, position: int) -> None:
        self._refine_start[scope] = position

    @property
    def probe(self) -> ProbeSetting:
        """The margin budget a search of every scope probes by (`calibration.py`)."""
        return self.probe_of(None)

    def probe_of(self, scope: int | None) -> ProbeSetting:
        """The margin budget probing uses in `scope` (None: a search of every scope, which in a memory of one
        scope is that scope's; not so where only some scopes are in RAM: one scope in RAM may be one of many)."""
        if scope is None and not self._reuse_rows:
            scope = self._scopes.sole()
        return self._probe_of.get(scope, self._initial)

    def forget_probes_out_of_ram(self) -> None:
        """Drop the estimates of scopes that hold no cell in RAM (`residency.py`): estimated again when they load."""
        for scope in [scope for scope in self._probe_of if scope is not None and not self._scopes.count(scope)]:
            del self._probe_of[scope]

    def estimated_scopes(self) -> list[int | None]:
        """The scopes that have a probing margin of their own (None: that of a search of every scope)."""
        return [scope for scope in self._probe_of if scope is None or self._scopes.count(scope)]

    def estimates(self) -> dict[int | None, ProbeSetting]:
        """The probing margin of each scope that has one of its own (None: that of a search of every scope)."""
        return {scope: self._probe_of[scope] for scope in self.estimated_scopes()}

    def commit_probe(self, setting: ProbeSetting, target: float | None, floor: float, scope: int | None) -> None:
        """A new probing margin for `scope`, estimated for this target and floor (no cell changes: the version
        stays)."""
        self._probe_of[scope] = self._probes[(scope, target, floor)] = setting

    def known_probe(self, target: float | None, floor: float, scope: int | None) -> ProbeSetting | None:
        """The setting estimated for `scope`, this target and floor since the cells last changed, if any:
        switching between targets (a benchmark's sweep) estimates each once."""
        return self._probes.get((scope, target, floor))

    def commit_regroup(self, rows: np.ndarray, after: np.ndarray, part: GroupPart) -> None:
        """Cells moved to other groups by a sleep plan (`part`: the groups of their scopes as it leaves them)."""
        if self.store.persistent:
            self.store.update([replace(r, group_id=g) for r, g in zip(self.records(rows.tolist()), after.tolist())])
        self._groups.absorb(part)
        self.move(rows, after)
        self._touch(after)
        self._changed()

    def record_conflicts(self, conflicts: list[Conflict], now: float, judged: Mapping[str, int]) -> list[Conflict]:
        """Note each new conflict on both cells (the older one as superseded), if both cells are still the rows
        `judged` (cell id → the stamp of its row, `CellTable.stamp`) that the judge read: a cell written again or
        deleted since holds another text, or none. Returns the new ones."""
        table, new, changed = self.table, [], set()
        for conflict in conflicts:
            if any(self.stamp_of(i) != judged.get(i, -2) for i in (conflict.first, conflict.second)):
                continue  # changed meanwhile: the next sleep pass judges what it holds now
            older, newer = table.row_of[conflict.first], table.row_of[conflict.second]
            notes = table.conflicts.setdefault(older, [])
            if any(c.other == conflict.second for c in notes):
                continue
            notes.append(ConflictNote(conflict.second, True, conflict.reason, conflict.judge, now))
            table.conflicts.setdefault(newer, []).append(
                ConflictNote(conflict.first, False, conflict.reason, conflict.judge, now)
            )
            table.superseded[older] = superseded(notes)
            changed |= {older, newer}
            new.append(conflict)
        self.store.update(self.records(sorted(changed)))
        self._changed()
        return new

    def stamp_of(self, cell_id: str) -> int:
        """The stamp of the row that holds this cell now (-1: none holds it): equal stamps, the same version."""
        row = self.table.row_of.get(cell_id)
        return -1 if row is None else int(self.table.stamp[row])

    def commit_load(self, batch: CellBatch) -> None:
        """One scope's stored cells back in RAM (`residency.py`), in the groups the store holds them in; nothing is
        written. Counted as written only for a scope without an estimate of its own yet (`calibration.py`)."""
        scope = self.scope_codes(batch.scopes[:1])[0]
        self._restore(batch, counted=int(scope) not in self._probe_of)
        self._changed()

    def commit_evict(self, rows: np.ndarray) -> None:
        """Cells let go from RAM (`residency.py`): what the store has not been told of them yet (access counts,
        moves) written first, then taken out of every index, their rows handed back; the store keeps them."""
        dirty = sorted(self._dirty.intersection(rows.tolist()))
        self.store.update(self.records(dirty))
        self._groups.remove_members(self.table.group[rows], self.index.vectors_of(rows))
        self._forget(rows)
        self._changed()

    def take_touched(self, scope: int | None = None) -> set[int]:
        """The groups (of `scope`; None: of every scope) that gained cells or changed since the last sleep (the
        ones a judge reads); taken off the list."""
        if scope is None:
            touched, self._touched = self._touched, {}
            return set().union(*touched.values())
        return self._touched.pop(scope, set())

    def _touch(self, groups: np.ndarray) -> None:
        groups = np.unique(groups)
        for scope, members in by_code(self._groups.scopes[groups], groups):
            self._touched.setdefault(scope, set()).update(members.tolist())

    def _mark_dirty(self, rows: np.ndarray) -> None:
        """Note cells whose access counts or groups the store must be told of at the next flush (a memory
        without a store keeps no list: a million split moves would hold a million Python ints)."""
        if self.store.persistent:
            self._dirty.update(rows.tolist())

    def flush(self) -> None:
        """Persist access counts and moves gathered since the last flush."""
        self.store.update(self.records(sorted(self._dirty)))
        self._dirty.clear()

    def close(self) -> None:
        """Flush and stop: further calls raise."""
        try:
            self.flush()
        finally:
            self._closed = True
            self.index.close()
            self.routes.clear()

    def abandon(self) -> None:
        """Stop without writing anything more (what a process that dies leaves; for crash tests)."""
        self._closed = True

    def enable_lexical(self) -> None:
        """Build the lexical index over every stored cell (when it is switched on later)."""
        self._lexical = LexicalIndex()
        live = self.table.live_rows()
        self._lexical.add(live, self._seen_texts(live), self.table.scope[live])

    def _apply(self, batch: CellBatch, plan: Placement, found: list[frozenset[str]]) -> None:
        self._groups.absorb(plan.part)
        self.move(plan.moved_rows, plan.moved_to)
        self._mark_dirty(plan.moved_rows)  # split moves are persisted with the next flush
        self.insert(batch, found)
        self._touch(np.r_[plan.groups, plan.moved_to])
        self._changed()

    def keep_route(self, key: tuple[object, int | None, int, int], route: object) -> None:
        """Keep a search route (`routes`) made under the read lock: readers may share the routes, as none changes
        the state."""
        self.routes[key] = route

    def _changed(self) -> None:
        self._version += 1
        self._probes.clear()
        self.routes.clear()

    def restore(self, batch: CellBatch | None, groups: int = 0) -> None:
        """Rebuild every derived structure from the store's cells (at least `groups` group slots: the store's
        `group_bound`, where only some scopes are loaded)."""
        self.groups.new_slots(max(0, groups - self.groups.n_slots), -1)
        if batch is not None:
            self._restore(batch)
            self.groups.active_centroids()  # computed once here, not by the first search

    def _restore(self, batch: CellBatch, *, counted: bool = True) -> None:
        """Stored cells into the table and every index, in the groups they are stored in."""
        self.groups.new_slots(max(0, int(batch.groups.max()) + 1 - self.groups.n_slots), -1)
        self.groups.set_scopes(batch.groups, self.scope_codes(batch.scopes))
        self.groups.add_members(batch.groups, batch.vectors)
        self.insert(batch, [extract_entities(text) for text in batch.texts], counted=counted)

    def insert(self, batch: CellBatch, found: list[frozenset[str]], *, counted: bool = True) -> None:
        """Append stored cells to the table and the indexes (the group state is the caller's); `counted`: as
        written (`turnover`)."""
        rows = self.table.append(batch)
        scopes = self.table.scope[rows]
        if counted:
            self._turn_over(scopes)
        self._scopes.add(rows, scopes, self.table.stamp[rows])
        self.index.add(batch.groups, rows, batch.vectors)
        self._episodes.add(rows, batch.episodes, scopes)
        beyond = self._metadata.add(rows, batch.metadata, scopes)
        if beyond:
            named = [self.table.ids[row] for row in beyond[:5]]
            log.warning(
                "cells %s%s hold metadata numbers beyond the 64-bit range: they are served, and filters compare "
                "those values by equality only; update their metadata to fix them",
                named,
                " …" if len(beyond) > 5 else "",
            )
        for row, entities, scope in zip(rows.tolist(), found, scopes.tolist()):
            self.entities.add(row, entities, scope)
        if self._lexical is not None:
            self._lexical.add(rows, self._seen_texts(rows), scopes)

    def _forget(self, rows: np.ndarray) -> None:
        """Take cells out of the indexes and the table (their groups' sums are the caller's)."""
        self.index.remove(self.table.group[rows], rows)
        if self._lexical is not None:
            self._lexical.remove(rows, self._seen_texts(rows), self.table.scope[rows])
        self._episodes.remove(rows)
        self._metadata.remove(rows, [self.table.metadata[row] for row in rows.tolist()], self.table.scope[rows])
        for row in rows.tolist():
            self.entities.remove(row)
            self._dirty.discard(row)
        self.table.kill(rows.tolist())
        self._scopes.remove(rows, self.table.scope[rows], self.table.alive, self.table.stamp)
        if self._reuse_rows:
            self.table.release(rows.tolist())

    def move(self, rows: np.ndarray, groups: np.ndarray) -> None:
        """Point cells at other groups in the table and the group index (the group state is the caller's)."""
        if not len(rows):
            return
        vectors = self.index.vectors_of(rows)
        self.index.remove(self.table.group[rows], rows)
        self.table.group[rows] = groups
        self.index.add(groups, rows, vectors)

    def members(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """A group's rows and their vectors."""
        rows = self.index.members(group)
        return rows, self.index.vectors_of(rows)

    def record(self, row: int) -> CellRecord:
        """Everything about one live cell."""
        return self.records([row])[0]

    def records(self, rows: Sequence[int]) -> list[CellRecord]:
        """The records of these live cells (their vectors read in one pass)."""
        vectors = self.index.vectors_of(np.asarray(rows, dtype=np.int64))
        return [self.table.record(row, vector, self.episodes.name(row)) for row, vector in zip(rows, vectors)]

    def scope_codes(self, names: Sequence[str]) -> np.ndarray:
        """The codes of these scopes (new ones get codes)."""
        return self.table.scope_codes(names)

    def within(
        self, scope: str | None, where: Mapping[str, Any] | None, since: float | None, until: float | None
    ) -> Within | None:
        """The live cells a search may return: of `scope` (None: any), matching the checked `where` filter,
        written in [`since`, `until`]; None when no cell can be (a scope that never held one)."""
        table = self.table
        code = None if scope is None else table.known_scope(scope)
        if scope is not None and code is None:
            return None
        if where is None and since is None and until is None:
            return EVERYTHING if code is None else Within(code)
        if where is None:
            rows = table.live_rows() if code is None else np.sort(self.scope_rows(code))
        else:
            scoped = None if code is None else self.scope_rows(code)
            rows = np.fromiter(sorted(self._metadata.matching(where, code, scoped)), dtype=np.int64)
        keep = np.ones(len(rows), dtype=bool)
        if code is not None:
            keep &= table.scope[rows] == code
        if since is not None:
            keep &= table.timestamp[rows] >= since
        if until is not None:
            keep &= table.timestamp[rows] <= until
        return Within(code, rows[keep])

    def live_in(self, scope: str | None) -> np.ndarray:
        """The live rows of a scope (None: of every scope), in insertion order."""
        if scope is None:
            return self.table.live_rows()
        code = self.table.known_scope(scope)
        return self.scope_rows(code) if code is not None else np.zeros(0, dtype=np.int64)

    def scope_rows(self, scope: int) -> np.ndarray:
        """The live rows of a scope (by code), in insertion order."""
        return self._scopes.live(scope, self.table.alive, self.table.stamp)

    def last_written(self, scope: int) -> tuple[str, float] | None:
        """The episode and timestamp of the scope's live cell written last (None: it holds none)."""
        row = self._scopes.last(scope, self.table.alive, self.table.stamp)
        return None if row is None else (self.episodes.name(row), float(self.table.timestamp[row]))

    def _seen_texts(self, rows: np.ndarray) -> list[str]:
        """What the encoder and the lexical index saw of these rows (`cells.seen_text`)."""
        table = self.table
        return [seen_text(table.texts[row], table.metadata[row]) for row in rows.tolist()]

    def note_access(self, rows: np.ndarray) -> None:
        """Count a read of these cells (persisted at the next flush)."""
        count_reads(self.table.access, rows)
        if self.store.persistent:
            self.mark_accessed(rows)

    def mark_accessed(self, rows: np.ndarray) -> None:
        """Note cells whose reads were counted (by `note_access`, or by the compiled probe itself) for the next
        flush (call under the read lock, with a persistent store: a memory without one keeps no list)."""
        with self._reads_lock:
            self._dirty.update(rows.tolist())

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        missing = [i for i in ids if i not in self.table.row_of]
        if missing:
            raise NotFoundError(f"unknown ids: {missing[:5]}{' …' if len(missing) > 5 else ''}")
        return np.asarray([self.table.row_of[i] for i in ids], dtype=np.int64)

    def check_invariants(self) -> None:
        """Groups, centroids, the group index, the entity and lexical indexes, the turn form and the table's
        addresses agree with the cells (call under the read lock); raises `InvariantError` naming each
        disagreement."""
        table, groups = self.table, self.groups
        live = table.live_rows()
        problems = []
        if len(live) != len(table) or set(table.row_of.values()) != set(live.tolist()):
            problems.append("the id map and the live rows differ")
        counts = np.bincount(table.group[live], minlength=groups.n_slots)
        if len(counts) != groups.n_slots or (counts != groups.counts).any():
            problems.append("group member counts differ from the cells' groups")
        sums = np.zeros_like(groups.sums)
        np.add.at(sums, table.group[live], self.index.vectors_of(live).astype(np.float64))
        if not np.allclose(sums, groups.sums, atol=1e-3):
            problems.append("a centroid is not the mean of its group's cells")
        active = groups.active_ids()
        norms = np.linalg.norm(groups.sums[active], axis=1, keepdims=True)
        if not np.allclose(groups.active_centroids(), groups.sums[active] / norms, atol=1e-5):
            problems.append("a cached centroid differs from its group's normalised sum")
        for group in groups.active_ids().tolist():
            if not np.array_equal(np.sort(self.index.members(group)), live[table.group[live] == group]):
                problems.append(f"the group index holds other cells than group {group}")
                break
        if not self.entities.rows() <= set(live.tolist()):
            problems.append("the entity index names deleted cells")
        if any(self.entities.scope_of(row) != table.scope[row] for row in self.entities.rows()):
            problems.append("the entity index files a cell under another scope")
        by_scope = {scope: rows for scope, rows in by_code(table.scope[live], live)}
        if set(self._scopes) != set(by_scope) or any(
            not np.array_equal(np.sort(self.scope_rows(scope)), rows) for scope, rows in by_scope.items()
        ):
            problems.append("a scope's rows differ from the cells of that scope")
        for scope in [None, *by_scope]:
            ids = groups.active_ids(scope)
            if not np.array_equal(ids, np.unique(table.group[live if scope is None else by_scope[scope]])):
                problems.append(f"the live groups of scope {scope} differ from its cells' groups")
            elif not np.allclose(groups.active_centroids(scope), centroids_from_sums(groups.sums, ids), atol=1e-5):
                problems.append(f"a cached centroid of scope {scope} differs from its group's normalised sum")
        if self.lexical is not None and self.lexical.rows() != set(live.tolist()):
            problems.append("the lexical index holds other cells than the live ones")
        if self.episodes.rows() != set(live.tolist()):
            problems.append("the episode index holds other cells than the live ones")
        problems += self.episodes.problems()
        if not np.array_equal(self._metadata.rows(), live):
            problems.append("the metadata index holds other cells than the live ones")
        if (groups.scopes[table.group[live]] != table.scope[live]).any():
            problems.append("a cell is in a group of another scope")
        problems += table.turn_form_problems(live) + table.address_problems(live)
        if problems:
            raise InvariantError("; ".join(problems))
