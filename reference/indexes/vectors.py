"""Per-group indexes of cell vectors: the second search stage runs over one group at a time.

`NumpyGroupIndex` keeps each group's cells as int8 codes in one contiguous block (IVF-style, with the
float32 vectors kept once by row for exact scores); `ChromaGroupIndex` keeps one ephemeral Chroma
collection per group (`{ns}_grp_{id}`), rebuilt from the master store each session and bounded in number
(see its docstring). Both answer `search(group, query, k)` with (rows, cosines) and `vectors_of(rows)`:
the NumPy index holds the memory's only copy of the vectors, the Chroma index reads the cell table's.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from ..cells.table import CellTable, with_room
from ..common.chroma import ephemeral_client, guarded
from ..kernels.arena import append_rows, copy_segments
from ..kernels.jit import rows32
from ..kernels.probe import probe_for, vector_probe_for
from ..kernels.scan import scan

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection
from ..common.errors import BackendUnavailableError


class GroupIndex(Protocol):
    def add(self, groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray) -> None: ...
    def remove(self, groups: np.ndarray, rows: np.ndarray) -> None: ...
    def members(self, group: int) -> np.ndarray: ...
    def search(self, group: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...
    def vectors_of(self, rows: np.ndarray) -> np.ndarray: ...
    def close(self) -> None: ...


MIN_SEGMENT = 8
"""Rows a group's first segment holds."""
MIN_ARENA = 1024
"""Rows of the smallest arena."""


