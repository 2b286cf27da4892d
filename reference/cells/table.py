"""Cells in columns: `CellBatch` for a write or a load, `CellTable` for everything in memory.

Table rows are append-only; a deleted row is marked dead and skipped, so row numbers stay
stable for the group and entity indexes that point at them. A memory that keeps only some scopes in RAM
(`residency.py`) hands the rows of the cells it lets go back to the table (`release`), which fills them again
first; each filling of a row has a stamp of its own, so a plan that read a row can tell it still holds what it read.
"""

from __future__ import annotations

import copy
import ctypes
import os
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .turns import asks, speaker_word

LIST_ITEMS_AT = (
    3 * ctypes.sizeof(ctypes.c_void_p)
    if sys.implementation.name == "cpython"
    and not hasattr(sys, "gettotalrefcount")
    and not sysconfig.get_config_var("Py_GIL_DISABLED")
    else None
)
"""Where a CPython list holds the address of its item array (`ob_item`, after a reference count, a type and a
length); None where that layout is not known (another Python, a debug or a free-threaded build, whose objects have
longer headers): its lists' items are then not prefetched."""

NO_METADATA: MappingProxyType[str, Any] = MappingProxyType({})
"""The metadata of every row written without any: one read-only empty mapping, not an empty dict per cell
(64 bytes each, and a search's hits copied each from wherever it lay in memory)."""


class NestedMetadata(dict[str, Any]):
    """A row's metadata that holds lists or mappings: its `copy` is deep, so no caller who got a copy (a hit, a
    record) can change the stored cell through a shared list. Flat metadata is a plain dict (its `copy` suffices)."""

    def copy(self) -> dict[str, Any]:
        copied: dict[str, Any] = copy.deepcopy(dict(self))
        return copied


def stored_metadata(metadata: dict[str, Any]) -> dict[str, Any] | MappingProxyType[str, Any]:
    """How the table keeps a row's metadata: `NO_METADATA` when empty, `NestedMetadata` when a value is a list or
    a mapping, else the dict itself."""
    if not metadata:
        return NO_METADATA
    if any(isinstance(value, list | dict) for value in metadata.values()):
        return NestedMetadata(metadata)
    return metadata


@dataclass(frozen=True)
class ConflictNote:
    """One side of a recorded contradiction, kept on the cell: the other cell, whether the other is the
    newer statement (then this cell is superseded), the judge's reason and name, when it was found."""

    other: str
    other_is_newer: bool
    reason: str
    judge: str
    found: float

    def to_json(self) -> dict[str, Any]:
        """The stored form (the keys the store has always written)."""
        return {"with": self.other, "newer": self.other_is_newer, "reason": self.reason, "judge": self.judge,
                "found": self.found}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConflictNote:
        return cls(
            str(data["with"]), bool(data["newer"]), str(data["reason"]), str(data["judge"]), float(data["found"])
        )


@dataclass(frozen=True)
class CellRecord:
    """Everything stored about one cell."""

    id: str
    text: str
    vector: np.ndarray
    group_id: int
    kind: str
    importance: float
    timestamp: float
    access_count: int
    metadata: dict[str, Any]
    conflicts: list[ConflictNote]
    """Who this cell contradicts, and which of the two is newer."""
    episode: str = ""
    """The episode it was written in (`episodes.py`)."""
    scope: str = ""
    """Whose memory it is (a user, an agent, a run): searches in a scope see only its cells."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Earlier texts of the cell, oldest first: {"text", "replaced"} (epoch seconds), kept by `update`."""


@dataclass(frozen=True)
class CellBatch:
    """Many cells as columns (the unit of writing and loading)."""

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray
    groups: np.ndarray
    kinds: list[str]
    importance: np.ndarray
    timestamps: np.ndarray
    access: np.ndarray
    metadata: list[dict[str, Any]]
    conflicts: Sequence[Sequence[ConflictNote]]
    episodes: list[str]
    scopes: list[str]
    histories: Sequence[Sequence[dict[str, Any]]]

    def __len__(self) -> int:
        return len(self.ids)


