"""The second search stage: budget probing over the group index's arena, many queries in one call with the GIL
released, and the order of the groups it reads."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np

from . import intrinsics
from .jit import compiled, dot, inlined
from .quantize import code_dots, code_sum, quantize_into, quantized
from .rows import count_reads, tally, unit_into

RESCORE_ERRORS = 8.0
"""A cell read is rescored unless its code score lies this many standard errors of quantization below the
`depth`-th best exact score so far: codes err by `scale / √12` per unit of each vector's norm (uniform
rounding), so this many of them is a wide margin over the largest error real text shows, and a cell ruled out
cannot reach the best `depth`."""


ITEM = ctypes.sizeof(ctypes.c_void_p)
"""Bytes of an item in a list's item array (an address, as `cells.table.LIST_ITEMS_AT` reads them)."""

AHEAD = 16
"""Cells a probe's prefetch runs ahead of its reads, in its order of reading (`quantize.code_dots`): far
enough for a row to arrive before it is read, near enough that it is still cached when it is."""


@functools.cache
def probe_for(dim: int) -> Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
    """The budget probe of a matrix of queries, compiled for `dim`-component vectors: with the length of its dot
    products a constant, the compiler unrolls them. Compiled once per dimension and install, like the other
    kernels. Codes are multiplied by the CPU's VNNI instruction where it has one, else by `code_dots`' loop: the
    same integers. It probes every query in one call, the GIL released throughout: a search from several threads
    holds the GIL only for its Python around it."""
    flipped = intrinsics.vnni_usable(dim)  # a bool: what `probe` closes over keys numba's cache of it

    @compiled
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
        floor: int,
        budget: int,
        margin: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """`_probed` for each row of `queries` (unit vectors) on its own. Returns the best `depth` cells of each
        query, best first, one query's after another's (rows and exact scores; query i's at `ends[i - 1] :
        ends[i]`, from 0 for the first), `ends`, and the bytes read for all of them."""
        count = len(queries)
        found_rows = np.empty(count * depth, np.int64)
        found_scores = np.empty(count * depth, np.float32)
        ends = np.empty(count, np.int64)
        total = bytes_read = 0
        all_query_codes, query_scales = quantized(queries)
        for q in range(count):
            found, read = _probed(
                codes, scales, vectors, rows, starts, sizes, groups, centroid_codes, centroid_scales,
                queries[q], all_query_codes[q], query_scales[q], k, floor, budget, margin,
                found_rows[total : total + depth], found_scores[total : total + depth], dim, flipped,
            )  # fmt: skip
            total += found
            ends[q] = total
            bytes_read += read
        return found_rows[:total], found_scores[:total], ends, bytes_read

    return probe


@functools.cache
def vector_probe_for(dim: int) -> Callable[..., tuple[int, int]]:
    """The budget probe of one query vector as given (`probe_for`'s, for a search of one vector): made a unit
    vector (`rows.unit_into`), probed, and its best cells written into buffers the caller made, so that one
    compiled call takes a search from the vector to its rows and scores, and returns no array. Its arguments up to
    `vector` stay the same from search to search until the memory changes (`NumpyGroupIndex.vector_probe` binds
    them once). It counts its own search, by atomic adds and without the GIL (`rows.tally`, `rows.count_reads`):
    counted from Python after the scan, the objects the counts live in are out of the caches. The objects its hits
    will be made of, and their items in the table's lists, are prefetched before it returns (`CellTable.addresses`,
    `CellTable.item_arrays`): they lie all over Python's heap, out of the caches after the scan too."""
    flipped = intrinsics.vnni_usable(dim)

    @compiled
    def probe_vector(
        codes: np.ndarray,
        scales: np.ndarray,
        vectors: np.ndarray,
        rows: np.ndarray,
        starts: np.ndarray,
        sizes: np.ndarray,
        groups: np.ndarray,
        centroid_codes: np.ndarray,
        centroid_scales: np.ndarray,
        addresses: np.ndarray,
        item_arrays: np.ndarray,
        access: np.ndarray,
        tallies: np.ndarray,
        vector: np.ndarray,
        found_rows: np.ndarray,
        found_scores: np.ndarray,
        k: int,
        floor: int,
        budget: int,
        margin: float,
    ) -> tuple[int, int]:
        """`_probed` for `vector` at unit length, its best `len(found_rows)` cells written into `found_rows` and
        `found_scores`, best first, and the addresses in their rows of `addresses` prefetched, as are their items
        in the lists whose item arrays lie at `item_arrays`; counted as one search, not flat, in `tallies`
        (`rows.tally`) and as a read of each cell found in `access`. Returns how many it wrote (-1, and nothing
        probed or counted, when `vector` has no direction: NaN, infinite or zero) and the bytes read."""
        query = np.empty(dim, np.float32)
        if not unit_into(vector, query):
            return -1, 0
        query_codes, query_scale = np.empty(dim, np.int8), np.empty(1, np.float32)
        quantize_into(query, query_codes, query_scale, 0)
        found, read = _probed(
            codes, scales, vectors, rows, starts, sizes, groups, centroid_codes, centroid_scales,
            query, query_codes, query_scale[0], k, floor, budget, margin, found_rows, found_scores, dim, flipped,
        )  # fmt: skip
        for i in range(found):
            for address in addresses[found_rows[i]]:
                intrinsics.prefetch_address(address)
            for items in item_arrays:
                intrinsics.prefetch_address(items + ITEM * found_rows[i])
        count_reads(access, found_rows[:found])
        tally(tallies, 1, 0, read)
        return found, read

    return probe_vector


