"""Online leader clustering: each cell joins its most similar group or founds a new one.

A group's centroid is the normalised true mean of its members, kept as a running float64 sum.
`LeaderClustering.assign` is pure: it returns the group of each vector together with the new
state, so the caller commits both only after everything else in the write has succeeded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..cells.scopes import by_code
from ..cells.table import grown
from ..common.config import MemoryConfig
from ..kernels.grouping import add_by_group, centroids_from_sums, two_means
from ..kernels.jit import rows32
from ..kernels.quantize import quantized


class GroupState:
    """Per-group running sums, member counts and scopes; a group with count 0 is empty (deleted or merged).

    A group holds the cells of one scope (its `scope` code): scopes partition the memory, so a search or a
    sleep in one scope works on its groups alone, and what a search reads of them (`active_ids`, centroids and
    their codes, sizes) is cached per scope and made again only for the scopes a change touched. Slots live in
    buffers that grow geometrically, so founding or splitting one group at a time does not copy every sum; `sums`
    and `counts` are views of the slots in use. A write plans on a `part` (its scopes' groups alone) and the
    state takes the plan back with `absorb`, so a write costs its own scopes' groups, not the memory's.
    """

    def __init__(self, sums: np.ndarray, counts: np.ndarray, scopes: np.ndarray | None = None) -> None:
        self._sums, self._counts, self._n = sums, counts, len(counts)
        self._scopes = np.zeros(len(counts), dtype=np.int32) if scopes is None else scopes
        self._slots: dict[int, set[int]] = {}
        """Each scope's slots (the groups it was ever given)."""
        for scope, slots in by_code(self.scopes):
            self._slots[scope] = set(slots.tolist())
        self._views: dict[int | None, _View] = {}
        """What searches read of each scope's live groups (None: of every scope's), made on first use."""
        self._making = threading.Lock()
        """Views are made and refreshed by searches, which run at once under the engine's read lock."""
        self._touched: set[int] | None = None
        """The groups whose sums or counts changed since this state was made as a part (`part`); None: not a part."""

    @classmethod
    def empty(cls, dim: int) -> GroupState:
        return cls(np.zeros((0, dim), dtype=np.float64), np.zeros(0, dtype=np.int64))

    @property
    def sums(self) -> np.ndarray:
        return self._sums[: self._n]

    @property
    def counts(self) -> np.ndarray:
        return self._counts[: self._n]

    @property
    def n_slots(self) -> int:
        """Groups ever created (group ids are 0 … n_slots-1)."""
        return self._n

    @property
    def scopes(self) -> np.ndarray:
        """Each slot's scope code."""
        return self._scopes[: self._n]

    def n_active(self, scope: int | None = None) -> int:
        return len(self.active_ids(scope))

    def active_ids(self, scope: int | None = None) -> np.ndarray:
        """Ids of the non-empty groups (of `scope`; None: of every scope), ascending, cached until they change."""
        return self._view(scope).ids

    def active_centroids(self, scope: int | None = None) -> np.ndarray:
        """Centroids of the non-empty groups (of `scope`), row i for group `active_ids(scope)[i]` (cached; a
        write that leaves the set of groups as it was recomputes only the rows of the groups it changed)."""
        view = self._view(scope)
        with self._making:
            return view.centroids_of(self.sums)

    def active_centroid_codes(self, scope: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`active_centroids(scope)` as int8 codes and scales (`kernels.quantize.quantized`), cached alike: what a probe
        orders groups by, a quarter of the bytes of the float32 centroids, at the same recall. Made on first use:
        ingest, which reads the centroids after every chunk, never needs them."""
        view = self._view(scope)
        with self._making:
            return view.codes_of(self.sums)

    def active_sizes(self, scope: int | None = None) -> np.ndarray:
        """Cell counts of the non-empty groups (of `scope`), in `active_ids(scope)` order (cached)."""
        view = self._view(scope)
        if view.sizes is None:
            view.sizes = self.counts[view.ids]
        return view.sizes

    def _view(self, scope: int | None) -> _View:
        view = self._views.get(scope)
        if view is not None:
            return view
        with self._making:
            if scope is None:
                ids = np.flatnonzero(self.counts)
            else:
                slots = np.fromiter(self._slots.get(scope, ()), dtype=np.int64)
                ids = np.sort(slots[self.counts[slots] > 0])
            view = self._views[scope] = _View(ids)
            return view

    def copy(self) -> GroupState:
        """A copy to plan on (its cached views copied too: a plan reads the centroids at once)."""
        twin = GroupState(self.sums.copy(), self.counts.copy(), self.scopes.copy())
        twin._views = {scope: view.copy(view.ids) for scope, view in self._views.items()}
        twin._touched = None if self._touched is None else set(self._touched)
        return twin

    def part(self, scopes: Iterable[int]) -> GroupPart:
        """The live groups of these scopes as a state of their own, to plan a write or a sleep on: it costs
        their groups, not the memory's (`absorb` takes it back)."""
        wanted = sorted(set(scopes))
        ids = np.concatenate([self.active_ids(scope) for scope in wanted]) if wanted else np.zeros(0, np.int64)
        ids = np.sort(ids)
        own = GroupState(self.sums[ids], self.counts[ids], self.scopes[ids])  # indexing by an array copies
        own._touched = set()
        if len(wanted) == 1:  # one scope's cached centroids, brought up to date, serve the part too
            self.active_centroids(wanted[0])
            own._views[None] = own._views[wanted[0]] = self._views[wanted[0]].copy(np.arange(len(ids)))
        return GroupPart(own, ids, self.n_slots)

    def absorb(self, part: GroupPart) -> None:
        """Take back a part planned on (`part.state` as the plan left it): the sums and counts of the groups the
        plan changed, and the groups it founded, numbered from `part.first_new` (no group was founded here since the
        part was made). Only those are changed, so searches remake only their centroids."""
        own, held = part.state, len(part.ids)
        if self.n_slots != part.first_new:
            raise ValueError("groups were founded since this part was made; plan it again")
        assert own._touched is not None, "absorb takes a state made by part (or a copy of one)"
        self.new_slots(own.n_slots - held, own.scopes[held:])
        changed_here = np.fromiter(sorted(g for g in own._touched if g < held), dtype=np.int64)
        taken = np.r_[changed_here, np.arange(held, own.n_slots)]  # the groups the plan changed or founded
        changed = np.r_[part.ids, np.arange(part.first_new, self._n)][taken]
        self._sums[changed] = own.sums[taken]
        self._counts[changed] = own.counts[taken]
        self._changed(changed)  # the other groups' cached centroids stay as they are

    def add_members(self, group_ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors to the groups' sums (groups must exist)."""
        self._add(group_ids, vectors, 1)

    def remove_members(self, group_ids: np.ndarray, vectors: np.ndarray) -> None:
        """Subtract vectors from their groups; a group left empty gets an exact zero sum."""
        self._add(group_ids, vectors, -1)

    def _add(self, group_ids: np.ndarray, vectors: np.ndarray, sign: int) -> None:
        group_ids = np.asarray(group_ids, dtype=np.int64)
        if not len(group_ids):
            return
        add_by_group(self.sums, group_ids, rows32(vectors), float(sign))
        groups, counts = np.unique(group_ids, return_counts=True)
        self._counts[groups] += sign * counts
        emptied = groups[self._counts[groups] == 0]
        self._sums[emptied] = 0.0
        self._changed(groups)

    def _changed(self, groups: np.ndarray) -> None:
        """Drop what the change of these groups' sums made stale, in the views of their scopes and of every scope:
        a view whose set of live groups changed (one founded or emptied) is made again, else only its sizes and
        the centroid rows of these groups."""
        if not len(groups):
            return
        if self._touched is not None:
            self._touched.update(groups.tolist())
        for scope, members in [(None, groups), *by_code(self._scopes[groups], groups)]:
            view = self._views.get(scope)
            if view is not None and not view.refresh(members, self.counts):
                del self._views[scope]

    def move_members(self, source: int, target: int, vectors: np.ndarray) -> None:
        """Move vectors from one group to another (one sum, no grouping pass)."""
        total = vectors.sum(axis=0, dtype=np.float64)
        self._sums[source] -= total
        self._sums[target] += total
        self._counts[source] -= len(vectors)
        self._counts[target] += len(vectors)
        if self._counts[source] == 0:
            self._sums[source] = 0.0
        self._changed(np.asarray([source, target]))

    def set_scopes(self, groups: np.ndarray, scopes: np.ndarray) -> None:
        """Give existing groups their scopes (restoring cells from the store)."""
        groups = np.asarray(groups, dtype=np.int64)
        scopes = np.broadcast_to(np.asarray(scopes, dtype=np.int32), groups.shape)
        for scope, members in by_code(self._scopes[groups], groups):
            self._slots.get(scope, set()).difference_update(members.tolist())
            self._views.pop(scope, None)
        self._scopes[groups] = scopes
        self._register(groups, scopes)
        self._views.pop(None, None)

    def new_slots(self, count: int, scope: int | np.ndarray = 0) -> None:
        """Append `count` empty groups of `scope` (one code, or one per group)."""
        needed = self._n + count
        if needed > len(self._counts):
            capacity = max(needed, 2 * len(self._counts), 64)
            self._sums, self._counts, self._scopes = (
                grown(column[: self._n], capacity) for column in (self._sums, self._counts, self._scopes)
            )
        self._scopes[self._n : needed] = scope
        self._register(np.arange(self._n, needed), self._scopes[self._n : needed])
        self._n = needed

    def _register(self, groups: np.ndarray, scopes: np.ndarray) -> None:
        """Note these groups among their scopes' slots (their views, made without them, are dropped)."""
        for scope, members in by_code(scopes, groups):
            self._slots.setdefault(scope, set()).update(members.tolist())
            self._views.pop(scope, None)


class _View:
    """What searches read of one scope's live groups (or every scope's): their ids, and, made on first use, their
    sizes, centroids and centroid codes; `stale` names the groups whose sums changed since (same members)."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids
        self.sizes: np.ndarray | None = None
        self.centroids: np.ndarray | None = None
        self.codes: tuple[np.ndarray, np.ndarray] | None = None
        self.stale: set[int] = set()

    def copy(self, ids: np.ndarray) -> _View:
        """This view over other ids (the same groups numbered otherwise), its arrays copied."""
        twin = _View(ids)
        if self.centroids is not None and not self.stale:
            twin.centroids = self.centroids.copy()
            if self.codes is not None:
                twin.codes = (self.codes[0].copy(), self.codes[1].copy())
        return twin

    def refresh(self, groups: np.ndarray, counts: np.ndarray) -> bool:
        """Note a change of these groups' sums; False when the set of live groups changed (the view is void)."""
        at = np.searchsorted(self.ids, groups).clip(max=max(len(self.ids) - 1, 0))
        if not counts[groups].all() or not len(self.ids) or (self.ids[at] != groups).any():
            return False
        self.sizes = None
        if self.centroids is not None:
            self.stale.update(groups.tolist())
        return True

    def centroids_of(self, sums: np.ndarray) -> np.ndarray:
        if self.centroids is None:
            self.centroids, self.codes = centroids_from_sums(sums, self.ids), None
        elif self.stale:
            changed = np.fromiter(self.stale, dtype=np.int64, count=len(self.stale))
            at = np.searchsorted(self.ids, changed)
            self.centroids[at] = centroids_from_sums(sums, changed)
            if self.codes is not None:
                self.codes[0][at], self.codes[1][at] = quantized(self.centroids[at])
        self.stale.clear()
        return self.centroids

    def codes_of(self, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        centroids = self.centroids_of(sums)
        if self.codes is None:
            self.codes = quantized(centroids)
        return self.codes


@dataclass(frozen=True)
class GroupPart:
    """Some scopes' live groups as a state of their own (`state`): its group i < len(ids) is group `ids[i]` of the
    whole, and a group it founds, i >= len(ids), becomes group `first_new + i - len(ids)`."""

    state: GroupState
    ids: np.ndarray
    first_new: int

    def whole(self, local: np.ndarray) -> np.ndarray:
        """The whole state's ids of these groups of the part."""
        local = np.asarray(local, dtype=np.int64)
        held = len(self.ids)
        if not held:
            return self.first_new + local
        found: np.ndarray = np.where(local < held, self.ids[local.clip(max=held - 1)], self.first_new + local - held)
        return found

    def local(self, whole: np.ndarray) -> np.ndarray:
        """The part's ids of these groups of the whole (each one of the part's, or founded after `first_new`)."""
        whole = np.asarray(whole, dtype=np.int64)
        found: np.ndarray = np.where(
            whole < self.first_new, np.searchsorted(self.ids, whole), len(self.ids) + whole - self.first_new
        )
        return found

    def with_state(self, state: GroupState) -> GroupPart:
        return GroupPart(state, self.ids, self.first_new)


Members = Callable[[int], tuple[np.ndarray, np.ndarray]]
"""The rows and vectors of an existing group's cells (before the write being planned)."""


@dataclass(frozen=True)
class Assignment:
    """A planned write: the group of each new vector, the existing cells that splits move, the new state."""

    groups: np.ndarray
    moved_rows: np.ndarray
    moved_to: np.ndarray
    state: GroupState


@dataclass(frozen=True)
class Placement:
    """A planned write in the whole state's group ids: each new cell's group, the stored cells it moves and
    where, and the part (its scopes' groups as the write leaves them) that the state absorbs."""

    groups: np.ndarray
    moved_rows: np.ndarray
    moved_to: np.ndarray
    part: GroupPart

    @classmethod
    def of(cls, plan: Assignment, part: GroupPart) -> Placement:
        """`plan`, made on `part.state`, in the whole state's ids."""
        done = part.with_state(plan.state)
        return cls(done.whole(plan.groups), plan.moved_rows, done.whole(plan.moved_to), done)


@dataclass(frozen=True, kw_only=True)
class LeaderClustering:
    """Assigns unit vectors to groups by the leader rule, founding groups up to `target(N)` and
    splitting any group that grows past `capacity(N)` cells after each chunk while fewer than
    `bound(N)` groups exist (see `MemoryConfig`)."""

    join_threshold: float
    chunk: int
    target: Callable[[int], int]
    capacity: Callable[[int], int] = lambda cells: 2**62
    bound: Callable[[int], int] = lambda cells: 2**62

    @classmethod
    def of(cls, config: MemoryConfig) -> LeaderClustering:
        """The clustering a memory of `config` writes with."""
        return cls(
            join_threshold=config.join_threshold,
            chunk=config.ingest_chunk,
            target=config.target_groups,
            capacity=config.group_capacity,
            bound=config.group_bound,
        )

    def assign(
        self,
        state: GroupState,
        vectors: np.ndarray,
        *,
        members: Members | None = None,
        scopes: np.ndarray | None = None,
        copy: bool = True,
    ) -> Assignment:
        """Groups for `vectors` (unit rows, in order), splits included; nothing is changed in place (but `state`
        itself, planned on with `copy=False`: a caller's throwaway part, `GroupState.part`). Each vector joins or
        founds a group of its scope (`scopes`: a code per vector; all 0 when None), and the target, capacity and
        bound are those of its scope's size."""
        plan = _Plan(state.copy() if copy else state, vectors, members)
        codes = np.zeros(len(vectors), dtype=np.int32) if scopes is None else scopes
        for scope in dict.fromkeys(codes.tolist()):
            positions = np.flatnonzero(codes == scope)
            whole = len(positions) == len(vectors)  # one scope: its chunks are slices, read without a gather
            cells = int(state.counts[state.scopes == scope].sum())
            for start in range(0, len(positions), self.chunk):
                stop = min(start + self.chunk, len(positions))
                part = slice(start, stop) if whole else positions[start:stop]
                cells += stop - start
                plan.groups[part] = self._assign_chunk(plan.state, vectors[part], self.target(cells), scope)
                if members is not None:
                    done = slice(0, stop) if whole else positions[:stop]
                    plan.split_oversized(self.capacity(cells), self.bound(cells), scope, done=done)
        return plan.result()

    def _assign_chunk(self, state: GroupState, block: np.ndarray, target: int, scope: int) -> np.ndarray:
        """Vectorised against the chunk-start centroids of the scope; only cells that found no group loop."""
        existing = state.active_ids(scope)
        groups: np.ndarray
        if len(existing):
            similarity = block @ state.active_centroids(scope).T
            best_column = similarity.argmax(axis=1)
            best_similarity = similarity[np.arange(len(block)), best_column]
            groups = existing[best_column]
        else:
            best_similarity = np.full(len(block), -np.inf)
            groups = np.full(len(block), -1, dtype=np.int64)
        loners = np.flatnonzero(best_similarity <= self.join_threshold)
        if len(loners):
            self._place_loners(state, block, loners, groups, best_similarity, max(1, target), scope)
        state.add_members(groups, block)
        return groups

    def _place_loners(
        self,
        state: GroupState,
        block: np.ndarray,
        loners: np.ndarray,
        groups: np.ndarray,
        best_similarity: np.ndarray,
        target: int,
        scope: int,
    ) -> None:
        """Leader rule inside the chunk, one founder at a time, each step vectorised.

        The first unplaced loner founds a group and every later loner closer to it than the
        threshold joins it. At the target count, the remaining loners keep their nearest group.
        """
        room = target - state.n_active(scope)
        pending = loners
        founders: list[int] = []
        while len(pending) and len(founders) < room:
            founder, rest = pending[0], pending[1:]
            groups[founder] = state.n_slots + len(founders)
            joins = block[rest] @ block[founder] > self.join_threshold
            groups[rest[joins]] = groups[founder]
            founders.append(founder)
            pending = rest[~joins]
        if len(pending) and founders:  # at the target: the nearest of the existing and the new groups
            similarity = block[pending] @ block[founders].T
            nearest = similarity.argmax(axis=1)
            closer = similarity[np.arange(len(pending)), nearest] > best_similarity[pending]
            groups[pending[closer]] = state.n_slots + nearest[closer]
        if founders:
            state.new_slots(len(founders), scope)


class _Plan:
    """The state of one `assign` call: new vectors' groups and existing cells moved by splits."""

    def __init__(self, state: GroupState, vectors: np.ndarray, members: Members | None) -> None:
        self.state = state
        self.vectors = vectors
        self.groups = np.empty(len(vectors), dtype=np.int64)
        self.members = members
        self.moved: dict[int, int] = {}
        self.moved_vectors: dict[int, np.ndarray] = {}
        self.slots_before = state.n_slots

    def split_oversized(self, capacity: int, bound: int, scope: int, *, done: np.ndarray | slice) -> None:
        """Split every group of `scope` above `capacity` in two until none is (or `bound` groups of it exist);
        `done`: the positions of this write assigned so far (a slice from 0 when they are all its first ones, read
        in place rather than gathered)."""
        while self.state.n_active(scope) < bound:
            over = np.flatnonzero((self.state.counts > capacity) & (self.state.scopes == scope))
            if not len(over):
                return
            over = over[: bound - self.state.n_active(scope)]
            splitting = np.zeros(self.state.n_slots, dtype=bool)
            splitting[over] = True
            picked = np.flatnonzero(splitting[self.groups[done]])  # this write's cells in those groups, once per round
            written = done[picked] if isinstance(done, np.ndarray) else picked
            for group in over.tolist():
                self._split(group, written[self.groups[written] == group], scope)

    def _split(self, group: int, new: np.ndarray, scope: int) -> None:
        """Split `group` (its stored cells and `new`, the positions of this write in it) in two."""
        rows, vectors = self._existing_members(group)
        together = np.concatenate([vectors, self.vectors[new]])
        second = split_in_two(together)
        slot = self.state.n_slots
        self.state.new_slots(1, scope)
        self.state.move_members(group, slot, together[second])
        for row, vector in zip(rows[second[: len(rows)]].tolist(), vectors[second[: len(rows)]]):
            self.moved[row] = slot
            self.moved_vectors[row] = vector
        self.groups[new[second[len(rows) :]]] = slot

    def _existing_members(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """Cells stored before this write that are in `group` now (splits in this plan applied)."""
        assert self.members is not None
        if group < self.slots_before:
            rows, vectors = self.members(group)
        else:  # founded in this write: only cells that splits moved here
            rows, vectors = np.zeros(0, dtype=np.int64), self.vectors[:0]
        stay = np.asarray([self.moved.get(r, group) == group for r in rows.tolist()], dtype=bool)
        original = set(rows.tolist())
        moved_in = [r for r, g in self.moved.items() if g == group and r not in original]
        rows = np.concatenate([rows[stay], np.asarray(moved_in, dtype=np.int64)])
        extra = np.stack([self.moved_vectors[r] for r in moved_in]) if moved_in else vectors[:0]
        return rows, np.concatenate([vectors[stay], extra]).astype(np.float32)

    def result(self) -> Assignment:
        rows = np.fromiter(self.moved, dtype=np.int64, count=len(self.moved))
        to = np.fromiter(self.moved.values(), dtype=np.int64, count=len(self.moved))
        return Assignment(self.groups, rows, to, self.state)


NEAREST_AMONG = 32
"""Past `EXACT_STEP_UP_TO` groups, a k-means step looks for each cell's nearest centroid among the centroids
nearest its own group's (its group's included) instead of all of them."""
EXACT_STEP_UP_TO = 2048
"""Groups up to which a k-means step scores every cell against every centroid: beyond, that product (every cell
against every centroid) would cost a step more than the write that grouped them."""


def nearest_groups(
    vectors: np.ndarray, current: np.ndarray, state: GroupState, scope: int | None = None, *, block: int = 8192
) -> np.ndarray:
    """Each row's most similar live group of `scope` (None: of any), one k-means assignment step (`current`:
    each row's group now), `block` rows at a time; past `EXACT_STEP_UP_TO` groups, among the `NEAREST_AMONG`
    groups whose centroids are nearest its current group's (among all, for a row whose group is empty now)."""
    live, centroids = state.active_ids(scope), state.active_centroids(scope)
    nearest = np.empty(len(vectors), dtype=np.int64)
    if not len(vectors):
        return nearest
    if len(live) <= EXACT_STEP_UP_TO:
        for start in range(0, len(vectors), block):
            nearest[start : start + block] = live[np.argmax(vectors[start : start + block] @ centroids.T, axis=1)]
        return nearest
    near = np.empty((len(live), NEAREST_AMONG), dtype=np.int64)
    for start in range(0, len(live), block):
        similarity = centroids[start : start + block] @ centroids.T
        near[start : start + block] = np.argpartition(-similarity, NEAREST_AMONG - 1, axis=1)[:, :NEAREST_AMONG]
    position = np.searchsorted(live, current).clip(max=len(live) - 1)
    emptied = live[position] != current  # a group a previous step emptied: such rows score every centroid
    if emptied.any():
        nearest[emptied] = live[np.argmax(vectors[emptied] @ centroids.T, axis=1)]
        position[emptied] = len(live)  # past every group's rows below
    order = np.argsort(position, kind="stable")
    bounds = np.searchsorted(position[order], np.arange(len(live) + 1))
    for group in np.flatnonzero(np.diff(bounds)).tolist():
        members = order[bounds[group] : bounds[group + 1]]
        candidates = near[group]
        nearest[members] = live[candidates[np.argmax(vectors[members] @ centroids[candidates].T, axis=1)]]
    return nearest


def kmeans_steps(
    state: GroupState,
    parts: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    rounds: int,
    settled: float,
    scope: int | None = None,
    block: int = 8192,
) -> list[np.ndarray]:
    """Up to `rounds` k-means steps over cells given in parts, each (vectors, their groups now), within the
    groups of `scope` (None: of any): every cell to its nearest centroid (`nearest_groups`), then `state`'s
    sums moved with the cells that changed group; fewer steps once at most a `settled` share of the cells
    moves. Returns each part's groups after the steps."""
    groups = [current.copy() for _, current in parts]
    cells = sum(len(current) for current in groups)
    for _ in range(rounds):
        nearest = [
            nearest_groups(vectors, current, state, scope, block=block) for (vectors, _), current in zip(parts, groups)
        ]
        moved = 0
        for (vectors, _), current, to in zip(parts, groups, nearest):
            changed = np.flatnonzero(current != to)
            state.remove_members(current[changed], vectors[changed])
            state.add_members(to[changed], vectors[changed])
            current[changed] = to[changed]
            moved += len(changed)
        if moved <= settled * cells:
            break
    return groups


def split_in_two(vectors: np.ndarray, *, iterations: int = 8) -> np.ndarray:
    """A 2-means split of unit rows (`kernels.grouping.two_means`); True marks the second part. Rows that 2-means
    cannot part (identical vectors) are split evenly, which keeps groups bounded.

    Hand-written rather than scikit-learn's KMeans, whose per-call overhead dominates a split this small: ingest
    splits hundreds of groups.
    """
    part = two_means(rows32(vectors), iterations)
    if not part.any():
        part = np.arange(len(vectors)) >= len(vectors) // 2
    return part
