"""LLVM code the compiler does not write from a loop, as numba intrinsics: the int8 dot product on the CPU's own
instruction for it, and prefetches of the rows a scan reads next.

VNNI (`vpdpbusd`: 32 products of an unsigned and a signed byte summed into eight int32 lanes), where the CPU has it
and the vectors' length is a multiple of 32: the compiler widens each byte to 16 bits instead. `vpdpbusd` takes its
first operand unsigned: a cell's codes are flipped into it by their top bit (c ⊕ 0x80 = c + 128 as an unsigned
byte), so the sum it returns is the signed dot product plus 128 × the sum of the query's codes, which a caller
subtracts once per query; the result is the exact integer the portable loop gives. Rows of codes in the level-2
cache: 4.7 against 19 ns a 384-code row here; BEAM passages at target recall 0.97, same process, best of 7
passes: 75.0 against 103.9 µs a search, the same cells found.

A prefetch (`llvm.prefetch`, on any CPU; it never faults and changes no result) asks for a row's cache lines
before the scan reaches it: a probe reads a few dozen groups' segments of the arena in centroid order, each a
jump the hardware's prefetchers cannot foresee. On a synthetic arena (31 random segments of 96 rows of 384 codes,
20 MB) a scan took 12.9 ns a row, 5.4 with each row fetched 8 to 24 rows ahead; in the probe over BEAM's arena
it gained far less (`kernels.AHEAD`), for reasons not measured here.
"""

from __future__ import annotations

import functools
from typing import Any

from llvmlite import binding, ir
from numba import types
from numba.extending import intrinsic

WIDTH = 32
"""Bytes one instruction multiplies (256-bit registers: 512-bit ones were no faster here, 14 against 13 ns a row)."""
LINE = 64
"""Bytes in a cache line."""
_ADDRESS = ir.IntType(64)


@functools.cache
def has_vnni() -> bool:
    """Whether this CPU has 256-bit VNNI (AVX-VNNI, or AVX-512 VNNI with 256-bit registers)."""
    features = binding.get_host_cpu_features()
    return bool(features.get("avxvnni") or (features.get("avx512vnni") and features.get("avx512vl")))


def vnni_usable(dim: int) -> bool:
    """Whether rows of `dim` codes get the VNNI product here."""
    return dim % WIDTH == 0 and has_vnni()


@functools.cache
def flipped_code_dot(dim: int) -> Any:
    """A numba intrinsic `(codes, slot, query_codes, dim) -> int32`: Σ_j (codes[slot, j] + 128) · query_codes[j]
    over `dim` int8 codes (`codes` a C-contiguous int8 matrix, `query_codes` an int8 vector; the argument `dim`, as
    in the portable loop's signature, is the one this product was made for); `dim` a multiple of `WIDTH`, on a
    CPU where `vnni_usable(dim)`."""
    lanes = ir.VectorType(ir.IntType(32), WIDTH // 4)
    chunk = ir.VectorType(ir.IntType(8), WIDTH)

    @intrinsic
    def dot(typingctx: Any, codes: Any, slot: Any, query_codes: Any, length: Any) -> Any:
        def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
            row = _row_address(context, builder, signature.args[0], args[0], args[1])
            query = builder.ptrtoint(context.make_array(signature.args[2])(context, builder, args[2]).data, _ADDRESS)
            product = builder.module.declare_intrinsic(
                "llvm.x86.avx512.vpdpbusd.256", fnty=ir.FunctionType(lanes, [lanes, lanes, lanes])
            )
            top_bits = ir.Constant(chunk, [-128] * WIDTH)
            sums = ir.Constant(lanes, [0] * (WIDTH // 4))
            for offset in range(0, dim, WIDTH):
                cells = builder.xor(_load(builder, row, offset, chunk), top_bits)
                codes_here = builder.bitcast(_load(builder, query, offset, chunk), lanes)
                sums = builder.call(product, [sums, builder.bitcast(cells, lanes), codes_here])
            total = builder.extract_element(sums, ir.Constant(ir.IntType(32), 0))
            for lane in range(1, WIDTH // 4):
                total = builder.add(total, builder.extract_element(sums, ir.Constant(ir.IntType(32), lane)))
            return total

        return types.int32(codes, slot, query_codes, length), codegen

    return dot


@functools.cache
def prefetch_row(row_bytes: int) -> Any:
    """A numba intrinsic `(matrix, slot) -> None`: asks for the cache lines of row `slot` of a C-contiguous
    matrix with rows of `row_bytes` bytes (any slot: a prefetch past the matrix is ignored, never a fault)."""
    pointer = ir.IntType(8).as_pointer()
    word = ir.IntType(32)

    @intrinsic
    def prefetch(typingctx: Any, matrix: Any, slot: Any) -> Any:
        def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
            row = _row_address(context, builder, signature.args[0], args[0], args[1])
            fetch = builder.module.declare_intrinsic(
                "llvm.prefetch.p0", fnty=ir.FunctionType(ir.VoidType(), [pointer, word, word, word])
            )
            read, every_level, data = ir.Constant(word, 0), ir.Constant(word, 3), ir.Constant(word, 1)
            for at in range(0, row_bytes, LINE):
                address = builder.inttoptr(builder.add(row, ir.Constant(_ADDRESS, at)), pointer)
                builder.call(fetch, [address, read, every_level, data])
            return context.get_dummy_value()

        return types.none(matrix, slot), codegen

    return prefetch


def _row_address(context: Any, builder: ir.IRBuilder, matrix_type: Any, matrix: ir.Value, slot: ir.Value) -> ir.Value:
    """The address of row `slot` of a C-contiguous matrix, as an integer."""
    array = context.make_array(matrix_type)(context, builder, matrix)
    index = builder.sext(slot, _ADDRESS) if slot.type.width < 64 else slot
    return builder.add(
        builder.ptrtoint(array.data, _ADDRESS), builder.mul(index, builder.extract_value(array.strides, 0))
    )


def _load(builder: ir.IRBuilder, base: ir.Value, offset: int, chunk: ir.VectorType) -> ir.Value:
    """`chunk` bytes from address `base` + `offset` (no alignment assumed)."""
    at = builder.add(base, ir.Constant(base.type, offset))
    return builder.load(builder.inttoptr(at, chunk.as_pointer()), align=1)
