"""Compiled loops (numba): the second search stage over the group index's arena without a Python step
per group, the grouping steps ingest runs per chunk and per group (sums by group, centroids, 2-means
splits), BM25 scoring over the lexical index's postings and the choice of its best rows, and the
episode context of a text search's candidates.

The arena holds every group's cells as int8 codes in one matrix; group g owns the slots `starts[g] : starts[g] +
sizes[g]` (`index.NumpyGroupIndex`), and the float32 vectors are kept by row for exact scores. An int8 dot product
is summed in int32 (`_code_dot`, or the CPU's VNNI instruction: `intrinsics.py`). A NumPy scan paid a call, a view and a
concatenation per group, and a top-k over every cell read, each a few µs once a scan has flushed the caches (BEAM
passages, one core, a loaded machine, the same day: 0.559 ms per query through NumPy at recall@10 0.971, 0.251 ms
through this kernel at 0.969). The kernels are compiled on first use (about 10 s for the ingest kernels and 10 s
for the probe here, once per install) and cached beside this module (`cache=True`); `fastmath` lets the compiler
vectorise the dot products, so a score may differ from NumPy's in the last float32 bits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numba import njit

from . import intrinsics

_compiled = njit(cache=True, fastmath=True, nogil=True)
_inlined = njit(cache=True, fastmath=True, nogil=True, inline="always")
"""For helpers: inlined where they are called, so that a caller's constant (`probe_for`'s dimension) reaches them."""
_exact = njit(cache=True, nogil=True)
"""For kernels that rank or start from -inf: no fastmath, so that ties and infinities compare as NumPy's do."""
_brief = njit(cache=True, fastmath=True)
_brief_exact = njit(cache=True)
"""For kernels of well under a microsecond that a search calls from Python: they keep the GIL, since releasing it
hands it to a waiting thread and then waits to get it back, which costs far more than the kernel's own work."""


def rows32(vectors: np.ndarray) -> np.ndarray:
    """Vectors as the kernels take them (C-contiguous float32: one compiled variant)."""
    return np.ascontiguousarray(vectors, dtype=np.float32)


