"""`EngineState`: what one engine holds, and the lock that guards it.

The cell table is the truth in memory (the store's cells on disk); the group state, the group index,
the entity index and the lexical index are derived from it and kept in step by the methods here.
The facade, search, sleep and stats each take the state; none of them reaches into another.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .cells import CellBatch, CellRecord, CellTable, seen_text
from .clustering import GroupState
from .entities import EntityIndex, extract_entities
from .episodes import EpisodeIndex
from .errors import InvalidInputError, InvariantError, NotFoundError
from .index import GroupIndex
from .lexical import LexicalIndex
from .locks import ReadWriteLock
from .store import CellStore
from .validation import check_ids


class SearchCounters:
    """How many searches ran and how many of them read every cell (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.searches = 0
        self.flat = 0

    def count(self, *, flat: bool) -> None:
        with self._lock:
            self.searches += 1
            self.flat += flat


@dataclass
class EngineState:
    """Cells, groups, indexes and store of one engine. Read under `reading()`, change under `writing()`."""

    table: CellTable
    groups: GroupState
    index: GroupIndex
    entities: EntityIndex
    lexical: LexicalIndex | None
    store: CellStore
    episodes: EpisodeIndex = field(default_factory=EpisodeIndex)
    counters: SearchCounters = field(default_factory=SearchCounters)
    lock: ReadWriteLock = field(default_factory=ReadWriteLock)
    access_lock: threading.Lock = field(default_factory=threading.Lock)
    """Searches run in parallel under the read lock; access counts are bumped under this one."""
    dirty: set[int] = field(default_factory=set)
    """Rows whose access count or group changed since the last flush."""
    touched: set[int] = field(default_factory=set)
    """Groups that gained cells or changed since the last sleep (the ones a judge reads)."""
    version: int = 0
    """Bumped by every write, so a sleep plan made under the read lock knows when it is stale."""
    closed: bool = False

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self.lock.read():
            self.check_open()
            yield

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self.lock.write():
            self.check_open()
            yield

    def check_open(self) -> None:
        if self.closed:
            raise InvalidInputError("this CellularMemory is closed; open a new one")

    def restore(self, batch: CellBatch | None) -> None:
        """Rebuild every derived structure from the store's cells."""
        if batch is None:
            return
        self.groups.new_slots(int(batch.groups.max()) + 1)
        self.groups.add_members(batch.groups, batch.vectors)
        self.insert(batch, [extract_entities(text) for text in batch.texts])
        self.groups.active_centroids()  # computed once here, not by the first search

    def insert(self, batch: CellBatch, found: list[frozenset[str]]) -> None:
        """Append stored cells to the table and the indexes (the group state is the caller's)."""
        rows = self.table.append(batch)
        self.index.add(batch.groups, rows, batch.vectors)
        self.episodes.add(rows, batch.episodes)
        for row, entities in zip(rows.tolist(), found):
            self.entities.add(row, entities)
        if self.lexical is not None:
            self.lexical.add(rows, self._seen_texts(rows))

    def remove(self, rows: np.ndarray) -> None:
        """Take deleted cells out of the groups, the indexes and the table."""
        groups = self.table.group[rows]
        self.groups.remove_members(groups, self.index.vectors_of(rows))
        self.index.remove(groups, rows)
        if self.lexical is not None:
            self.lexical.remove(rows, self._seen_texts(rows))
        self.episodes.remove(rows)
        for row in rows.tolist():
            self.entities.remove(row)
            self.dirty.discard(row)
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

    def last_written(self) -> tuple[str, float] | None:
        """The episode and timestamp of the live cell written last (None in an empty memory)."""
        live = self.table.live_rows()
        return None if not len(live) else (self.episodes.name(int(live[-1])), float(self.table.timestamp[live[-1]]))

    def index_texts(self) -> None:
        """Build the lexical index over every stored cell (when it is switched on later)."""
        self.lexical = LexicalIndex()
        live = self.table.live_rows()
        self.lexical.add(live, self._seen_texts(live))

    def _seen_texts(self, rows: np.ndarray) -> list[str]:
        """What the encoder and the lexical index saw of these rows (`cells.seen_text`)."""
        table = self.table
        return [seen_text(table.texts[row], table.metadata[row]) for row in rows.tolist()]

    def note_access(self, rows: np.ndarray) -> None:
        """Count a read of these cells (persisted at the next flush)."""
        with self.access_lock:
            self.table.access[rows] += 1
            self.dirty.update(rows.tolist())

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        missing = [i for i in ids if i not in self.table.row_of]
        if missing:
            raise NotFoundError(f"unknown ids: {missing[:5]}{' …' if len(missing) > 5 else ''}")
        return np.asarray([self.table.row_of[i] for i in ids], dtype=np.int64)

    def check_new_ids(self, ids: Sequence[str] | None) -> None:
        if ids is None:
            return
        check_ids(ids)
        if len(set(ids)) != len(ids):
            raise InvalidInputError("ids contain duplicates; every cell needs its own id")
        taken = [i for i in ids if i in self.table.row_of]
        if taken:
            raise InvalidInputError(f"ids already stored: {taken[:5]}; delete them first or pick new ids")

    def check_invariants(self) -> None:
        """Groups, centroids, the group index and the entity and lexical indexes agree with the cells
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
        if problems:
            raise InvariantError("; ".join(problems))
