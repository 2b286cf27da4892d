"""LLVM code the compiler does not write from a loop, as numba intrinsics: the int8 dot products of a run of rows
with one query on the CPU's own instruction for them, prefetches of the rows a scan reads next, and atomic adds
for counts that threads share.

VNNI (`vpdpbusd`: 32 products of an unsigned and a signed byte summed into eight int32 lanes), where the CPU has it
and the vectors' length is a multiple of 32: the compiler widens each byte to 16 bits instead. `vpdpbusd` takes its
first operand unsigned: a cell's codes are flipped into it by their top bit (c ⊕ 0x80 = c + 128 as an unsigned
byte), so the sum it returns is the signed dot product plus 128 × the sum of the query's codes, which a caller
subtracts once per query; the result is the exact integer the portable loop gives, several times faster.

A prefetch (`llvm.prefetch`, on any CPU; it never faults and changes no result) asks for a row's cache lines
before the scan reaches it: a probe reads a few dozen groups' segments of the arena in centroid order, each a
jump the hardware's prefetchers cannot foresee (how far ahead: `probe.AHEAD`). A search's hits are prefetched too:
their Python objects, which lie wherever Python put them.
"""

from __future__ import annotations

import functools
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
NON_TEMPORAL, EVERY_LEVEL = 0, 3
"""`llvm.prefetch`'s localities: a line read once, and a line kept in every cache level."""
_ADDRESS = ir.IntType(64)
_LANES = ir.VectorType(ir.IntType(32), WIDTH // 4)
_BYTES = ir.VectorType(ir.IntType(8), WIDTH)


@functools.cache
def has_vnni() -> bool:
    """Whether this CPU has 256-bit VNNI (AVX-VNNI, or AVX-512 VNNI with 256-bit registers)."""
    features = binding.get_host_cpu_features()
    return bool(features.get("avxvnni") or (features.get("avx512vnni") and features.get("avx512vl")))


def vnni_usable(dim: int) -> bool:
    """Whether rows of `dim` codes get the VNNI product here."""
    return dim % WIDTH == 0 and has_vnni()


def _flipped_code_dots(
    typingctx: Any, codes: Any, start: Any, end: Any, following: Any, ahead: Any, query_codes: Any, out: Any, dim: Any
) -> Any:
    """`(codes, start, end, following, ahead, query_codes, out, dim) -> None`: `out[i]` = Σ_j (codes[start + i, j] +
    128) · query_codes[j] for each row from `start` to `end` (`codes` a C-contiguous int8 matrix of `dim` columns,
    `dim` a constant, a multiple of `WIDTH` where it runs; `out` int32), on a CPU where `has_vnni()`. The query's
    codes are loaded into registers once for all the rows: loaded again for every row, they took as many loads as
    the rows themselves, and loads bound the scan. Each row's cache lines are asked for `ahead` rows before it is
    read, in an order of reading that goes on at row `following` after `end`. A module-level intrinsic, never one
    made per call of a factory: numba's cache keys a compiled function by what it closes over, and an intrinsic
    pickles differently in every process."""
    if not isinstance(dim, types.IntegerLiteral):
        return None
    chunks, lines = dim.literal_value // WIDTH, -(-dim.literal_value // LINE)

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        base, stride = builder.ptrtoint(array.data, _ADDRESS), builder.extract_value(array.strides, 0)
        first, last, then, lead = (_address_sized(builder, value) for value in args[1:5])
        query = builder.ptrtoint(context.make_array(signature.args[5])(context, builder, args[5]).data, _ADDRESS)
        queried = [_load(builder, query, ir.Constant(_ADDRESS, c * WIDTH), _LANES) for c in range(chunks)]
        out = context.make_array(signature.args[6])(context, builder, args[6]).data
        product = builder.module.declare_intrinsic(
            "llvm.x86.avx512.vpdpbusd.256", fnty=ir.FunctionType(_LANES, [_LANES, _LANES, _LANES])
        )
        flip, zero = ir.Constant(_BYTES, [-128] * WIDTH), ir.Constant(_LANES, [0] * (WIDTH // 4))
        with cgutils.for_range(builder, builder.sub(last, first)) as loop:
            slot = builder.add(first, loop.index)
            upcoming = builder.add(slot, lead)
            beyond = builder.add(then, builder.sub(upcoming, last))
            upcoming = builder.select(builder.icmp_signed("<", upcoming, last), upcoming, beyond)
            upcoming_row = builder.add(base, builder.mul(upcoming, stride))
            for line in range(lines):
                _prefetch(builder, upcoming_row, ir.Constant(_ADDRESS, line * LINE))
            row = builder.add(base, builder.mul(slot, stride))
            sums = [zero] * CHAINS
            for c in range(chunks):  # `CHAINS` sums apart: no product waits on the one before
                cells = builder.xor(_load(builder, row, ir.Constant(_ADDRESS, c * WIDTH), _BYTES), flip)
                sums[c % CHAINS] = builder.call(product, [sums[c % CHAINS], builder.bitcast(cells, _LANES), queried[c]])
            lanes = sums[0]
            for chain in sums[1:]:
                lanes = builder.add(lanes, chain)
            builder.store(_lane_sum(builder, lanes), builder.gep(out, [loop.index]))
        return context.get_dummy_value()

    return types.none(codes, start, end, following, ahead, query_codes, out, dim), codegen


flipped_code_dots: Any = intrinsic(prefer_literal=True)(_flipped_code_dots)


def _lane_sum(builder: ir.IRBuilder, lanes: ir.Value) -> ir.Value:
    """The sum of a vector's int32 lanes, halving it until one lane is left (a shuffle and an add a step)."""
    width = lanes.type.count
    while width > 1:
        width //= 2
        halves = [ir.Constant(ir.VectorType(ir.IntType(32), width), list(range(at, at + width))) for at in (0, width)]
        lanes = builder.add(*(builder.shuffle_vector(lanes, lanes, half) for half in halves))
    return builder.extract_element(lanes, ir.Constant(ir.IntType(32), 0))


def _address_sized(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """An integer argument as wide as an address (sign-extended)."""
    return builder.sext(value, _ADDRESS) if value.type.width < 64 else value


def _prefetch(builder: ir.IRBuilder, address: ir.Value, offset: ir.Value, locality: int = NON_TEMPORAL) -> None:
    """Ask for the cache line at `address` + `offset`, for reading (`llvm.prefetch`), by default non-temporally: a
    search reads each row it prefetches once, and rows kept in every level would evict what the search reads again
    after its scan (the hits' Python objects, the interpreter's own)."""
    pointer, word = ir.IntType(8).as_pointer(), ir.IntType(32)
    fetch = builder.module.declare_intrinsic(
        "llvm.prefetch.p0", fnty=ir.FunctionType(ir.VoidType(), [pointer, word, word, word])
    )
    read, data = ir.Constant(word, 0), ir.Constant(word, 1)
    at = builder.inttoptr(builder.add(address, offset), pointer)
    builder.call(fetch, [at, read, ir.Constant(word, locality), data])


def _prefetch_address(typingctx: Any, address: Any) -> Any:
    """`(address) -> None`: asks for the cache line at an address (an int64), into every level: for an object that
    Python will read soon (any address: a prefetch never faults)."""

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
        _prefetch(builder, _address_sized(builder, args[0]), ir.Constant(_ADDRESS, 0), EVERY_LEVEL)
        return context.get_dummy_value()

    return types.none(address), codegen


prefetch_address: Any = intrinsic(_prefetch_address)


def _prefetch_row(typingctx: Any, matrix: Any, slot: Any) -> Any:
    """`(matrix, slot) -> None`: asks for the cache lines of row `slot` of a C-contiguous matrix (any slot: a
    prefetch past the matrix is ignored, never a fault)."""

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
        row = _row_address(context, builder, signature.args[0], args[0], args[1])
        width = builder.extract_value(context.make_array(signature.args[0])(context, builder, args[0]).strides, 0)
        lines = builder.udiv(builder.add(width, ir.Constant(_ADDRESS, LINE - 1)), ir.Constant(_ADDRESS, LINE))
        with cgutils.for_range(builder, lines) as loop:
            _prefetch(builder, row, builder.mul(loop.index, ir.Constant(_ADDRESS, LINE)))
        return context.get_dummy_value()

    return types.none(matrix, slot), codegen


prefetch_row: Any = intrinsic(_prefetch_row)


def _atomic_add(typingctx: Any, array: Any, index: Any, amount: Any) -> Any:
    """`(array, index, amount) -> int`: `array[index] += amount` as one atomic step (an int64 array), returning the
    value it held before: threads that count into the same array at once, the compiled probe's without the GIL,
    lose none of their counts."""
    if not (isinstance(array, types.Array) and array.dtype == types.int64 and array.ndim == 1):
        return None

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> ir.Value:
        element = _row_address(context, builder, signature.args[0], args[0], args[1])
        added = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", builder.inttoptr(element, _ADDRESS.as_pointer()), added, "monotonic")

    return types.int64(array, index, amount), codegen


atomic_add: Any = intrinsic(_atomic_add)


def _row_address(context: Any, builder: ir.IRBuilder, matrix_type: Any, matrix: ir.Value, slot: ir.Value) -> ir.Value:
    """The address of row `slot` of a C-contiguous matrix (of element `slot` of a vector), as an integer."""
    array = context.make_array(matrix_type)(context, builder, matrix)
    index = _address_sized(builder, slot)
    stride = builder.extract_value(array.strides, 0)
    return builder.add(builder.ptrtoint(array.data, _ADDRESS), builder.mul(index, stride))


def _load(builder: ir.IRBuilder, base: ir.Value, offset: ir.Value, kind: ir.VectorType) -> ir.Value:
    """A vector of `kind` from address `base` + `offset` (no alignment assumed)."""
    return builder.load(builder.inttoptr(builder.add(base, offset), kind.as_pointer()), align=1)