@inlined
def _probed(
    codes: np.ndarray,
    scales: np.ndarray,
    vectors: np.ndarray,
    rows: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    groups: np.ndarray,
    centroid_codes: np.ndarray,
    centroid_scales: np.ndarray,
    query: np.ndarray,
    query_codes: np.ndarray,
    query_scale: np.float32,
    k: int,
    floor: int,
    budget: int,
    margin: float,
    found_rows: np.ndarray,
    found_scores: np.ndarray,
    dim: int,
    flipped: bool,
) -> tuple[int, int]:
    """Budget probing over the arena's codes for one unit `query` (quantized as `query_codes` and
    `query_scale`). `groups[i]` has its centroid quantized as `centroid_codes[i]` and `centroid_scales[i]`;
    groups are read in the order of their centroids' code scores until `budget` cells are read, and once `floor`
    cells are read probing stops at the first group whose centroid scores below the k-th best cell read so far
    minus `margin` (in that order every later group scores lower still, but for `descending`'s rounding). A cell
    read is scored by its codes against the query's, and the best `depth + k` of them (`depth`: the length of
    `found_rows`) are kept in order as they come (`_enter`); these are scored again exactly, from their float32
    `vectors` (by row), in the order of their code scores, but for those that `RESCORE_ERRORS` rules out; each
    cell's codes are prefetched `AHEAD` cells before they are read (`quantize.code_dots`). Writes the best `depth`
    of those, best first, into `found_rows` and `found_scores` (rows and exact scores); returns how many, and the
    bytes read: the codes (and scales) of the centroids and of the cells read, and the float32 vectors rescored.
    Inlined into the kernels of `dim` (a constant there, as `flipped` is: `code_dots` then unrolls)."""
    depth = len(found_rows)
    candidates = depth + k
    offset = np.int32(128) * code_sum(query_codes) if flipped else np.int32(0)  # what `code_dots` adds
    centroid_dots = np.empty(len(groups), np.int32)
    code_dots(centroid_codes, 0, len(groups), len(groups), AHEAD, query_codes, centroid_dots, dim, flipped)
    centroid_scores = np.empty(len(groups), np.float32)
    for i in range(len(groups)):
        centroid_scores[i] = np.float32(centroid_dots[i] - offset) * centroid_scales[i] * query_scale
    order = descending(centroid_scores, sizes[groups], budget)
    largest = 0
    for step in range(len(order)):
        largest = max(largest, sizes[groups[order[step]]])
    dots = np.empty(largest, np.int32)  # the code products of the group being read
    best_scores = np.full(candidates, -np.inf, np.float32)  # the best `candidates` cells read, best first
    best_slots = np.full(candidates, -1, np.int64)
    read = 0
    for step in range(len(order)):
        position = order[step]
        if read >= budget or (read >= floor and centroid_scores[position] < best_scores[k - 1] - margin):
            break
        group = groups[position]
        start, end = starts[group], starts[group] + sizes[group]
        following = starts[groups[order[step + 1]]] if step + 1 < len(order) else end  # the next group's
        code_dots(codes, start, end, following, AHEAD, query_codes, dots, dim, flipped)
        lowest = best_scores[-1]  # held in a register: most cells read do not enter
        for slot in range(start, end):
            score = np.float32(dots[slot - start] - offset) * scales[slot] * query_scale
            if score > lowest:
                lowest = _enter(best_scores, best_slots, score, slot)
        read += sizes[group]
    held = 0
    while held < candidates and best_slots[held] >= 0:  # fewer cells read than `candidates`: the rest hold none
        held += 1
    code_scores, slots = best_scores[:held], best_slots[:held]
    for i in range(min(depth, len(slots))):  # rescored whatever the codes say: their rows are asked for at once
        intrinsics.prefetch_row(vectors, rows[slots[i]])
    found_scores[:] = -np.inf  # the best `depth` exact scores so far, best first
    rescored = 0
    for i in range(len(slots)):
        slot = slots[i]
        error = np.sqrt((scales[slot] ** 2 + query_scale**2) / 12)  # the code score's standard error
        if i >= depth and code_scores[i] < found_scores[-1] - RESCORE_ERRORS * error:
            continue  # its exact score cannot reach the best `depth`
        score = dot(vectors, rows[slot], query, dim)
        if score > found_scores[-1]:
            _enter(found_scores, found_rows, score, rows[slot])
        rescored += 1
    code_bytes = dim * codes.itemsize + scales.itemsize
    return min(depth, rescored), (len(groups) + read) * code_bytes + rescored * dim * vectors.itemsize