class CellTable:
    """Columns of all cells ever added, with a live mask and an id → row map.

    With `keep_vectors` the table keeps the vectors by row (the Chroma group index reads them there);
    without, the NumPy group index holds the only copy (read vectors through `EngineState.index.vectors_of`).
    """

    def __init__(self, dim: int, *, keep_vectors: bool, speaker_key: str | None = None) -> None:
        self.dim = dim
        self.keep_vectors = keep_vectors
        self.speaker_key = speaker_key
        self._size = 0
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        self.group = np.zeros(0, dtype=np.int64)
        self.importance = np.zeros(0, dtype=np.float64)
        self.timestamp = np.zeros(0, dtype=np.float64)
        self.access = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.superseded = np.zeros(0, dtype=bool)
        """True for a cell that a newer, contradicting cell outranks in memory mode."""
        self.asks = np.zeros(0, dtype=bool)
        """True for a cell whose text asks a question (`turns.asks`)."""
        self.speaker = np.zeros(0, dtype=np.int32)
        """Each row's speaker, as a code into `speaker_words`: the first word of its metadata under `speaker_key`
        (`turns.speaker_word`; 0: none)."""
        self.speaker_words: list[str] = [""]
        self._speaker_code: dict[str, int] = {"": 0}
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.kinds: list[str] = []
        self.metadata: list[dict[str, Any] | MappingProxyType[str, Any]] = []
        """Each row's metadata (`stored_metadata`): read it out by its `copy()`; the rows without any share
        `NO_METADATA` (no empty dict per cell)."""
        self.conflicts: dict[int, list[ConflictNote]] = {}
        """The conflicts noted on each row that has any (few do: no empty list per cell)."""
        self.history: dict[int, list[dict[str, Any]]] = {}
        """Earlier texts of the rows that were updated."""
        self.scope = np.zeros(0, dtype=np.int32)
        """Each row's scope, as a code into `scope_names` (0: the default scope "")."""
        self.stamp = np.zeros(0, dtype=np.int64)
        """Each row's filling, numbered: a row released and filled again has another stamp."""
        self._stamps = 0
        self._free: list[int] = []
        """Rows released (`release`), filled before new ones."""
        self.scope_names: list[str] = [""]
        self._scope_code: dict[str, int] = {"": 0}
        self.row_of: dict[str, int] = {}
        self.addresses = np.zeros((0, 2), dtype=np.int64)
        """Where each row's id and text lie in memory (`id`, an address in CPython): a search asks for their cache
        lines when its probe knows its hits, so that they arrive while its Python goes on to build them (a number
        that is no address costs nothing: a prefetch never faults)."""
        self.item_arrays = np.zeros(3, dtype=np.int64)
        """Where the item arrays of `ids`, `texts` and `metadata` lie (`items_address`), kept as the lists grow: a
        search asks for its hits' items in them too, which lie a long way apart in a large memory."""

    def __len__(self) -> int:
        return len(self.row_of)

    @property
    def size(self) -> int:
        """Rows in use, dead ones included."""
        return self._size

    def append(self, batch: CellBatch) -> np.ndarray:
        """Add one row per cell of `batch` (released rows first, ascending, then new ones); returns their row
        numbers, in the batch's order."""
        count, reused = len(batch), min(len(batch), len(self._free))
        start, stop = self._size, self._size + count - reused
        rows: np.ndarray | slice = slice(start, stop)
        if reused:
            taken, self._free = sorted(self._free[-reused:]), self._free[:-reused]
            rows = np.r_[taken, start:stop]
        self._reserve(stop)
        if self.keep_vectors:
            self.vectors[rows] = batch.vectors
        self.group[rows] = batch.groups
        self.importance[rows] = batch.importance
        self.timestamp[rows] = batch.timestamps
        self.access[rows] = batch.access
        self.alive[rows] = True
        self.stamp[rows] = np.arange(self._stamps, self._stamps + count)
        self._stamps += count
        self.superseded[rows] = (
            [superseded(row_conflicts) for row_conflicts in batch.conflicts] if any(batch.conflicts) else False
        )
        numbered = np.arange(start, stop) if isinstance(rows, slice) else rows
        if reused:  # new rows are zero already (no page written for them)
            self.asks[numbered[:reused]], self.speaker[numbered[:reused]] = False, 0
        self.asks[numbered[np.flatnonzero([asks(text) for text in batch.texts])]] = True
        if self.speaker_key is not None and any(batch.metadata):
            key = self.speaker_key
            self.speaker[rows] = _codes(
                [speaker_word(m, key) for m in batch.metadata], self._speaker_code, self.speaker_words
            )
        metadata = list(map(stored_metadata, batch.metadata))
        listed = numbered.tolist()
        for i, row in enumerate(listed[:reused]):
            self.ids[row], self.texts[row], self.kinds[row] = batch.ids[i], batch.texts[i], batch.kinds[i]
            self.metadata[row] = metadata[i]
        self.ids.extend(batch.ids[reused:])
        self.texts.extend(batch.texts[reused:])
        self.kinds.extend(batch.kinds[reused:])
        self.metadata.extend(metadata[reused:])
        self.item_arrays[:] = [items_address(column) for column in (self.ids, self.texts, self.metadata)]
        self.addresses[rows, 0] = np.fromiter(map(id, batch.ids), np.int64, count)
        self.addresses[rows, 1] = np.fromiter(map(id, batch.texts), np.int64, count)
        self.conflicts.update((listed[i], list(notes)) for i, notes in enumerate(batch.conflicts) if notes)
        self.history.update((listed[i], list(texts)) for i, texts in enumerate(batch.histories) if texts)
        self.scope[rows] = self.scope_codes(batch.scopes)
        self.row_of.update(zip(batch.ids, listed))
        self._size = stop
        return numbered

    def scope_codes(self, names: Sequence[str]) -> np.ndarray:
        """The codes of these scopes, new ones given codes."""
        return _codes(names, self._scope_code, self.scope_names)

    def known_scope(self, name: str) -> int | None:
        """The code of a scope that has ever held a cell, else None."""
        return self._scope_code.get(name)

    def known_speaker(self, word: str) -> int | None:
        """The code of a speaker's first word (lower case) that some cell has had, else None."""
        return self._speaker_code.get(word)

    def kill(self, rows: Iterable[int]) -> None:
        """Mark rows deleted."""
        for row in rows:
            self.alive[row] = False
            del self.row_of[self.ids[row]]

    def release(self, rows: Iterable[int]) -> None:
        """Hand dead rows back, to be filled again by later cells (their texts and fields let go now)."""
        for row in rows:
            self.ids[row] = self.texts[row] = ""
            self.addresses[row] = id("")
            self.metadata[row] = NO_METADATA
            self.conflicts.pop(row, None)
            self.history.pop(row, None)
            self._free.append(row)

    def live_rows(self) -> np.ndarray:
        """Row numbers of all live cells, in insertion order."""
        return np.flatnonzero(self.alive[: self._size])

    def address_problems(self, rows: np.ndarray) -> list[str]:
        """A message when a row's recorded `addresses` are not those of its id and text, and when `item_arrays`
        are not where the lists' items lie."""
        problems = []
        if self.addresses[rows].tolist() != [[id(self.ids[row]), id(self.texts[row])] for row in rows.tolist()]:
            problems.append("a cell's id or text lies elsewhere than its recorded address")
        if self.item_arrays.tolist() != [items_address(column) for column in (self.ids, self.texts, self.metadata)]:
            problems.append("the lists' items lie elsewhere than their recorded addresses")
        return problems

    def turn_form_problems(self, rows: np.ndarray) -> list[str]:
        """A message for each turn-form column that disagrees with these rows' texts or metadata."""
        problems, listed = [], rows.tolist()
        if self.asks[rows].tolist() != [asks(self.texts[row]) for row in listed]:
            problems.append("a cell's question mark is recorded wrongly")
        spoken = [self.speaker_words[code] for code in self.speaker[rows].tolist()]
        if self.speaker_key is not None and spoken != [
            speaker_word(self.metadata[row], self.speaker_key) for row in listed
        ]:
            problems.append("a cell's speaker is recorded wrongly")
        return problems

    def record(self, row: int, vector: np.ndarray, episode: str) -> CellRecord:
        """The full record of one row, whose vector is `vector` and episode `episode`."""
        return CellRecord(
            id=self.ids[row],
            text=self.texts[row],
            vector=vector,
            group_id=int(self.group[row]),
            kind=self.kinds[row],
            importance=float(self.importance[row]),
            timestamp=float(self.timestamp[row]),
            access_count=int(self.access[row]),
            metadata=self.metadata[row].copy(),
            conflicts=list(self.conflicts.get(row, ())),
            episode=episode,
            scope=self.scope_names[int(self.scope[row])],
            history=copy.deepcopy(self.history.get(row, [])),
        )

    def _reserve(self, needed: int) -> None:
        capacity = len(self.alive)
        if needed <= capacity:
            return
        new_capacity = max(needed, 2 * capacity, 1024)
        if self.keep_vectors:
            self.vectors = grown(self.vectors, new_capacity)
        self.group = grown(self.group, new_capacity)
        self.importance = grown(self.importance, new_capacity)
        self.timestamp = grown(self.timestamp, new_capacity)
        self.access = grown(self.access, new_capacity)
        self.alive = grown(self.alive, new_capacity)
        self.superseded = grown(self.superseded, new_capacity)
        self.asks = grown(self.asks, new_capacity)
        self.speaker = grown(self.speaker, new_capacity)
        self.scope = grown(self.scope, new_capacity)
        self.stamp = grown(self.stamp, new_capacity)
        self.addresses = grown(self.addresses, new_capacity)


