"""Writing the group index's arena: new rows appended to their groups' segments, and segments copied when the
arena is laid out again."""

from __future__ import annotations

import numpy as np

from .jit import compiled
from .quantize import quantize_into


@compiled
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
        quantize_into(vectors[i], codes[slot], scales, slot)
        rows[slot] = new_rows[i]
        slot_of[new_rows[i]] = slot
        sizes[group] += 1


@compiled
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
    overlap. A slice copy per group, cheaper than a NumPy gather of every row."""
    for i in range(len(groups)):
        start, size, target = starts[groups[i]], sizes[groups[i]], at[i]
        to_codes[target : target + size] = codes[start : start + size]
        to_scales[target : target + size] = scales[start : start + size]
        to_rows[target : target + size] = rows[start : start + size]
        for j in range(size):
            slot_of[to_rows[target + j]] = target + j
