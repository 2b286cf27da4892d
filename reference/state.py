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

from . import kernels
from .calibration import ProbeSetting
from .cells import CellBatch, CellRecord, CellTable, ConflictNote, seen_text, superseded
from .clustering import Assignment, GroupState
from .entities import EntityIndex, extract_entities
from .episodes import EpisodeIndex
from .errors import InvalidInputError, InvariantError, NotFoundError
from .filters import EVERYTHING, MetadataIndex, Within
from .index import GroupIndex
from .judges.base import Conflict
from .lexical import LexicalIndex
from .locks import ReadWriteLock
from .store import CellStore

log = logging.getLogger(__name__)


class _Reading:
    """`with state.reading():` acquires the read side of the state's lock and checks the state is open (a plain
    object: a search takes it on every call, and a generator-based context manager cost it about 1 µs)."""

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
    """How many searches ran, how many of them read every cell, and the vector bytes they read (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.searches = 0
        self.flat = 0
        self.bytes_read = 0

    def count(self, *, flat: bool, searches: int = 1, bytes_read: int = 0) -> None:
        """Count `searches` searches, all of them flat or none, and the vector bytes they read (one lock)."""
        with self._lock:
            self.searches += searches
            self.flat += flat * searches
            self.bytes_read += bytes_read

    def read(self, bytes_read: int) -> None:
        with self._lock:
            self.bytes_read += bytes_read


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
    ) -> None:
        self.table, self.index, self.entities, self.store = table, index, entities, store
        self.fence = fence
        """Called before every read and write: raises when this process may no longer serve the store's cells
        (a lease on a Chroma server, `ownership.py`)."""
        self._probe = probe
        self._turnover = 0
        self._probes: dict[tuple[float | None, float], ProbeSetting] = {}
        """The settings estimated since the cells last changed, by (target recall, margin floor)."""
        self._groups, self._lexical, self._episodes = groups, lexical, EpisodeIndex()
        self._metadata = MetadataIndex()
        self.counters = SearchCounters()
        self.lock = ReadWriteLock()
        self._reading = _Reading(self)
        self.access_lock = threading.Lock()
        """Searches run in parallel under the read lock; access counts are bumped under this one."""
        self._refine_start = 0
        self._dirty: set[int] = set()
        self._touched: set[int] = set()
        self._version = 0
        self._closed = False

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

    def commit_write(self, batch: CellBatch, plan: Assignment, found: list[frozenset[str]]) -> None:
        """New cells: stored, then grouped as `plan` says (splits move stored cells too) and indexed."""
        self.store.put(batch)
        self._apply(batch, plan, found)

    def commit_replace(self, rows: np.ndarray, batch: CellBatch, plan: Assignment, found: list[frozenset[str]]) -> None:
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
        self._turnover += len(rows)
        gone = [self.table.ids[row] for row in rows.tolist()]
        self.store.delete(gone)
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

    @property
    def turnover(self) -> int:
        """Cells written, restored or deleted since this state was made (`calibration.due`)."""
        return self._turnover

    @property
    def refine_start(self) -> int:
        """The row the next write's refining window starts at (`ingest.refining`)."""
        return self._refine_start

    def commit_refine_start(self, row: int) -> None:
        self._refine_start = row

    @property
    def probe(self) -> ProbeSetting:
        """The margin budget probing uses (`calibration.py`)."""
        return self._probe

    def commit_probe(self, setting: ProbeSetting, target: float | None, floor: float) -> None:
        """A new probing margin, estimated for this target and floor (no cell changes: the version stays)."""
        self._probe = self._probes[(target, floor)] = setting

    def known_probe(self, target: float | None, floor: float) -> ProbeSetting | None:
        """The setting estimated for this target and floor since the cells last changed, if any: switching
        between targets (a benchmark's sweep) estimates each once."""
        return self._probes.get((target, floor))

    def commit_regroup(self, rows: np.ndarray, after: np.ndarray, groups: GroupState) -> None:
        """Cells moved to other groups by a sleep plan (`groups`: the group state they make)."""
        if self.store.persistent:
            self.store.update([replace(r, group_id=g) for r, g in zip(self.records(rows.tolist()), after.tolist())])
        self._groups = groups
        self.move(rows, after)
        self._touched.update(np.unique(after).tolist())
        self._changed()

    def record_conflicts(self, conflicts: list[Conflict], now: float, judged: Mapping[str, int]) -> list[Conflict]:
        """Note each new conflict on both cells (the older one as superseded), if both cells are still the rows
        `judged` (cell id → row) that the judge read: a cell written again or deleted since holds another text,
        or none. Returns the new ones."""
        table, new, changed = self.table, [], set()
        for conflict in conflicts:
            if any(table.row_of.get(i, -1) != judged.get(i, -2) for i in (conflict.first, conflict.second)):
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

    def take_touched(self) -> set[int]:
        """The groups that gained cells or changed since the last sleep (the ones a judge reads); cleared."""
        touched, self._touched = self._touched, set()
        return touched

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

    def abandon(self) -> None:
        """Stop without writing anything more (what a process that dies leaves; for crash tests)."""
        self._closed = True

    def enable_lexical(self) -> None:
        """Build the lexical index over every stored cell (when it is switched on later)."""
        self._lexical = LexicalIndex()
        live = self.table.live_rows()
        self._lexical.add(live, self._seen_texts(live), self.table.scope[live])

    def _apply(self, batch: CellBatch, plan: Assignment, found: list[frozenset[str]]) -> None:
        self._turnover += len(batch.ids)
        self.move(plan.moved_rows, plan.moved_to)
        self._mark_dirty(plan.moved_rows)  # split moves are persisted with the next flush
        self._groups = plan.state
        self.insert(batch, found)
        self._touched.update(np.unique(plan.groups).tolist())
        self._touched.update(np.unique(plan.moved_to).tolist())
        self._changed()

    def _changed(self) -> None:
        self._version += 1
        self._probes.clear()

    def restore(self, batch: CellBatch | None) -> None:
        """Rebuild every derived structure from the store's cells."""
        if batch is None:
            return
        self._turnover += len(batch.ids)
        self.groups.new_slots(int(batch.groups.max()) + 1)
        self.groups.set_scopes(batch.groups, self.scope_codes(batch.scopes))
        self.groups.add_members(batch.groups, batch.vectors)
        self.insert(batch, [extract_entities(text) for text in batch.texts])
        self.groups.active_centroids()  # computed once here, not by the first search

    def insert(self, batch: CellBatch, found: list[frozenset[str]]) -> None:
        """Append stored cells to the table and the indexes (the group state is the caller's)."""
        rows = self.table.append(batch)
        self.index.add(batch.groups, rows, batch.vectors)
        self._episodes.add(rows, batch.episodes, self.table.scope[rows])
        beyond = self._metadata.add(rows, batch.metadata)
        if beyond:
            named = [self.table.ids[row] for row in beyond[:5]]
            log.warning(
                "cells %s%s hold metadata numbers beyond the 64-bit range: they are served, and filters compare "
                "those values by equality only; update their metadata to fix them",
                named,
                " …" if len(beyond) > 5 else "",
            )
        for row, entities in zip(rows.tolist(), found):
            self.entities.add(row, entities)
        if self._lexical is not None:
            self._lexical.add(rows, self._seen_texts(rows), self.table.scope[rows])

    def _forget(self, rows: np.ndarray) -> None:
        """Take cells out of the indexes and the table (their groups' sums are the caller's)."""
        self.index.remove(self.table.group[rows], rows)
        if self._lexical is not None:
            self._lexical.remove(rows, self._seen_texts(rows), self.table.scope[rows])
        self._episodes.remove(rows)
        self._metadata.remove(rows, [self.table.metadata[row] for row in rows.tolist()])
        for row in rows.tolist():
            self.entities.remove(row)
            self._dirty.discard(row)
        self.table.kill(rows.tolist())

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
            rows = table.live_rows()
        else:
            rows = np.fromiter(sorted(self._metadata.matching(where)), dtype=np.int64)
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
        live = self.table.live_rows()
        if scope is None:
            return live
        code = self.table.known_scope(scope)
        return live[self.table.scope[live] == code] if code is not None else live[:0]

    def last_written(self) -> tuple[str, float] | None:
        """The episode and timestamp of the live cell written last (None in an empty memory)."""
        live = self.table.live_rows()
        return None if not len(live) else (self.episodes.name(int(live[-1])), float(self.table.timestamp[live[-1]]))

    def _seen_texts(self, rows: np.ndarray) -> list[str]:
        """What the encoder and the lexical index saw of these rows (`cells.seen_text`)."""
        table = self.table
        return [seen_text(table.texts[row], table.metadata[row]) for row in rows.tolist()]

    def note_access(self, rows: np.ndarray) -> None:
        """Count a read of these cells (persisted at the next flush)."""
        with self.access_lock:
            kernels.count_reads(self.table.access, rows)
            self._mark_dirty(rows)

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        missing = [i for i in ids if i not in self.table.row_of]
        if missing:
            raise NotFoundError(f"unknown ids: {missing[:5]}{' …' if len(missing) > 5 else ''}")
        return np.asarray([self.table.row_of[i] for i in ids], dtype=np.int64)

    def check_invariants(self) -> None:
        """Groups, centroids, the group index, the entity and lexical indexes and the turn form agree with the cells
        (call under the read lock); raises `InvariantError` naming each disagreement."""
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
        if self.lexical is not None and self.lexical.rows() != set(live.tolist()):
            problems.append("the lexical index holds other cells than the live ones")
        if self.episodes.rows() != set(live.tolist()):
            problems.append("the episode index holds other cells than the live ones")
        problems += self.episodes.problems()
        if not np.array_equal(self._metadata.rows(), live):
            problems.append("the metadata index holds other cells than the live ones")
        if (groups.scopes[table.group[live]] != table.scope[live]).any():
            problems.append("a cell is in a group of another scope")
        problems += table.turn_form_problems(live)
        if problems:
            raise InvariantError("; ".join(problems))