def items_address(values: list[Any]) -> int:
    """The address of a list's item array (`LIST_ITEMS_AT`; 0 for an empty list, or where the layout is not
    known)."""
    if LIST_ITEMS_AT is None:
        return 0
    return ctypes.c_void_p.from_address(id(values) + LIST_ITEMS_AT).value or 0


def superseded(conflicts: Sequence[ConflictNote]) -> bool:
    """A cell is superseded when a conflict names it as the older side."""
    return any(c.other_is_newer for c in conflicts)


def _codes(names: Sequence[str], code_of: dict[str, int], named: list[str]) -> np.ndarray:
    """The codes of `names` in `code_of` (new names get the next codes, appended to `named`)."""
    distinct = dict.fromkeys(names)
    for name in distinct:
        if name not in code_of:
            code_of[name] = len(named)
            named.append(name)
    if len(distinct) == 1:  # the usual write: every cell of one scope, or of one speaker
        return np.full(len(names), code_of[next(iter(distinct))], dtype=np.int32)
    return np.fromiter((code_of[name] for name in names), dtype=np.int32, count=len(names))


def grown(array: np.ndarray, capacity: int, *, fill: float = 0) -> np.ndarray:
    """A copy of `array` with `capacity` rows, the new ones `fill` (zero: their pages stay unwritten, so they
    cost no resident memory until used)."""
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    if fill:
        grown[len(array) :] = fill
    grown[: len(array)] = array
    return grown


def with_room(column: np.ndarray, length: int, *, fill: float = 0, least: int = 1024) -> np.ndarray:
    """`column`, or a padded copy of at least `length` entries (geometric growth: amortised O(1)), and of
    `least` at first."""
    return column if length <= len(column) else grown(column, max(length, 2 * len(column), least), fill=fill)


def seen_text(text: str, metadata: Mapping[str, Any]) -> str:
    """What the encoder and the lexical index see: the cell's context (if any), then its text."""
    context = metadata.get("context")
    return f"{context} {text}" if isinstance(context, str) else text


def new_ids(count: int) -> list[str]:
    """Random 128-bit hex ids (one system call for the whole batch)."""
    pool = os.urandom(16 * count).hex()
    return [pool[32 * i : 32 * i + 32] for i in range(count)]
