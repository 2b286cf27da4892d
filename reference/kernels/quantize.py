"""Scalar quantization per row: a float32 vector as int8 codes and a scale, and the int32 dot product of two code
rows (`intrinsics.py` where the CPU has VNNI, else a loop the compiler vectorises)."""

from __future__ import annotations

import numpy as np

from . import intrinsics
from .jit import compiled, inlined


@compiled
def quantized(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row as int8 codes and a float32 scale, row ≈ scale · codes: its largest component maps to ±127
    (scalar quantization per row; an all-zero row gets codes 0 and scale 0)."""
    codes = np.zeros(vectors.shape, np.int8)
    scales = np.zeros(len(vectors), np.float32)
    for i in range(len(vectors)):
        quantize_into(vectors[i], codes[i], scales, i)
    return codes, scales


@compiled
def quantize_into(vector: np.ndarray, codes: np.ndarray, scales: np.ndarray, slot: int) -> None:
    """`vector` as int8 `codes` and `scales[slot]` (see `quantized`)."""
    top = _largest_magnitude(vector)
    scales[slot] = top / 127
    inverse = np.float32(127) / top if top > 0 else np.float32(0)
    for j in range(len(vector)):
        codes[j] = np.int8(np.rint(vector[j] * inverse))


@inlined
def _largest_magnitude(vector: np.ndarray) -> np.float32:
    """The largest |component| of a float32 vector, found on the bits (a float's magnitude orders as its bits
    without the sign do, and integer maxima vectorise where a float maximum is a chain of dependent steps)."""
    bits = vector.view(np.int32)
    top = np.int32(0)
    for j in range(len(bits)):
        top = np.int32(max(top, bits[j] & np.int32(0x7FFFFFFF)))
    magnitude: np.float32 = np.int32(top).view(np.float32)
    return magnitude


@inlined
def code_dots(
    codes: np.ndarray,
    start: int,
    end: int,
    following: int,
    ahead: int,
    query_codes: np.ndarray,
    out: np.ndarray,
    dim: int,
    flipped: bool,
) -> None:
    """`out[i]`: the dot product of code row `start + i` and the query's codes, for each row up to `end`, summed in
    int32 (each step cast back to int32, so that the compiler keeps 32-bit lanes: 16-bit multiply-adds, where int64
    sums ran at a third of the speed); `flipped`: by `intrinsics.flipped_code_dots`, which adds 128 × the sum of
    the query's codes. Each row is prefetched `ahead` rows before it is read, in an order of reading that goes on
    at row `following` after `end` (inside the intrinsic's loop, else by `intrinsics.prefetch_row`)."""
    if flipped:
        intrinsics.flipped_code_dots(codes, start, end, following, ahead, query_codes, out, dim)
        return
    for slot in range(start, end):
        upcoming = slot + ahead
        intrinsics.prefetch_row(codes, upcoming if upcoming < end else following + upcoming - end)
        total = np.int32(0)
        for j in range(dim):
            total = np.int32(total + np.int32(codes[slot, j]) * np.int32(query_codes[j]))
        out[slot - start] = total


@inlined
def code_sum(codes: np.ndarray) -> np.int32:
    total = np.int32(0)
    for j in range(len(codes)):
        total += np.int32(codes[j])
    return total
