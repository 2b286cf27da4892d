"""Per-call row work of a search: a query's check and normalisation, its hits' access counts and its tallies."""

from __future__ import annotations

import numpy as np

from . import intrinsics
from .jit import brief, brief_strict, strict


@brief_strict
def checked_unit(vector: np.ndarray) -> tuple[np.ndarray, bool]:
    """`vector` at unit length, as float32 (`unit_into`); False when it has no direction. A query's check and
    normalisation in one call, where NumPy's widening, dot product, division and narrowing would be a noticeable
    share of a search."""
    unit = np.empty(len(vector), np.float32)
    return unit, unit_into(vector, unit)


@strict
def unit_into(vector: np.ndarray, unit: np.ndarray) -> bool:
    """Write `vector` at unit length into the float32 `unit`, its squares summed in float64; False (`unit` left
    unwritten) when that sum is NaN, infinite or zero (no direction to keep). No fastmath, so that those tests
    hold and every caller, a fastmath kernel's too, gets the same bits."""
    square = 0.0
    for j in range(len(vector)):
        square += np.float64(vector[j]) * np.float64(vector[j])
    if not 0.0 < square < np.inf:
        return False
    inverse = 1.0 / np.sqrt(square)
    for j in range(len(vector)):
        unit[j] = vector[j] * inverse
    return True


@brief
def count_reads(access: np.ndarray, rows: np.ndarray) -> None:
    """`access[row] += 1` for each of `rows`, in place and atomically: searches count into `access` at once, the
    compiled probe's without the GIL (cheaper than NumPy's indexed increment for a search's few rows)."""
    for row in rows:
        intrinsics.atomic_add(access, row, 1)


SEARCHES, FLAT, BYTES_READ = range(3)
"""The positions of a memory's search tallies (`SearchCounters.tallies`)."""


@brief
def tally(tallies: np.ndarray, searches: int, flat: int, bytes_read: int) -> None:
    """Add to the `SEARCHES`, `FLAT` and `BYTES_READ` tallies, each atomically: searches count at once, the
    compiled probe's without the GIL."""
    intrinsics.atomic_add(tallies, SEARCHES, searches)
    intrinsics.atomic_add(tallies, FLAT, flat)
    intrinsics.atomic_add(tallies, BYTES_READ, bytes_read)
