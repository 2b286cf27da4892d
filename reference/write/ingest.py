"""Writing cells: the write path beside `search/` (reading) and `sleep/` (consolidating).

A write's arguments are checked and encoded outside the lock (`checked_cells`, making `NewCells`); under the write lock,
the clustering plans the cells' groups within their scopes and the state commits them: new cells with
`EngineState.commit_write`, cells written again under ids the memory holds (`update`, an upsert) with
`EngineState.commit_replace`, grouped as if their old versions were gone and stored in one replacing write.
A write of at least a quarter of the cells it leaves settles the memory (`settled`); any other write refines a
window of the stored cells instead (`refining`), so that a memory built write by write stays settled at a cost per cell
written. A large write pauses the garbage collector and trims the heap after it (`large_write`).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from typing import Any

import numpy as np

from ..cells.entities import extract_entities
from ..cells.episodes import inferred_names
from ..cells.scopes import by_code
from ..cells.table import CellBatch, CellRecord, ConflictNote, new_ids, seen_text
from ..common import collector
from ..common.config import MemoryConfig
from ..common.errors import InvalidInputError
from ..common.validation import (
    check_episode,
    check_free,
    check_importance,
    check_metadata,
    check_new_ids,
    check_same_length,
    check_scope,
    check_texts_per_item,
    check_timestamp,
    per_item,
    unit_rows,
)
from ..encoders import Encoder
from ..groups.clustering import Assignment, GroupPart, LeaderClustering, Members, Placement, kmeans_steps
from ..score.scoring import Clock
from ..state.calibration import K
from ..state.engine import EngineState
from .history import kept_of


@dataclass(frozen=True)
class NewCells:
    """Checked, encoded cells to write (one entry per cell in every list)."""

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray
    kinds: list[str]
    importance: list[float]
    timestamps: list[float]
    metadata: list[dict[str, Any]]
    scopes: list[str]
    entities: list[frozenset[str]]
    episodes: list[str] | None = None
    """None: inferred from the time between writes when written (`episodes.py`)."""
    histories: list[list[dict[str, Any]]] = field(default_factory=list)
    conflicts: list[list[ConflictNote]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: Sequence[int]) -> NewCells:
        """The cells at these positions (these cells themselves when that is all of them, in order)."""
        if list(positions) == list(range(len(self))):
            return self

        def pick(values: Sequence[Any]) -> list[Any]:
            return [values[i] for i in positions]

        return NewCells(
            pick(self.ids),
            pick(self.texts),
            self.vectors[list(positions)],
            pick(self.kinds),
            pick(self.importance),
            pick(self.timestamps),
            pick(self.metadata),
            pick(self.scopes),
            pick(self.entities),
            None if self.episodes is None else pick(self.episodes),
            pick(self.histories) if self.histories else [],
            pick(self.conflicts) if self.conflicts else [],
        )


def checked_cells(
    texts: list[str],
    *,
    vectors: Any,
    kind: str,
    importance: float | Sequence[float] | None,
    metadata: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    timestamps: Sequence[float | datetime] | None,
    ids: Sequence[str] | None,
    context: str | Sequence[str] | None,
    episode: str | Sequence[str] | None,
    scope: str | Sequence[str],
    config: MemoryConfig,
    encoder: Encoder,
    clock: Clock,
    taken: Mapping[str, int] | None,
) -> NewCells:
    """`CellularMemory.add`'s arguments (its `texts` checked already) as cells to write: checked, so that a mistake
    raises before anything is written, and encoded unless `vectors` are given. Ids in `taken` are refused here, and
    again under the lock (`commit`)."""
    count = len(texts)
    for name, values in (("vectors", vectors), ("timestamps", timestamps), ("ids", ids)):
        check_same_length(name, values, count)
    importances = per_item("importance", importance, count, config.importance_of(kind), check_importance)
    metadatas = per_item("metadata", metadata, count, dict[str, Any](), check_metadata)
    if context is not None:
        contexts = check_texts_per_item("context", context, count)
        metadatas = [{**m, "context": c} for m, c in zip(metadatas, contexts)]
    times = [clock()] * count if timestamps is None else [check_timestamp(t) for t in timestamps]
    check_new_ids(ids, taken=taken)
    if vectors is None:
        vectors = encoder.encode([seen_text(text, meta) for text, meta in zip(texts, metadatas)])
    return NewCells(
        ids=list(ids) if ids is not None else new_ids(count),
        texts=texts,
        vectors=unit_rows(vectors, dim=encoder.dim),
        kinds=[kind] * count,
        importance=importances,
        timestamps=times,
        metadata=metadatas,
        scopes=per_item("scope", scope, count, "", check_scope),
        entities=[extract_entities(text) for text in texts],
        episodes=None if episode is None else per_item("episode", episode, count, "", check_episode),
    )


SETTLE_SHARE = 0.25
"""A write settles the memory when its cells are at least this share of the cells it leaves, so that settling
(up to `sleep_rounds` steps over every cell) costs it in proportion to its own size: a bulk load settles, a turn's
few cells never do."""
REFINED_PER_CELL = 4
"""Stored cells a write that does not settle refines per cell it writes (`refining`): enough that a memory built a
few cells at a time keeps groups that fit their cells nearly as well as one written at once, at a cost per write
that stays in proportion to its own size (settling only at each growth of the memory would make the rare write
that settles slow)."""


def settle_due(config: MemoryConfig, cells: int, written: int) -> bool:
    """Whether a write of `written` cells that leaves the memory with `cells` settles it: they are at least
    `SETTLE_SHARE` of them, in a memory kept settled (`_kept_settled`)."""
    return written >= SETTLE_SHARE * cells and _kept_settled(config, cells)


def _kept_settled(config: MemoryConfig, cells: int) -> bool:
    """Whether writes settle or refine a memory of `cells` cells: adaptive grouping with `settle` on, past the size
    searched flat (where groups do not decide what a search reads)."""
    return config.settle and config.adaptive and not config.flat_is_cheaper(K, cells)


def refining(state: EngineState, config: MemoryConfig, scope: int, written: int) -> np.ndarray:
    """The live rows of `scope` that a write of `written` cells into it that does not settle refines (ascending):
    `REFINED_PER_CELL` rows per cell written, from where the last write's window ended, round the scope's rows
    (none where settling is off or the scope is searched flat). Round after round every stored cell is stepped
    again toward its nearest centroid, as the centroids move with what is written."""
    live = state.scope_rows(scope)
    if not len(live) or not _kept_settled(config, len(live)):
        return np.zeros(0, dtype=np.int64)
    start = state.refine_start(scope) % len(live)
    span = min(len(live), REFINED_PER_CELL * written)
    state.commit_refine_start(scope, (start + span) % len(live))
    return np.sort(live[(start + np.arange(span)) % len(live)])


def commit(
    state: EngineState,
    clustering: LeaderClustering,
    config: MemoryConfig,
    cells: NewCells,
    *,
    upsert: bool,
    keep_episode: bool,
    now: float,
) -> None:
    """Write checked cells (under the write lock): those under ids the memory holds are written again
    (`upsert`; only a cell of the same scope: an upsert never replaces another scope's cell), the others are
    new and settle or refine the memory (`settle_due`, `refining`). A refused write changes nothing."""
    row_of = state.table.row_of
    if not upsert:
        check_free(cells.ids, row_of)
    stored = [i for i, cell_id in enumerate(cells.ids) if cell_id in row_of]
    fresh = [i for i, cell_id in enumerate(cells.ids) if cell_id not in row_of]
    if stored:
        again = cells.take(stored)
        rows = state.rows_of(again.ids)
        if (state.table.scope[rows] != state.scope_codes(again.scopes)).any():
            raise InvalidInputError(
                "an upsert names ids that are taken outside its scope; a scope only replaces its own cells: "
                "choose other ids"
            )
        rewrite_kept(state, clustering, again, now=now, keep_episode=keep_episode)
    if fresh:
        new = cells.take(fresh)
        rounds, stepped = {}, [np.zeros(0, dtype=np.int64)]
        for scope, count in zip(*np.unique(state.scope_codes(new.scopes), return_counts=True)):
            scope, count = int(scope), int(count)
            if settle_due(config, state.scopes.count(scope) + count, count):  # every cell of the scope
                rounds[scope] = config.sleep_rounds
                stepped.append(state.scope_rows(scope))
            elif len(window := refining(state, config, scope, count)):
                rounds[scope] = 1
                stepped.append(window)
        write(state, clustering, config, new, rounds=rounds, rows=np.unique(np.concatenate(stepped)))


def cells_of(records: Sequence[CellRecord], *, histories: list[list[dict[str, Any]]] | None = None) -> NewCells:
    """Records as cells to write again (their conflicts kept; `histories`, when given, replacing theirs)."""
    return NewCells(
        ids=[r.id for r in records],
        texts=[r.text for r in records],
        vectors=np.stack([r.vector for r in records]),
        kinds=[r.kind for r in records],
        importance=[r.importance for r in records],
        timestamps=[r.timestamp for r in records],
        metadata=[r.metadata for r in records],
        scopes=[r.scope for r in records],
        entities=[extract_entities(r.text) for r in records],
        episodes=[r.episode for r in records],
        histories=histories or [],
        conflicts=[r.conflicts for r in records],
    )


def rewrite_kept(
    state: EngineState, clustering: LeaderClustering, cells: NewCells, *, now: float, keep_episode: bool
) -> None:
    """Cells written again under ids the memory holds (under the write lock), keeping what `history.kept_of` says
    a cell keeps of its old self, and, with `keep_episode`, its episode."""
    rows = state.rows_of(cells.ids)
    old = state.records(rows.tolist())
    kept = kept_of(old, cells.texts, now)
    cells = replace(
        cells,
        histories=cells.histories or kept.histories,
        conflicts=kept.conflicts,
        episodes=[r.episode for r in old] if keep_episode else cells.episodes,
    )
    rewrite(state, clustering, rows, cells)


def write(
    state: EngineState,
    clustering: LeaderClustering,
    config: MemoryConfig,
    cells: NewCells,
    *,
    rounds: Mapping[int, int],
    rows: np.ndarray,
) -> None:
    """Commit new cells (their ids are free), grouped on their scopes' groups alone (`GroupState.part`), and
    settled (`settled`: `rounds` k-means steps per scope, over its new cells and its stored `rows`); an episode
    left to inference continues that of the scope's cell written last when it comes within `episode_gap_s`
    seconds."""
    scopes = state.scope_codes(cells.scopes)
    if cells.episodes is None:
        names = [""] * len(cells)
        for scope, positions in by_code(scopes):
            mine = positions.tolist()
            inferred = inferred_names(
                [cells.ids[i] for i in mine],
                [cells.timestamps[i] for i in mine],
                state.last_written(scope),
                config.episode_gap_s,
            )
            for i, name in zip(mine, inferred):
                names[i] = name
        cells = replace(cells, episodes=names)
    part = state.groups.part(np.unique(scopes).tolist())
    plan = clustering.assign(part.state, cells.vectors, members=_members(state, part), scopes=scopes, copy=False)
    if rounds:
        plan = settled(state, part, plan, cells.vectors, scopes, rows, rounds=rounds, share=config.sleep_settled)
    placed = Placement.of(plan, part)
    state.commit_write(_batch(cells, placed.groups), placed, cells.entities)


def _members(state: EngineState, part: GroupPart, leaving: set[int] | None = None) -> Members:
    """The rows and vectors of a group of `part` (by its id there), but those `leaving`."""

    def members(group: int) -> tuple[np.ndarray, np.ndarray]:
        found, vectors = state.members(int(part.whole(np.asarray([group]))[0]))
        if not leaving:
            return found, vectors
        staying = np.fromiter((row not in leaving for row in found.tolist()), dtype=bool, count=len(found))
        return found[staying], vectors[staying]

    return members


def settled(
    state: EngineState,
    part: GroupPart,
    plan: Assignment,
    vectors: np.ndarray,
    scopes: np.ndarray,
    rows: np.ndarray,
    *,
    rounds: Mapping[int, int],
    share: float,
) -> Assignment:
    """`plan` (made on `part.state`) and then k-means steps over the stored `rows` (live, ascending), those the
    plan's splits move and the new cells (`vectors`, of scopes `scopes`), within each scope's planned groups
    (`kmeans_steps`: up to `rounds[scope]`, fewer once at most a `share` of the cells moves). Online
    grouping assigns a cell against the centroids of its moment, which move as groups fill and split; the steps
    bring the groups to where a sleep pass would, so that a probe reads fewer cells for the same recall, at the
    cost of a slower write. Sleep does more (merges, splits, conflict judging)."""
    groups = plan.state  # the plan's own copy
    live = np.union1d(rows, plan.moved_rows)
    live_scopes = state.table.scope[live]
    before = part.local(state.table.group[live])
    now = before.copy()  # after the plan's splits
    now[np.searchsorted(live, plan.moved_rows)] = plan.moved_to
    stored = state.index.vectors_of(live)
    stored_to, new_to = now.copy(), plan.groups.copy()
    for scope, steps in rounds.items():
        mine, theirs = _in(live_scopes, scope), _in(scopes, scope)
        stored_to[mine], new_to[theirs] = kmeans_steps(
            groups,
            [(stored[mine], now[mine]), (vectors[theirs], plan.groups[theirs])],
            rounds=steps,
            settled=share,
            scope=scope,
        )
    moved = stored_to != before
    return Assignment(new_to, live[moved], stored_to[moved], groups)


def _in(codes: np.ndarray, scope: int) -> slice | np.ndarray:
    """The positions of `codes` equal to `scope`: every one as a slice (no copy of what it selects)."""
    mask: np.ndarray = codes == scope
    return slice(None) if mask.all() else mask


def rewrite(state: EngineState, clustering: LeaderClustering, rows: np.ndarray, cells: NewCells) -> None:
    """Commit cells written again under the ids `rows` hold now, grouped as if their old versions were gone
    (no split moves them; their groups' sums lose them first)."""
    scopes = state.scope_codes(cells.scopes)
    part = state.groups.part(np.unique(np.r_[scopes, state.table.scope[rows]]).tolist())
    part.state.remove_members(part.local(state.table.group[rows]), state.index.vectors_of(rows))
    members = _members(state, part, leaving=set(rows.tolist()))
    plan = clustering.assign(part.state, cells.vectors, members=members, scopes=scopes, copy=False)
    placed = Placement.of(plan, part)
    state.commit_replace(rows, _batch(cells, placed.groups), placed, cells.entities)


def _batch(cells: NewCells, groups: np.ndarray) -> CellBatch:
    assert cells.episodes is not None
    count = len(cells)
    none: Sequence[Sequence[Any]] = [()] * count  # one shared empty tuple: the table copies what it keeps
    return CellBatch(
        ids=cells.ids,
        texts=cells.texts,
        vectors=cells.vectors,
        groups=groups,
        kinds=cells.kinds,
        importance=np.asarray(cells.importance, dtype=np.float64),
        timestamps=np.asarray(cells.timestamps, dtype=np.float64),
        access=np.zeros(count, dtype=np.int64),
        metadata=cells.metadata,
        conflicts=cells.conflicts or none,
        episodes=cells.episodes,
        scopes=cells.scopes,
        histories=cells.histories or none,
    )


@cache
def _malloc_trim() -> Any:
    """glibc's `malloc_trim` among the symbols the process has loaded, looked up on first use and only on Linux
    (elsewhere None): importing the engine loads no C library, so it imports wherever Python runs."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        loaded = ctypes.CDLL(None)
    except OSError:  # a Python without a dynamic loader (a static build): nothing to trim with
        return None
    return getattr(loaded, "malloc_trim", None)


@contextmanager
def large_write(large: bool) -> Iterator[None]:
    """Around a write (`large`: of more than a chunk of cells), pause Python's cyclic garbage collector during it
    and hand the pages it freed back to the OS after it (glibc's `malloc_trim`; elsewhere nothing).

    The pause is the process's (`common.collector`). The chunk temporaries (each chunk's scores against every
    centroid) are freed into the heap, which would keep them resident without the trim."""
    if not large:
        yield
        return
    with collector.paused():
        yield
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