def similarities(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Inner product of one query with every row (cosine, for unit vectors).

    `np.vecdot` streams the rows once; on rows that are not in cache, which is the usual case for a
    group block, it is faster than BLAS gemv (`rows @ query`).
    """
    scores: np.ndarray = np.vecdot(rows, query)
    return scores


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first."""
    if len(scores) > 64 and k < len(scores):  # a partition pays off only beyond a few dozen scores
        positions = np.argpartition(-scores, k - 1)[:k]
        return positions[np.argsort(-scores[positions], kind="stable")]
    return np.argsort(-scores, kind="stable")[:k]


def one_run(rows: np.ndarray) -> bool:
    """Whether these rows are consecutive and ascending (one slice of a by-row array)."""
    return bool((np.diff(rows) == 1).all())


class Probed(NamedTuple):
    """What a probe found: rows and their exact cosines, best first, and the bytes it read (int8 codes
    of centroids and cells, and the float32 vectors it rescored)."""

    rows: np.ndarray
    scores: np.ndarray
    bytes_read: int


class ProbedMany(NamedTuple):
    """What a probe of several queries found: each query's rows and exact cosines, best first, one query's after
    another's in `rows` and `scores` (query i's at `ends[i - 1] : ends[i]`, from 0 for the first), and the bytes
    they read in all (as `Probed`)."""

    rows: np.ndarray
    scores: np.ndarray
    ends: np.ndarray
    bytes_read: int


class ProbeLimits(NamedTuple):
    """Where budget probing stops (`kernels.probe.probe_for`): it keeps the best `depth` cells, reads at least `floor`
    cells and at most `budget` (whole groups), and past the floor reads a group only if its centroid scores
    at least the k-th best cell so far minus `margin`."""

    depth: int
    floor: int
    budget: int
    margin: float


VectorProbe = Callable[[np.ndarray, np.ndarray, np.ndarray, int, int, int, float], tuple[int, int]]
"""A one-vector probe with its memory's arrays bound (`NumpyGroupIndex.vector_probe`): given a query vector, the
buffers for its rows and scores, k, and the limits' floor, budget and margin; returns how many cells it wrote (-1:
a vector with no direction) and the bytes it read."""


class NumpyGroupIndex:
    """Search inside each group over one arena of int8 codes (IVF-style, scalar-quantized; the default backend),
    with an exact float32 rescoring of the best.

    Group g owns the contiguous slots `starts[g] : starts[g] + sizes[g]` of the arena: each slot holds a cell's
    codes (`codes`, one int8 per dimension), its scale (`scales`, cell vector ≈ scale · codes) and its row
    (`rows`), with room to grow up to `capacities[g]`. A group that outgrows its segment moves to a segment
    twice as large at the end of the arena; a removal moves the group's last slot into the gap. When the arena
    is full, or segments left behind by moves fill a quarter of its used part, it is rebuilt compactly; the
    unwritten rest of a segment costs no resident memory (the arena is zeroed lazily by the OS). The float32
    vectors are kept once, by row (`by_row`): flat search reads them in one pass, and a probe rescores its
    best candidates from them (`kernels.probe.probe_for`), so every score a search returns is exact. The cell table
    keeps no copy with this backend.

    The codes are a quarter of the float32 bytes, and a probe's scan over them costs less than half as much;
    rescoring the best `depth + k` by the float32 vectors keeps the recall of a float32 scan.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.codes = np.zeros((0, dim), dtype=np.int8)
        self.scales = np.zeros(0, dtype=np.float32)
        self.rows = np.zeros(0, dtype=np.int64)
        self.by_row = np.zeros((0, dim), dtype=np.float32)
        self.starts = np.zeros(0, dtype=np.int64)
        self.sizes = np.zeros(0, dtype=np.int64)
        self.capacities = np.zeros(0, dtype=np.int64)
        self._end = 0
        self._abandoned = 0
        self._slot_of = np.zeros(0, dtype=np.int64)
        self._probe_vector = vector_probe_for(dim)
        """The one-vector probe's kernel, looked up once."""

    def add(self, groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Index new rows' vectors in their groups. The first write into an empty index keeps `vectors` as its
        store of vectors by row (no copy: faulting in a fresh copy of a large write's vectors costs more than the
        write), so callers pass arrays they do not write to afterwards."""
        if not len(rows):
            return
        vectors = rows32(vectors)
        self._slot_of = with_room(self._slot_of, int(rows.max()) + 1)
        in_order = one_run(rows)
        if not len(self.by_row) and in_order and rows[0] == 0 and vectors.flags.owndata:
            self.by_row = vectors
        else:
            self.by_row = with_room(self.by_row, int(rows.max()) + 1)
            if in_order:  # appended rows: one block copy
                self.by_row[rows[0] : rows[-1] + 1] = vectors
            else:
                self.by_row[rows] = vectors
        self.starts, self.sizes, self.capacities = (
            with_room(column, int(groups.max()) + 1) for column in (self.starts, self.sizes, self.capacities)
        )
        counts = np.bincount(groups, minlength=len(self.sizes))
        targets = np.flatnonzero(counts)
        needed = self.sizes[targets] + counts[targets]
        outgrown = needed > self.capacities[targets]
        if outgrown.any():
            self._grow(targets[outgrown], needed[outgrown])
        append_rows(self.codes, self.scales, self.rows, self._slot_of, self.starts, self.sizes, groups, rows, vectors)

    def remove(self, groups: np.ndarray, rows: np.ndarray) -> None:
        for group, row in zip(groups.tolist(), rows.tolist()):
            slot, last = int(self._slot_of[row]), int(self.starts[group] + self.sizes[group] - 1)
            if slot != last:
                self.codes[slot], self.scales[slot] = self.codes[last], self.scales[last]
                self.rows[slot] = self.rows[last]
                self._slot_of[self.rows[slot]] = slot
            self.sizes[group] -= 1
            if self.sizes[group] == 0:
                self._abandoned += int(self.capacities[group])
                self.capacities[group] = 0

    def members(self, group: int) -> np.ndarray:
        if group >= len(self.sizes):
            return np.zeros(0, dtype=np.int64)
        return self.rows[self.starts[group] : self.starts[group] + self.sizes[group]].copy()

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """The float32 vectors of these (indexed) rows, in their order: a read-only view when they are one
        ascending run (every row of a memory nothing was deleted from: no copy of it all), else a copy."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) > 1 and one_run(rows):
            run = self.by_row[rows[0] : rows[-1] + 1]
            run.flags.writeable = False
            return run
        picked: np.ndarray = self.by_row[rows]
        return picked

    def search(self, group: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        rows, scores = self.scan(np.asarray([group]), query)
        best = top_k(scores, k)
        return rows[best], scores[best]

    def scan(self, groups: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every cell of these groups with its exact cosine (no per-group top-k)."""
        found: tuple[np.ndarray, np.ndarray] = scan(self.by_row, self.rows, self.starts, self.sizes, groups, query)
        return found

    def probe(
        self,
        groups: np.ndarray,
        centroids: tuple[np.ndarray, np.ndarray],
        query: np.ndarray,
        k: int,
        limits: ProbeLimits,
    ) -> Probed:
        """Budget probing over `groups`, ordered by their quantized centroids (codes and scales, row i for
        `groups[i]`: `GroupState.active_centroid_codes`): the best `limits.depth` cells read, rescored exactly
        from the best `limits.depth + k` by their codes (but for those whose codes rule them out), best first.
        The rule is `kernels.probe.probe_for`'s."""
        found = self.probe_many(groups, centroids, rows32(query).reshape(1, -1), k, limits)
        return Probed(found.rows, found.scores, found.bytes_read)

    def probe_many(
        self,
        groups: np.ndarray,
        centroids: tuple[np.ndarray, np.ndarray],
        queries: np.ndarray,
        k: int,
        limits: ProbeLimits,
    ) -> ProbedMany:
        """`probe` for each row of `queries` (C-contiguous float32), in one compiled call that holds no GIL."""
        if not queries.flags.writeable:  # a read-only view (`vectors_of`) would compile, and cache, another variant
            queries = queries.copy()
        rows, scores, ends, bytes_read = probe_for(self.dim)(
            self.codes, self.scales, self.by_row, self.rows, self.starts, self.sizes, groups, *centroids, queries,
            k, limits.depth, limits.floor, limits.budget, limits.margin,
        )  # fmt: skip
        return ProbedMany(rows, scores, ends, bytes_read)

    def vector_probe(
        self,
        groups: np.ndarray,
        centroids: tuple[np.ndarray, np.ndarray],
        addresses: np.ndarray,
        item_arrays: np.ndarray,
        access: np.ndarray,
        tallies: np.ndarray,
    ) -> VectorProbe:
        """The one-vector probe over `groups` (`kernels.probe.vector_probe_for`), with this index's arrays, the
        groups' quantized centroids and the arrays it prefetches and counts into bound: the table's `addresses`,
        `item_arrays` and `access`, and the search `tallies` (`SearchCounters.tallies`). Valid until the memory
        changes (a write may move any of them), so made once a route: a search then passes only its own
        arguments (`probe_vector`)."""
        return functools.partial(
            self._probe_vector, self.codes, self.scales, self.by_row, self.rows, self.starts, self.sizes, groups,
            *centroids, addresses, item_arrays, access, tallies,
        )  # fmt: skip

    def close(self) -> None:
        self.codes, self.scales = np.zeros((0, self.dim), dtype=np.int8), np.zeros(0, dtype=np.float32)
        self.rows, self.by_row = np.zeros(0, dtype=np.int64), np.zeros((0, self.dim), dtype=np.float32)
        self.sizes[:] = self.capacities[:] = 0

    def _grow(self, groups: np.ndarray, needed: np.ndarray) -> None:
        """Give each group a segment of at least `needed` slots, twice its old room and the size of an average
        group: moved to the end of the arena, or, when the arena lacks the room or would be a quarter
        abandoned, all laid out afresh by one rebuild (a large write grows many groups at once: one copy)."""
        old = self.capacities[groups]
        held = self.sizes[self.sizes > 0]
        typical = int(held.mean()) if len(held) else MIN_SEGMENT  # a new group gets the room of an average one
        new = np.maximum(needed, np.maximum(2 * old, max(MIN_SEGMENT, typical)))
        end = self._end + int(new.sum())
        if end > len(self.rows) or 4 * (self._abandoned + int(old.sum())) > end:
            self.capacities[groups] = new
            self._rebuild()
            return
        at = self._end + np.cumsum(new) - new  # new segments at the end of the arena, which has the room
        self._copy_segments(groups, at, self.codes, self.scales, self.rows)
        self._abandoned += int(old.sum())
        self.capacities[groups] = new
        self._end = end

    def _rebuild(self) -> None:
        """Copy every group's segment into a fresh arena, each with its room, the arena twice their total."""
        held = np.flatnonzero(self.capacities)
        rooms = self.capacities[held]
        length = max(MIN_ARENA, 2 * int(rooms.sum()))
        codes, scales = np.zeros((length, self.dim), dtype=np.int8), np.zeros(length, dtype=np.float32)
        rows = np.zeros(length, dtype=np.int64)
        self._copy_segments(held, np.cumsum(rooms) - rooms, codes, scales, rows)
        self.codes, self.scales, self.rows, self._end, self._abandoned = codes, scales, rows, int(rooms.sum()), 0

    def _copy_segments(
        self, groups: np.ndarray, at: np.ndarray, codes: np.ndarray, scales: np.ndarray, rows: np.ndarray
    ) -> None:
        """Copy each group's slots into `codes`, `scales` and `rows` from slot `at[i]` on, and point the groups
        and their cells there."""
        copy_segments(
            self.codes, self.scales, self.rows, self.starts, self.sizes, groups, at, codes, scales, rows, self._slot_of
        )
        self.starts[groups] = at


def probe_vector(probe: VectorProbe, vector: np.ndarray, k: int, limits: ProbeLimits) -> Probed | None:
    """`NumpyGroupIndex.probe` of one query vector as the caller gave it (1-D float32, C-contiguous and writeable: one
    compiled variant) by a bound one-vector probe (`NumpyGroupIndex.vector_probe`): made a unit vector as
    `validation.unit_vector` makes it, in one compiled call that holds no GIL, which prefetches its hits' objects and
    list items and counts its search. None when the vector has no direction (nothing probed, nothing counted)."""
    depth = limits.depth
    found_rows, found_scores = np.empty(depth, np.int64), np.empty(depth, np.float32)
    found, bytes_read = probe(vector, found_rows, found_scores, k, limits.floor, limits.budget, limits.margin)
    if found < 0:
        return None
    if found < depth:  # fewer cells than `depth` read (a full buffer, the usual case, is taken whole)
        found_rows, found_scores = found_rows[:found], found_scores[:found]
    return Probed(found_rows, found_scores, bytes_read)


def chroma_capacity() -> int:
    """Group collections to keep resident: well inside Chroma's index cache (RLIMIT_NOFILE // 5)."""
    try:
        import resource
    except ImportError:  # Windows: no RLIMIT_NOFILE, the C runtime's default limit of open files
        soft_limit = 512
    else:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return max(4, min(soft_limit, 65_536) // 10)


class ChromaGroupIndex:
    """One ephemeral Chroma collection per group, named `{namespace}_grp_{id}` (plus a session tag).

    Chroma keeps at most RLIMIT_NOFILE // 5 collection indexes and silently drops the rest (their
    queries come back empty), so at most `capacity` group collections are resident at a time
    (least recently used are dropped). Groups are built as they are added while there is room; a
    group that is not resident is rebuilt on demand from the memory's vectors (`vectors_of(rows)`).
    Membership is kept here, never only in Chroma. Every Chroma call runs under one lock: embedded
    Chroma can answer short when group queries run from several threads at once.
    """

    def __init__(self, namespace: str, vectors_of: Callable[[np.ndarray], np.ndarray], capacity: int | None = None):
        self._client = ephemeral_client()
        self._prefix = f"{namespace}_{uuid.uuid4().hex[:8]}_grp_"
        self._vectors_of = vectors_of
        self.capacity = capacity or chroma_capacity()
        self._members: dict[int, set[int]] = {}
        self._resident: OrderedDict[int, Collection] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0
        """Group collections built so far (at ingest, and again after an eviction)."""

    def add(self, groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Record membership; resident groups (and new ones while there is room) get the vectors now.

        Chroma indexes new vectors on a collection's first query after a write, which costs that query many
        times an indexed one, so one probe query per group written here moves that cost from the first searches
        to ingest.
        """
        for group in np.unique(groups).tolist():
            mask = groups == group
            self._members.setdefault(group, set()).update(rows[mask].tolist())
            with self._lock:
                if group in self._resident:
                    ids = [str(row) for row in rows[mask].tolist()]
                    collection = self._resident[group]
                    guarded("adding to a group collection", collection.add, ids=ids, embeddings=vectors[mask])
                elif len(self._resident) < self.capacity:
                    collection = self._resident_collection(group)
                else:
                    continue
                probe = vectors[mask][:1]
                guarded("indexing a group collection", collection.query, query_embeddings=probe, n_results=1)

    def members(self, group: int) -> np.ndarray:
        return np.asarray(sorted(self._members.get(group, ())), dtype=np.int64)

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of these rows (the memory's cell table keeps them with this backend)."""
        return self._vectors_of(np.asarray(rows, dtype=np.int64))

    def remove(self, groups: np.ndarray, rows: np.ndarray) -> None:
        for group in np.unique(groups).tolist():
            gone = rows[groups == group].tolist()
            self._members[group].difference_update(gone)
            with self._lock:
                if group in self._resident:
                    ids = [str(row) for row in gone]
                    guarded("deleting from a group collection", self._resident[group].delete, ids=ids)

    def search(self, group: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Query the group's collection and check the answer against the membership kept here.

        A short answer, or one naming rows outside the group, means Chroma dropped the index: the
        collection is rebuilt once and queried again; a second bad answer is an error, never a result.
        """
        members = self._members.get(group, set())
        if not members:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        wanted = min(k, len(members))
        for attempt in range(2):
            with self._lock:
                result = guarded(
                    "querying a group collection",
                    self._resident_collection(group, rebuild=attempt > 0).query,
                    query_embeddings=query[None, :],
                    n_results=wanted,
                    include=["distances"],
                )
            rows = np.asarray([int(i) for i in result["ids"][0]], dtype=np.int64)
            distances = result["distances"]
            if distances is not None and len(rows) == wanted and members.issuperset(rows.tolist()):
                return rows, 1.0 - np.asarray(distances[0], dtype=np.float32)
        raise BackendUnavailableError(
            f"Chroma answered {len(rows)} of {wanted} results for group {group} twice; its index cache is "
            "exhausted (raise RLIMIT_NOFILE, or use group_backend='numpy')"
        )

    def _resident_collection(self, group: int, *, rebuild: bool = False) -> Collection:
        """The group's collection, built from the memory's vectors if it is not resident (LRU; hold the lock)."""
        if rebuild and group in self._resident:
            del self._resident[group]
            guarded("dropping a group collection", self._client.delete_collection, f"{self._prefix}{group}")
        if group in self._resident:
            self._resident.move_to_end(group)
            return self._resident[group]
        while len(self._resident) >= self.capacity:
            evicted, _ = self._resident.popitem(last=False)
            guarded("dropping a group collection", self._client.delete_collection, f"{self._prefix}{evicted}")
        collection = guarded(
            "creating a group collection",
            self._client.create_collection,
            f"{self._prefix}{group}",
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
        )
        rows = np.asarray(sorted(self._members[group]), dtype=np.int64)  # insertion order: stable ties
        guarded(
            "filling a group collection",
            collection.add,
            ids=[str(r) for r in rows.tolist()],
            embeddings=self._vectors_of(rows),
        )
        self._resident[group] = collection
        self.builds += 1
        return collection

    def close(self) -> None:
        for group in list(self._resident):
            guarded("dropping a group collection", self._client.delete_collection, f"{self._prefix}{group}")
        self._resident.clear()
        self._members.clear()
        self._client.close()


def group_index(backend: str, namespace: str, dim: int, table: CellTable) -> GroupIndex:
    """Where groups' cells are searched: NumPy blocks in memory (`numpy`: the only copy of the vectors), or a
    Chroma collection per group (`chroma`: the table keeps the vectors)."""
    if backend == "chroma":
        return ChromaGroupIndex(namespace, lambda rows: table.vectors[rows])
    return NumpyGroupIndex(dim)