@_compiled
def quantized(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row as int8 codes and a float32 scale, row ≈ scale · codes: its largest component maps to ±127
    (scalar quantization per row; an all-zero row gets codes 0 and scale 0)."""
    codes = np.zeros(vectors.shape, np.int8)
    scales = np.zeros(len(vectors), np.float32)
    for i in range(len(vectors)):
        _quantize_into(vectors[i], codes[i], scales, i)
    return codes, scales


RESCORE_ERRORS = 8.0
"""A cell read is rescored unless its code score lies this many standard errors of quantization below the
`depth`-th best exact score so far: codes err by `scale / √12` per unit of each vector's norm (uniform
rounding), and over 9,000 BEAM pairs the measured errors had that standard deviation (0.98 of it) and
reached 4.1 of them at most; about 9 of 20 rescorings are skipped there."""


AHEAD = 16
"""Cells a probe's prefetch runs ahead of its reads, in its order of reading (`intrinsics.prefetch_row`). BEAM
passages at target recall 0.97, same process, best of 7 passes, against no prefetch: 69.1 and 70.9 against 75.7
and 75.6 µs a search; 6 ahead gained 4 %, 32 and 48 no more than 16."""


@functools.cache
def probe_for(dim: int) -> Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray, int, int]]:
    """The budget probe, compiled for `dim`-component vectors: with the length of its dot products a constant,
    the compiler unrolls them. With the heaps' lowest score held in a register as well (BEAM passages, 384-d,
    one core, the same cells found): 0.095 against 0.108 ms a probe at recall@10 0.98, 0.073 against 0.078 ms
    at 0.97. Compiled once per dimension and install (about 1.5 s), like the other kernels. Codes are multiplied
    by the CPU's VNNI instruction where it has one, else by `_code_dot`: the same integers; each cell's codes are
    prefetched `AHEAD` cells before they are read (`intrinsics.py`). It probes a matrix of queries in one call,
    the GIL released throughout: a search from several threads holds the GIL only for its Python around it."""
    flipped = intrinsics.vnni_usable(dim)  # a bool: what `probe` closes over keys numba's cache of it

    @_compiled
    def probe(
        codes: np.ndarray,
        scales: np.ndarray,
        vectors: np.ndarray,
        rows: np.ndarray,
        starts: np.ndarray,
        sizes: np.ndarray,
        groups: np.ndarray,
        centroid_codes: np.ndarray,
        centroid_scales: np.ndarray,
        queries: np.ndarray,
        k: int,
        depth: int,
        rescored: int,
        floor: int,
        budget: int,
        margin: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
        """Budget probing over the arena's codes, for each row of `queries` on its own. `groups[i]` has its
        centroid quantized as `centroid_codes[i]` and `centroid_scales[i]`; groups are read in the order of
        their centroids' code scores until `budget` cells are read, and once `floor` cells are read probing
        stops at the first group whose centroid scores below the k-th best cell read so far minus `margin` (in
        that order every later group scores lower still, but for `descending`'s rounding). A cell read is
        scored by its codes against the query's; the best `rescored` of them are scored again exactly, from
        their float32 `vectors` (by row), in the order of their code scores, but for those that
        `RESCORE_ERRORS` rules out. Returns the best `depth` of those for each query, best first, one query's
        after another's (rows and exact scores; query i's at `ends[i - 1] : ends[i]`, from 0 for the first),
        `ends`, and the number of cells read and the number rescored over all queries."""
        count = len(queries)
        found_rows = np.empty(count * depth, np.int64)
        found_scores = np.empty(count * depth, np.float32)
        ends = np.empty(count, np.int64)
        total = cells_read = cells_rescored = 0
        all_query_codes, query_scales = quantized(queries)
        centroid_scores = np.empty(len(groups), np.float32)
        for q in range(count):
            query, query_codes, query_scale = queries[q], all_query_codes[q], query_scales[q]
            offset = np.int32(128) * _code_sum(query_codes) if flipped else np.int32(0)  # what `code_dot` adds
            for i in range(len(groups)):
                centroid_scores[i] = (
                    np.float32(_code_dot(centroid_codes, i, query_codes, dim, flipped) - offset)
                    * centroid_scales[i]
                    * query_scale
                )
            order = descending(centroid_scores)
            kth = np.full(k, -np.inf, np.float32)  # min-heaps: the k best scores, and the best `rescored` cells
            unused = np.zeros(k, np.int64)
            best_scores = np.full(rescored, -np.inf, np.float32)
            best_slots = np.full(rescored, -1, np.int64)
            read = 0
            for step in range(len(order)):
                position = order[step]
                if read >= budget or (read >= floor and centroid_scores[position] < kth[0] - margin):
                    break
                group = groups[position]
                start, end = starts[group], starts[group] + sizes[group]
                following = starts[groups[order[step + 1]]] if step + 1 < len(order) else end  # the next group's
                lowest = best_scores[0]  # held in a register: most cells read enter neither heap
                for slot in range(start, end):
                    ahead = slot + AHEAD
                    intrinsics.prefetch_row(codes, ahead if ahead < end else following + ahead - end)
                    score = (
                        np.float32(_code_dot(codes, slot, query_codes, dim, flipped) - offset)
                        * scales[slot]
                        * query_scale
                    )
                    if score > lowest:
                        if score > kth[0]:
                            _replace_smallest(kth, unused, score, 0)
                        _replace_smallest(best_scores, best_slots, score, slot)
                        lowest = best_scores[0]
                read += sizes[group]
            held = best_slots >= 0
            code_scores, slots = best_scores[held], best_slots[held]
            by_code = np.argsort(-code_scores, kind="mergesort")
            code_scores, slots = code_scores[by_code], slots[by_code]
            kept = np.empty(len(slots), np.int64)
            exact = np.empty(len(slots), np.float32)
            top = np.full(depth, -np.inf, np.float32)  # a min-heap of the best `depth` exact scores so far
            no_payload = np.zeros(depth, np.int64)  # as for `kth`: a heap with no payload
            kept_count = 0
            for i in range(len(slots)):
                slot = slots[i]
                error = np.sqrt((scales[slot] ** 2 + query_scale**2) / 12)  # the code score's standard error
                if i >= depth and code_scores[i] < top[0] - RESCORE_ERRORS * error:
                    continue  # its exact score cannot reach the best `depth`
                kept[kept_count], exact[kept_count] = rows[slot], _dot(vectors, rows[slot], query, dim)
                if exact[kept_count] > top[0]:
                    _replace_smallest(top, no_payload, exact[kept_count], 0)
                kept_count += 1
            ranked = np.argsort(-exact[:kept_count], kind="mergesort")[:depth]
            found_rows[total : total + len(ranked)] = kept[ranked]
            found_scores[total : total + len(ranked)] = exact[ranked]
            total += len(ranked)
            ends[q] = total
            cells_read += read
            cells_rescored += kept_count
        return found_rows[:total], found_scores[:total], ends, cells_read, cells_rescored

    return probe


ORDER_STEPS = 65_535
"""`descending` ranks scores rounded down to this many steps of their range, a two-digit key of a radix sort."""


@_compiled
def descending(scores: np.ndarray) -> np.ndarray:
    """The positions of `scores`, highest first, each score rounded down to one of `ORDER_STEPS` + 1 steps of
    their range (so a later score is at most one step, 1/65,535 of the range, above an earlier one; equal
    steps keep their positions' order). A radix sort in two passes of 8-bit digits: over 537 centroid
    scores, 3 µs against 9 µs for a max-heap built and popped 35 times (its sifts branch on every comparison)."""
    order = np.arange(len(scores))
    if len(scores) < 2:
        return order
    low, high = scores.min(), scores.max()
    per_step = ORDER_STEPS / (high - low) if high > low else 0.0
    keys = np.empty(len(scores), np.int64)
    for i in range(len(scores)):  # highest first: the largest score gets key 0
        keys[i] = ORDER_STEPS - min(ORDER_STEPS, int((scores[i] - low) * per_step))
    passed = np.empty(len(scores), np.int64)
    for shift in (0, 8):
        starts = np.zeros(257, np.int64)
        for i in range(len(order)):
            starts[((keys[order[i]] >> shift) & 255) + 1] += 1
        for digit in range(256):
            starts[digit + 1] += starts[digit]
        for i in range(len(order)):
            digit = (keys[order[i]] >> shift) & 255
            passed[starts[digit]] = order[i]
            starts[digit] += 1
        order, passed = passed, order
    return order


@_compiled
def scan(
    vectors: np.ndarray, rows: np.ndarray, starts: np.ndarray, sizes: np.ndarray, groups: np.ndarray, query: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every cell of `groups`, group by group, with its exact score (from its float32 `vectors`, by row)."""
    total = 0
    for group in groups:
        total += sizes[group]
    out_rows = np.empty(total, np.int64)
    out_scores = np.empty(total, np.float32)
    read = 0
    for group in groups:
        for slot in range(starts[group], starts[group] + sizes[group]):
            out_rows[read] = rows[slot]
            out_scores[read] = _dot(vectors, rows[slot], query, len(query))
            read += 1
    return out_rows, out_scores


@_compiled
def add_by_group(sums: np.ndarray, group_ids: np.ndarray, vectors: np.ndarray, sign: float) -> None:
    """`sums[g] += sign · v` for every row v of `vectors` and its group g, in place, in float64. One pass
    (a sparse one-hot product, the NumPy way, first converted the rows to float64)."""
    for i in range(len(group_ids)):
        group = group_ids[i]
        for j in range(vectors.shape[1]):
            sums[group, j] += sign * vectors[i, j]


@_compiled
def append_rows(
    codes: np.ndarray,
    scales: np.ndarray,
    rows: np.ndarray,
    slot_of: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    groups: np.ndarray,
    new_rows: np.ndarray,
    vectors: np.ndarray,
) -> None:
    """Append each new row to the end of its group's segment in the arena, in input order, quantized there
    (`quantized`), and point `slot_of` at it; every segment has the room (the caller grew those that lacked it)."""
    for i in range(len(groups)):
        group = groups[i]
        slot = starts[group] + sizes[group]
        _quantize_into(vectors[i], codes[slot], scales, slot)
        rows[slot] = new_rows[i]
        slot_of[new_rows[i]] = slot
        sizes[group] += 1


@_compiled
def copy_segments(
    codes: np.ndarray,
    scales: np.ndarray,
    rows: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    groups: np.ndarray,
    at: np.ndarray,
    to_codes: np.ndarray,
    to_scales: np.ndarray,
    to_rows: np.ndarray,
    slot_of: np.ndarray,
) -> None:
    """Copy each group's segment (`groups[i]`, its `sizes` slots from `starts`) into `to_codes`, `to_scales`
    and `to_rows` from slot `at[i]` on, and point `slot_of` at the copies. Source and target segments do not
    overlap. A slice copy per group (a NumPy gather of every row took 20 ms per 100K rows here)."""
    for i in range(len(groups)):
        start, size, target = starts[groups[i]], sizes[groups[i]], at[i]
        to_codes[target : target + size] = codes[start : start + size]
        to_scales[target : target + size] = scales[start : start + size]
        to_rows[target : target + size] = rows[start : start + size]
        for j in range(size):
            slot_of[to_rows[target + j]] = target + j


@_brief_exact
def unit_vector(vector: np.ndarray) -> tuple[np.ndarray, bool]:
    """`vector` at unit length, as float32, its squares summed in float64; False when that sum is NaN,
    infinite or zero (no direction to keep). A query's check and normalisation in one call: NumPy's
    widening, dot product, division and narrowing cost 3–5 µs of a 40 µs search."""
    square = 0.0
    for j in range(len(vector)):
        square += np.float64(vector[j]) * np.float64(vector[j])
    unit = np.empty(len(vector), np.float32)
    if not 0.0 < square < np.inf:
        return unit, False
    inverse = 1.0 / np.sqrt(square)
    for j in range(len(vector)):
        unit[j] = vector[j] * inverse
    return unit, True


@_brief
def count_reads(access: np.ndarray, rows: np.ndarray) -> None:
    """`access[row] += 1` for each of `rows`, in place (0.3 µs for a search's ten rows; NumPy's indexed
    increment took 1.2 µs)."""
    for row in rows:
        access[row] += 1


@_compiled
def unit_rows(sums: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """`sums[ids]` scaled to unit length, as float32 (a zero row stays zero): the centroids in one pass."""
    out = np.zeros((len(ids), sums.shape[1]), np.float32)
    for i in range(len(ids)):
        norm = np.sqrt(np.sum(sums[ids[i]] * sums[ids[i]]))
        if norm > 0:
            for j in range(sums.shape[1]):
                out[i, j] = sums[ids[i], j] / norm
    return out


@_compiled
def two_means(vectors: np.ndarray, iterations: int) -> np.ndarray:
    """A 2-means split of unit rows; True marks the second part. A row goes to the mean it has the larger
    dot product with (the means are not normalised: on BEAM's passages normalising them cost 0.006 of
    recall@10 after sleep). Seeded with the row farthest from the mean and the row farthest from that
    one; stops when no row changes part or a part would be empty (then every row is False). Each step
    is one pass: a row's side is the sign of its dot with the difference of the two means, and the
    second part's sum is gathered on the way (BLAS took two calls and a copy a step, and its threads
    stall on a busy machine)."""
    count, dim = vectors.shape
    total = np.zeros(dim, np.float64)
    for i in range(count):
        total += vectors[i]
    first = np.argmin(_dots(vectors, total.astype(np.float32), dim))
    second = np.argmin(_dots(vectors, vectors[first].copy(), dim))
    direction = vectors[second] - vectors[first]
    part = np.zeros(count, np.bool_)
    step = np.empty(count, np.bool_)
    second_sum = np.empty(dim, np.float64)
    for _ in range(iterations):
        in_second, changed = 0, False
        second_sum[:] = 0.0
        for i in range(count):
            step[i] = _dot(vectors, i, direction, dim) > 0
            changed |= step[i] != part[i]
            if step[i]:
                in_second += 1
                second_sum += vectors[i]
        if in_second == 0 or in_second == count or not changed:
            break
        part[:] = step
        direction = (second_sum / in_second - (total - second_sum) / (count - in_second)).astype(np.float32)
    return part


@_compiled
def bm25_into(
    terms: np.ndarray,
    offsets: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
    query_terms: np.ndarray,
    weights: np.ndarray,
    lengths: np.ndarray,
    live: np.ndarray,
    k1: float,
    b: float,
    average_length: float,
    scores: np.ndarray,
    touched: np.ndarray,
    found: int,
) -> int:
    """Add one segment's BM25 contributions for the query's words to `scores` (by row): word
    `query_terms[i]` (weight `weights[i]`, its idf times its repeats in the query) is held by
    `rows[offsets[j]:offsets[j + 1]]` where `terms[j]` is that word. Rows first scored here are appended
    to `touched` after its first `found`; returns the new count. Dead rows are skipped."""
    for i in range(len(query_terms)):
        j = np.searchsorted(terms, query_terms[i])
        if j == len(terms) or terms[j] != query_terms[i]:
            continue
        for p in range(offsets[j], offsets[j + 1]):
            row = rows[p]
            if not live[row]:
                continue
            tf = counts[p]
            norm = k1 * (1.0 - b + b * lengths[row] / average_length)
            if scores[row] == 0.0:
                touched[found] = row
                found += 1
            scores[row] += weights[i] * tf / (tf + norm)
    return found


@_compiled
def collected(scores: np.ndarray, touched: np.ndarray, found: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `found` rows of `touched` and their accumulated `scores`, each reset to 0 for the next query
    (one pass: NumPy's gather, copy and scatter took 0.27 ms for a query touching 100K rows)."""
    rows = touched[:found].copy()
    taken = np.empty(found, np.float64)
    for i in range(found):
        taken[i] = scores[rows[i]]
        scores[rows[i]] = 0.0
    return rows, taken


@_exact
def best_scored(rows: np.ndarray, scores: np.ndarray, depth: int) -> np.ndarray:
    """Positions of the best `depth` of these scored rows, best first (ties: the earlier row first). A heap of
    `depth` over all of them: a text query touches most rows through its common words, and a partition of
    every score cost more than the BM25 scoring itself (100K text cells: 2.1 against 0.4 ms a query)."""
    size = min(depth, len(rows))
    heap = np.arange(size)
    for i in range(size // 2 - 1, -1, -1):
        _sift_worst_down(heap, rows, scores, i, size)
    for position in range(size, len(rows)):
        if _worse(rows, scores, heap[0], position):
            heap[0] = position
            _sift_worst_down(heap, rows, scores, 0, size)
    by_row = heap[np.argsort(rows[heap], kind="mergesort")]
    return by_row[np.argsort(-scores[by_row], kind="mergesort")]


@_exact
def _worse(rows: np.ndarray, scores: np.ndarray, a: int, b: int) -> bool:
    """Whether position a ranks below position b: a lower score, or the same score for a later row."""
    return bool(scores[a] < scores[b] or (scores[a] == scores[b] and rows[a] > rows[b]))


@_exact
def _sift_worst_down(heap: np.ndarray, rows: np.ndarray, scores: np.ndarray, i: int, size: int) -> None:
    """Restore the order of `heap[:size]`, the worst-ranked position at the root, below position i."""
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and _worse(rows, scores, heap[child + 1], heap[child]):
            child += 1
        if not _worse(rows, scores, heap[child], heap[i]):
            return
        heap[i], heap[child] = heap[child], heap[i]
        i = child


@_exact
def keep_best(
    best_scores: np.ndarray, best_rows: np.ndarray, scores: np.ndarray, rows: np.ndarray, skip: np.ndarray
) -> None:
    """For each query i, fold the cells `rows` scored `scores[i]` into its min-heap of the best so far
    (`best_scores[i]`, their rows `best_rows[i]`), leaving out the row `skip[i]`."""
    for i in range(scores.shape[0]):
        for j in range(scores.shape[1]):
            if scores[i, j] > best_scores[i, 0] and rows[j] != skip[i]:
                _replace_smallest(best_scores[i], best_rows[i], scores[i, j], rows[j])


@_exact
def with_context(
    rows: np.ndarray,
    scores: np.ndarray,
    episodes: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    episode_weight: float,
    neighbour_weight: float,
) -> np.ndarray:
    """Candidates' scores with their context (the rule is `search.py`'s stage 5): `rows` ascending, each
    candidate's episode code and the rows written just before and after it (-1 for none)."""
    count = len(rows)
    order = np.argsort(episodes, kind="mergesort")
    best = np.empty(count)
    start = 0
    while start < count:  # the best score among each episode's candidates (at least 0)
        end, top = start, 0.0
        while end < count and episodes[order[end]] == episodes[order[start]]:
            top = max(top, scores[order[end]])
            end += 1
        best[order[start:end]] = top
        start = end
    around = np.zeros(count)
    for i in range(count):
        around[i] = max(_score_of(rows, scores, before[i]), _score_of(rows, scores, after[i]))
    linked = (before >= 0).any() or (after >= 0).any()
    scale = 1.0 + episode_weight + (neighbour_weight if linked else 0.0)
    scored = (scores + episode_weight * best + neighbour_weight * around) / scale
    first = np.argmax(scores)
    highest = scored.max()
    if scored[first] < highest:
        scored[first] = np.nextafter(highest, np.inf)
    return scored


@_exact
def _score_of(rows: np.ndarray, scores: np.ndarray, row: int) -> float:
    """The score of `row` among the candidates `rows` (ascending); 0 where it is none of them."""
    if row < 0:
        return 0.0
    position = np.searchsorted(rows, row)
    return scores[position] if position < len(rows) and rows[position] == row else 0.0


@_inlined
def _dots(matrix: np.ndarray, query: np.ndarray, dim: int) -> np.ndarray:
    scores = np.empty(matrix.shape[0], np.float32)
    for i in range(matrix.shape[0]):
        scores[i] = _dot(matrix, i, query, dim)
    return scores


@_compiled
def _quantize_into(vector: np.ndarray, codes: np.ndarray, scales: np.ndarray, slot: int) -> None:
    """`vector` as int8 `codes` and `scales[slot]` (see `quantized`)."""
    top = _largest_magnitude(vector)
    scales[slot] = top / 127
    inverse = np.float32(127) / top if top > 0 else np.float32(0)
    for j in range(len(vector)):
        codes[j] = np.int8(np.rint(vector[j] * inverse))


@_inlined
def _largest_magnitude(vector: np.ndarray) -> np.float32:
    """The largest |component| of a float32 vector, found on the bits (a float's magnitude orders as its bits
    without the sign do, and integer maxima vectorise where a float maximum is a chain of dependent steps):
    57 against 357 ns a 384-component row in the level-1 cache."""
    bits = vector.view(np.int32)
    top = np.int32(0)
    for j in range(len(bits)):
        top = np.int32(max(top, bits[j] & np.int32(0x7FFFFFFF)))
    magnitude: np.float32 = np.int32(top).view(np.float32)
    return magnitude


@_inlined
def _code_dot(codes: np.ndarray, slot: int, query_codes: np.ndarray, dim: int, flipped: bool) -> np.int32:
    """The dot product of two int8 code rows of `dim` codes, summed in int32 (each step cast back to int32, so
    that the compiler keeps 32-bit lanes: 16-bit multiply-adds, where int64 sums ran at a third of the speed);
    `flipped`: by `intrinsics.flipped_code_dot`, which adds 128 × the sum of the query's codes."""
    if flipped:
        product: np.int32 = intrinsics.flipped_code_dot(codes, slot, query_codes)
        return product
    total = np.int32(0)
    for j in range(dim):
        total = np.int32(total + np.int32(codes[slot, j]) * np.int32(query_codes[j]))
    return total


@_inlined
def _code_sum(codes: np.ndarray) -> np.int32:
    total = np.int32(0)
    for j in range(len(codes)):
        total += np.int32(codes[j])
    return total


@_inlined
def _dot(vectors: np.ndarray, slot: int, query: np.ndarray, dim: int) -> np.float32:
    score = np.float32(0.0)
    for j in range(dim):
        score += vectors[slot, j] * query[j]
    return score


@_compiled
def _replace_smallest(scores: np.ndarray, payload: np.ndarray, score: np.float32, value: int) -> None:
    """Replace the root of the min-heap `scores` (with `payload` alongside) by `score` and sift it down."""
    i = 0
    while True:
        child = 2 * i + 1
        if child >= len(scores):
            break
        if child + 1 < len(scores) and scores[child + 1] < scores[child]:
            child += 1
        if scores[child] >= score:
            break
        scores[i], payload[i] = scores[child], payload[child]
        i = child
    scores[i], payload[i] = score, value
