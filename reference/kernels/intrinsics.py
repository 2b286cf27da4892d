"""LLVM code the compiler does not write from a loop, as numba intrinsics: the int8 dot product on the CPU's own
instruction for it, and prefetches of the rows a scan reads next.

VNNI (`vpdpbusd`: 32 products of an unsigned and a signed byte summed into eight int32 lanes), where the CPU has it
and the vectors' length is a multiple of 32: the compiler widens each byte to 16 bits instead. `vpdpbusd` takes its
first operand unsigned: a cell's codes are flipped into it by their top bit (c ⊕ 0x80 = c + 128 as an unsigned
byte), so the sum it returns is the signed dot product plus 128 × the sum of the query's codes, which a caller
subtracts once per query; the result is the exact integer the portable loop gives, several times faster.

A prefetch (`llvm.prefetch`, on any CPU; it never faults and changes no result) asks for a row's cache lines
before the scan reaches it: a probe reads a few dozen groups' segments of the arena in centroid order, each a
jump the hardware's prefetchers cannot foresee (how far ahead: `probe.AHEAD`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

WIDTH = 32
"""Bytes one instruction multiplies (256-bit registers: 512-bit ones are no faster, and fewer CPUs have them)."""
CHAINS = 4
"""Sums a row's products are split over, each in its own register: one sum would make every product wait for the
one before it (the instruction's latency is several of its issue intervals)."""
LINE = 64
"""Bytes in a cache line."""
_ADDRESS = ir.IntType(64)
_LANES = ir.VectorType(ir.IntType(32), WIDTH // 4)
_BYTES = ir.VectorType(ir.IntType(8), WIDTH)
_alloca_once_value: Callable[[ir.IRBuilder, ir.Value], ir.Value] = cgutils.alloca_once_value


@functools.cache
def has_vnni() -> bool:
    """Whether this CPU has 256-bit VNNI (AVX-VNNI, or AVX-512 VNNI with 256-bit registers)."""
    features = binding.get_host_cpu_features()
    return bool(features.get("avxvnni") or (features.get("avx512vnni") and features.get("avx512vl")))


def vnni_usable(dim: int) -> bool:
    """Whether rows of `dim` codes get the VNNI product here."""
    return dim % WIDTH == 0 and has_vnni()


def _flipped_code_dot(typingctx: Any, codes: Any, slot: Any, query_codes: Any) -> Any:
    """`(codes, slot, query_codes) -> int32`: Σ_j (codes[slot, j] + 128) · query_codes[j] over the query's int8
    codes (`codes` a C-contiguous int8 matrix as wide as the query, a multiple of `WIDTH`), on a CPU where
    `has_vnni()`. A module-level intrinsic, never one made per call of a factory: numba's cache keys a compiled
    function by what it closes over, and an intrinsic pickles differently in every process."""

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
        row = _row_address(context, builder, signature.args[0], args[0], args[1])
        query = context.make_array(signature.args[2])(context, builder, args[2])
        start = builder.ptrtoint(query.data, _ADDRESS)
        chunks = builder.udiv(builder.extract_value(query.shape, 0), ir.Constant(_ADDRESS, WIDTH))
        product = builder.module.declare_intrinsic(
            "llvm.x86.avx512.vpdpbusd.256", fnty=ir.FunctionType(_LANES, [_LANES, _LANES, _LANES])
        )
        sums = [_alloca_once_value(builder, ir.Constant(_LANES, [0] * (WIDTH // 4))) for _ in range(CHAINS)]
        rounds = builder.udiv(chunks, ir.Constant(_ADDRESS, CHAINS))
        with cgutils.for_range(builder, rounds) as loop:  # `CHAINS` sums apart: no product waits on the one before
            for chain, total in enumerate(sums):
                chunk = builder.add(
                    builder.mul(loop.index, ir.Constant(_ADDRESS, CHAINS)), ir.Constant(_ADDRESS, chain)
                )
                _accumulate(builder, product, total, row, start, chunk)
        with cgutils.for_range(builder, builder.urem(chunks, ir.Constant(_ADDRESS, CHAINS))) as loop:
            chunk = builder.add(builder.mul(rounds, ir.Constant(_ADDRESS, CHAINS)), loop.index)
            _accumulate(builder, product, sums[0], row, start, chunk)
        for total in sums[1:]:
            builder.store(builder.add(builder.load(sums[0]), builder.load(total)), sums[0])
        lanes = builder.load(sums[0])
        total = builder.extract_element(lanes, ir.Constant(ir.IntType(32), 0))
        for lane in range(1, WIDTH // 4):
            total = builder.add(total, builder.extract_element(lanes, ir.Constant(ir.IntType(32), lane)))
        return total

    return types.int32(codes, slot, query_codes), codegen


flipped_code_dot: Any = intrinsic(_flipped_code_dot)


def _accumulate(
    builder: ir.IRBuilder, product: ir.Function, total: ir.Value, row: ir.Value, start: ir.Value, chunk: ir.Value
) -> None:
    """Add chunk `chunk`'s products of the row's flipped codes and the query's into the lanes at `total`."""
    at = builder.mul(chunk, ir.Constant(_ADDRESS, WIDTH))
    cells = builder.xor(_load(builder, row, at), ir.Constant(_BYTES, [-128] * WIDTH))
    codes_here = builder.bitcast(_load(builder, start, at), _LANES)
    builder.store(builder.call(product, [builder.load(total), builder.bitcast(cells, _LANES), codes_here]), total)


def _prefetch_row(typingctx: Any, matrix: Any, slot: Any) -> Any:
    """`(matrix, slot) -> None`: asks for the cache lines of row `slot` of a C-contiguous matrix (any slot: a
    prefetch past the matrix is ignored, never a fault)."""

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
        row = _row_address(context, builder, signature.args[0], args[0], args[1])
        width = builder.extract_value(context.make_array(signature.args[0])(context, builder, args[0]).strides, 0)
        lines = builder.udiv(builder.add(width, ir.Constant(_ADDRESS, LINE - 1)), ir.Constant(_ADDRESS, LINE))
        pointer, word = ir.IntType(8).as_pointer(), ir.IntType(32)
        fetch = builder.module.declare_intrinsic(
            "llvm.prefetch.p0", fnty=ir.FunctionType(ir.VoidType(), [pointer, word, word, word])
        )
        read, every_level, data = ir.Constant(word, 0), ir.Constant(word, 3), ir.Constant(word, 1)
        with cgutils.for_range(builder, lines) as loop:
            address = builder.add(row, builder.mul(loop.index, ir.Constant(_ADDRESS, LINE)))
            builder.call(fetch, [builder.inttoptr(address, pointer), read, every_level, data])
        return context.get_dummy_value()

    return types.none(matrix, slot), codegen


prefetch_row: Any = intrinsic(_prefetch_row)


def _row_address(context: Any, builder: ir.IRBuilder, matrix_type: Any, matrix: ir.Value, slot: ir.Value) -> ir.Value:
    """The address of row `slot` of a C-contiguous matrix, as an integer."""
    array = context.make_array(matrix_type)(context, builder, matrix)
    index = builder.sext(slot, _ADDRESS) if slot.type.width < 64 else slot
    stride = builder.extract_value(array.strides, 0)
    return builder.add(builder.ptrtoint(array.data, _ADDRESS), builder.mul(index, stride))


def _load(builder: ir.IRBuilder, base: ir.Value, offset: ir.Value) -> ir.Value:
    """`WIDTH` bytes from address `base` + `offset` (no alignment assumed)."""
    return builder.load(builder.inttoptr(builder.add(base, offset), _BYTES.as_pointer()), align=1)