@inlined
def _enter(scores: np.ndarray, payload: np.ndarray, score: np.float32, value: int) -> np.float32:
    """Put `score`, with `value` alongside, into the descending `scores` after those equal to it, the last one
    dropped; returns the new last one. Kept in order, the probe's candidates give both its k-th best and its last
    at a glance, where two heaps each sifted on every entry cost more."""
    j = len(scores) - 1
    while j > 0 and scores[j - 1] < score:
        scores[j], payload[j] = scores[j - 1], payload[j - 1]
        j -= 1
    scores[j], payload[j] = score, value
    last: np.float32 = scores[-1]
    return last


ORDER_STEPS = 65_535
"""`descending` ranks scores rounded down to this many steps of their range: a key of two 8-bit digits."""
FEW = 32
"""At most this many positions `descending` orders by insertion; more, by a radix sort, whose 256 buckets cost more
than an insertion sort of a few."""


@compiled
def descending(scores: np.ndarray, sizes: np.ndarray, budget: int) -> np.ndarray:
    """The positions of `scores`, highest first, until their `sizes` reach `budget` (all of them if they never
    do): the groups a probe may read, in the order it reads them. Each score is rounded down to one of
    `ORDER_STEPS` + 1 steps of their range (so a later score is at most one step, 1/65,535 of the range, above an
    earlier one; equal steps keep their positions' order). Only the positions whose key's high digit is no later
    than the one where the sizes reach `budget` are ordered: a probe reads a few dozen of a memory's hundreds of
    groups, and ordering every one of them would cost more than the reading's fixed share."""
    count = len(scores)
    if count == 0:
        return np.arange(0)
    low = high = scores[0]
    for i in range(count):  # one pass, which vectorises (NumPy's `min` and `max` are two, testing for NaN)
        low, high = min(low, scores[i]), max(high, scores[i])
    per_step = ORDER_STEPS / (high - low) if high > low else 0.0
    keys = np.empty(count, np.int64)
    for i in range(count):  # highest first: the largest score gets key 0 (a loop of its own, which vectorises)
        keys[i] = ORDER_STEPS - min(ORDER_STEPS, int((scores[i] - low) * per_step))
    held = np.zeros(256, np.int64)  # the cells of the positions by their key's high digit
    for i in range(count):
        held[(keys[i] >> 8) & 255] += sizes[i]  # masked as the radix sort's digits: no key reaches past `held`
    last, reached = 0, held[0]
    while reached < budget and last < 255:
        last += 1
        reached += held[last]
    order = np.empty(count, np.int64)
    chosen = 0
    for i in range(count):  # in the order of positions, which equal keys keep
        if (keys[i] >> 8) & 255 <= last:
            order[chosen] = i
            chosen += 1
    order = order[:chosen]
    if chosen <= FEW:
        _insertion_sort(order, keys)
    else:
        _radix_sort(order, keys)
    total = 0
    for step in range(chosen):
        if total >= budget:
            return order[:step]
        total += sizes[order[step]]
    return order


@inlined
def _insertion_sort(order: np.ndarray, keys: np.ndarray) -> None:
    """Sort `order` by `keys[order]` in place, stably."""
    for i in range(1, len(order)):
        position, key = order[i], keys[order[i]]
        j = i - 1
        while j >= 0 and keys[order[j]] > key:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = position


@inlined
def _radix_sort(order: np.ndarray, keys: np.ndarray) -> None:
    """Sort `order` by `keys[order]` (below 2^16) in place, stably: two passes of 8-bit digits, the second
    writing back into `order`."""
    passed = np.empty(len(order), np.int64)
    source, target = order, passed
    for shift in (0, 8):
        starts = np.zeros(257, np.int64)
        for i in range(len(source)):
            starts[((keys[source[i]] >> shift) & 255) + 1] += 1
        for digit in range(256):
            starts[digit + 1] += starts[digit]
        for i in range(len(source)):
            digit = (keys[source[i]] >> shift) & 255
            target[starts[digit]] = source[i]
            starts[digit] += 1
        source, target = target, source
