"""The decode micro-kernels of the GGUF block formats: one column of a matrix's interleaved blocks (`blocks`) times
one row of x, TILE_LANES output rows at a time, a lane an output row.

A column's quant byte i of the TILE_LANES rows is one vector, multiplied by x's element i (broadcast) into the
column's partial sums, which the column's scales multiply once (one vector), Q4's m · Σx terms joining once: no
adding-up across lanes, no broadcast of a scale a block (lever `interleaved-blocks`). Two arithmetics, one a machine:
float32 (`group_dot`), or with AVX-512 VNNI integer products of the quants and the activation's 8-bit digits
(`digit_dot`, lever `vnni-digits`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import llvm_ir as L
from .tuning import (
    COLUMN_ACCUMULATORS,
    DIGIT_SCALES,
    DIGITS,
    F32,
    FAST,
    PREFETCH_L1_BYTES,
    PREFETCH_L2_BYTES,
    TILE_LANES,
    VNNI,
)
from .weight_formats import BLOCK, WEIGHT_FORMATS, WeightFormat

ir = L.ir


def column_bytes(fmt: WeightFormat) -> int:
    """Bytes of one block column of a group of TILE_LANES rows in `blocks.interleaved_blocks`: the rows' scales,
    then their quants."""
    return TILE_LANES * (2 * len(fmt.scales) + fmt.column_quant_bytes)


def _block_columns(context, builder, fmt, arrays, args, column_products):
    """The loop the formats' dot products share: for each block column of group g, its bytes prefetched ahead,
    totals += d · products (times the column's factor, if any) and, for the Q4 formats, offsets += m · Σx (Q4_0's
    m = −8 d; F16 has neither: totals += products); then y[b, L g .. L g + L] = totals + offsets. arrays, args:
    the (type, value) of groups, g, b, x_sums and y. column_products(index, column, quants, count) gives the
    column's q · x, a lane an output row, and the factor its d takes (or None)."""
    (groups_type, groups), (_, group), (_, row), (sums_type, x_sums), (y_type, y) = zip(arrays, args, strict=True)
    zero = context.get_constant(types.intp, 0)
    groups_array, start = L.address(context, builder, groups_type, groups, [group, zero])
    _, sums_start = L.address(context, builder, sums_type, x_sums, [row, zero])
    start = builder.bitcast(start, L.I8.as_pointer())
    group_bytes = cgutils.unpack_tuple(builder, groups_array.shape)[1]
    count = lambda value: ir.Constant(group_bytes.type, value)  # noqa: E731
    step = column_bytes(fmt)
    totals = cgutils.alloca_once(builder, L.TILE)  # Σ d · (q · x), a lane an output row: a register
    offsets = cgutils.alloca_once(builder, L.TILE)  # Σ m · Σx
    for accumulator in (totals, offsets):
        builder.store(ir.Constant(L.TILE, [0.0] * TILE_LANES), accumulator)
    with cgutils.for_range(builder, builder.sdiv(group_bytes, count(step))) as loop:
        column = builder.gep(start, [builder.mul(loop.index, count(step))])
        for line in range(0, step, 64):
            L.prefetch(builder, builder.gep(column, [count(PREFETCH_L2_BYTES + line)]), locality=2)
            L.prefetch(builder, builder.gep(column, [count(PREFETCH_L1_BYTES + line)]))
        quants = builder.gep(column, [count(2 * TILE_LANES * len(fmt.scales))])
        products, factor = column_products(loop.index, column, quants, count)
        if not fmt.scales:  # F16
            builder.store(builder.fadd(products, builder.load(totals)), totals)
        else:
            ds = L.halves(builder, column)
            scales = ds if factor is None else builder.fmul(ds, factor)
            builder.store(L.fmuladd(builder, scales, products, builder.load(totals)), totals)
        if "m" in fmt.scales or fmt.quant_offset:
            ms = (L.halves(builder, builder.gep(column, [count(2 * TILE_LANES)])) if "m" in fmt.scales
                  else builder.fmul(ds, ir.Constant(L.TILE, [float(fmt.quant_offset)] * TILE_LANES)))
            block_sum = L.splat(builder, builder.load(builder.gep(sums_start, [loop.index])), L.TILE)
            builder.store(L.fmuladd(builder, ms, block_sum, builder.load(offsets)), offsets)
    outputs = builder.fadd(builder.load(totals), builder.load(offsets))
    _, at = L.address(context, builder, y_type, y, [row, builder.mul(group, count(TILE_LANES))])
    builder.store(outputs, builder.bitcast(at, L.TILE.as_pointer()), align=4)


def group_dot(fmt: WeightFormat):
    """A numba intrinsic dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y): y[b, L g + o] = row L g + o
    of a matrix's `interleaved_blocks` times row b of x (rows, in; float32, each row contiguous), for o < L
    (TILE_LANES): Σ over block columns of d · (q · x) + m · Σx, with Q4_0's m = −8 d, Q8_0's none and F16's weights
    the halves themselves. x_sums (rows, in / 32 float32): each block's Σx (read for the Q4 formats only). digits,
    x_scales and corrections: unread (`digit_dot`'s, which takes the same arguments)."""
    lanes = ir.VectorType(L.I8, TILE_LANES)
    words = ir.VectorType(L.I32, TILE_LANES)

    @intrinsic
    def dot(typingctx, groups, group, x, x_row, x_sums, digits, x_scales, corrections, y):
        def codegen(context, builder, signature, args):
            types_ = signature.args
            _, x_start = L.address(context, builder, types_[2], args[2], [args[3], context.get_constant(types.intp, 0)])

            if TILE_LANES == 16:  # AVX-512: vpermps looks a nibble's float up in a table of 0..15, reading only an
                # index's low four bits: a mask and a conversion in one instruction (lever `vpermps-nibbles`)
                permute = cgutils.get_or_insert_function(builder.module, ir.FunctionType(L.TILE, [L.TILE, words]),
                                                         "llvm.x86.avx512.permvar.sf.512")
                table = ir.Constant(L.TILE, [float(n) for n in range(16)])

                def nibbles(word):  # each lane's low four bits, as float32
                    return builder.call(permute, [table, word])
            else:
                def nibbles(word):
                    return builder.sitofp(builder.and_(word, ir.Constant(words, [15] * TILE_LANES)), L.TILE)

            def column_products(index, column, quants, count):
                xs = builder.gep(x_start, [builder.mul(index, count(BLOCK))])
                partials = [None] * COLUMN_ACCUMULATORS

                def add(q, k):  # partial sums += q · x[k]
                    x_k = L.splat(builder, builder.load(builder.gep(xs, [count(k)])), L.TILE)
                    slot = k % COLUMN_ACCUMULATORS
                    partials[slot] = (builder.fmul(q, x_k) if partials[slot] is None
                                      else L.fmuladd(builder, q, x_k, partials[slot]))

                if fmt.quant_bits == 4:  # byte i: weight i in its low nibble, weight 16 + i in its high one
                    for i in range(16):
                        word = builder.zext(L.load(builder, quants, i * TILE_LANES, lanes), words)
                        add(nibbles(word), i)
                        add(nibbles(builder.lshr(word, ir.Constant(words, [4] * TILE_LANES))), 16 + i)
                elif fmt.quant_bits == 8:
                    for k in range(BLOCK):
                        add(builder.sitofp(L.load(builder, quants, k * TILE_LANES, lanes), L.TILE), k)
                else:  # F16: column k's weights are the rows' halves, converted as they are loaded
                    for k in range(BLOCK):
                        add(L.halves(builder, builder.gep(quants, [count(2 * TILE_LANES * k)])), k)
                products = partials[0]
                for partial in partials[1:]:
                    products = builder.fadd(products, partial)
                return products, None

            _block_columns(context, builder, fmt, [types_[i] for i in (0, 1, 3, 4, 8)],
                           [args[i] for i in (0, 1, 3, 4, 8)], column_products)
            return context.get_dummy_value()
        return types.void(groups, group, x, x_row, x_sums, digits, x_scales, corrections, y), codegen
    return dot


# vpdpbusd multiplies 64 unsigned bytes by 64 signed ones and adds each 4 neighbouring products into a 32-bit lane,
# exactly. The weights' bytes are the unsigned ones (Q4: the nibbles; Q8_0: q + 128, 128 · Σ of x's digits taken off
# at the block's end); x becomes signed bytes without losing what float32 keeps of it: each element of a block of 32
# is 2^e (A + B/256 + C/65536), A, B, C whole numbers in -128..127, e from the block's largest |x| (`_digits_of_rows`);
# what is dropped is below 2^-23 of that largest |x|. Unlike llama.cpp's one 8-bit digit (Q8_K), the logits stay
# within float32 rounding of gguf.quants' dequantization.
def digit_dot(fmt: WeightFormat):
    """A numba intrinsic dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y): what `group_dot` gives,
    y[b, L g + o] for o < L (TILE_LANES), from row b of x as `_digits_of_rows` gives it (digits, x_scales,
    corrections; x itself unread) and, for the Q4 formats, each block's Σx (x_sums), by integer dot products."""
    words = ir.VectorType(L.I32, TILE_LANES)  # a vector of 64 bytes, as vpdpbusd takes them

    @intrinsic
    def dot(typingctx, groups, group, x, x_row, x_sums, digits, x_scales, corrections, y):
        def codegen(context, builder, signature, args):
            types_ = signature.args
            zero = context.get_constant(types.intp, 0)
            _, digits_start = L.address(context, builder, types_[5], args[5], [args[3], zero])
            _, scales_start = L.address(context, builder, types_[6], args[6], [args[3], zero])
            _, corrections_start = L.address(context, builder, types_[7], args[7], [args[3], zero])
            digits_start = builder.bitcast(digits_start, L.I8.as_pointer())
            vpdpbusd = cgutils.get_or_insert_function(builder.module, ir.FunctionType(words, [words] * 3),
                                                      "llvm.x86.avx512.vpdpbusd.512")
            low_nibbles = ir.Constant(words, [0x0F0F0F0F] * TILE_LANES)
            sign_bits = ir.Constant(words, [-0x7F7F7F80] * TILE_LANES)  # 0x80808080: q + 128 for each signed byte q

            def column_products(index, column, quants, count):
                block_digits = builder.gep(digits_start, [builder.mul(index, count(DIGITS * BLOCK))])
                # two sums a digit, taken in turn: each vpdpbusd waits on its sum's last one
                sums = [[ir.Constant(words, [0] * TILE_LANES)] * DIGITS for _ in range(2)]

                def x_digits(digit, k):  # x's digit of elements k..k+3 (4 bytes), in every lane
                    pointer = builder.gep(block_digits, [count(BLOCK * digit + k)])
                    return L.splat(builder, builder.load(builder.bitcast(pointer, L.I32.as_pointer()), align=1), words)

                if fmt.quant_bits == 4:  # 4 bytes of each row: weights 4j..4j+3 in the low nibbles, 16 + 4j.. in the high
                    for j in range(4):
                        run = L.load(builder, quants, count(64 * j), words)
                        low = builder.and_(run, low_nibbles)
                        high = builder.and_(builder.lshr(run, ir.Constant(words, [4] * TILE_LANES)), low_nibbles)
                        for digit in range(DIGITS):
                            sums[0][digit] = builder.call(vpdpbusd, [sums[0][digit], low, x_digits(digit, 4 * j)])
                            sums[1][digit] = builder.call(vpdpbusd, [sums[1][digit], high, x_digits(digit, 16 + 4 * j)])
                else:  # Q8_0: 4 signed bytes of each row, made unsigned
                    for j in range(8):
                        run = builder.xor(L.load(builder, quants, count(64 * j), words), sign_bits)
                        for digit in range(DIGITS):
                            sums[j % 2][digit] = builder.call(vpdpbusd, [sums[j % 2][digit], run, x_digits(digit, 4 * j)])
                products = None  # q · (A + B/256 + C/65536), in float32
                for digit in range(DIGITS):
                    total = builder.add(sums[0][digit], sums[1][digit])
                    if fmt.quant_bits == 8:
                        taken = builder.gep(corrections_start, [builder.add(builder.mul(index, count(DIGITS)), count(digit))])
                        total = builder.sub(total, L.splat(builder, builder.load(taken), words))
                    total = builder.sitofp(total, L.TILE)
                    scale = ir.Constant(L.TILE, [DIGIT_SCALES[digit]] * TILE_LANES)
                    products = builder.fmul(total, scale) if products is None else L.fmuladd(builder, total, scale, products)
                return products, L.splat(builder, builder.load(builder.gep(scales_start, [index])), L.TILE)  # 2^e

            _block_columns(context, builder, fmt, [types_[i] for i in (0, 1, 3, 4, 8)],
                           [args[i] for i in (0, 1, 3, 4, 8)], column_products)
            return context.get_dummy_value()
        return types.void(groups, group, x, x_row, x_sums, digits, x_scales, corrections, y), codegen
    return dot


@intrinsic
def _block_absmax(typingctx, x, row, first):
    """max |x[row, first + j]| for j < 32, as its float32 bits (non-negative floats order as their bits do): one
    vector reduction, where numba's loop of max() stayed 32 scalar steps."""
    def codegen(context, builder, signature, args):
        _, at = L.address(context, builder, signature.args[0], args[0], [args[1], args[2]])
        block = ir.VectorType(L.I32, 32)
        magnitudes = builder.and_(builder.load(builder.bitcast(at, block.as_pointer()), align=4),
                                  ir.Constant(block, [0x7FFFFFFF] * 32))
        largest = cgutils.get_or_insert_function(builder.module, ir.FunctionType(L.I32, [block]),
                                                 "llvm.vector.reduce.smax.v32i32")
        return builder.call(largest, [magnitudes])
    return types.int32(x, row, first), codegen


@njit(fastmath=FAST, cache=True)
def _digits_of_rows(x, n_blocks):  # pragma: no cover -- compiled; tested through rows_times_blocks
    """Each block of 32 of x's elements as 2^e (A + B/256 + C/65536), A, B, C whole numbers in -128..127, the
    nearest to x · 2^-e at 2^-16 (see above):
    digits (rows, blocks · 96) int8, a block's A of its 32 elements, then B, then C; x_scales (rows, blocks) 2^e;
    corrections (rows, blocks · 3) int32, 128 · Σ of each digit over the block (what Q8_0's q + 128 adds)."""
    rows = x.shape[0]
    digits = np.empty((rows, n_blocks * DIGITS * 32), dtype=np.int8)
    x_scales = np.empty((rows, n_blocks), dtype=np.float32)
    corrections = np.empty((rows, n_blocks * DIGITS), dtype=np.int32)
    for b in range(rows):
        for kb in range(n_blocks):
            top = _block_absmax(x, b, kb * 32)
            # An infinity or a NaN in the block: digits of 0 and a scale of NaN, so that its products are NaN (the float
            # path's would not be finite either), where the digits of an infinity would be undefined.
            finite = top < np.int32(0x7F800000)
            # e with the largest |x| / 2^e in [63.5, 127): from its exponent, one more where its leading bits reach
            # 127 · 2^-6 (up to 127.5 its first digit could round to 128)
            e = (top >> np.int32(23)) - np.int32(133) + np.int32((top & np.int32(0x7FFFFF)) >= np.int32(0x7E0000))
            e = max(e, np.int32(-100)) if finite else np.int32(0)  # 2^(16-e) a float32; a block under 2^-94 kept to 2^-116
            to_whole = np.int32((143 - e) << 23).view(np.float32)  # 2^(16 - e): x · 2^(16-e) rounds to A·65536 + B·256 + C
            x_scales[b, kb] = np.int32((127 + e) << 23).view(np.float32) if finite else F32(np.nan)  # 2^e
            sum_high, sum_middle, sum_low = np.int32(0), np.int32(0), np.int32(0)
            at = kb * DIGITS * 32
            for j in range(32):  # vectorised: the rounding is vcvtps2dq, the digits shifts and masks
                value = x[b, kb * 32 + j] if finite else F32(0)
                whole = np.int32(np.rint(value * to_whole))  # |whole| < 127 · 2^16: exact in float32
                low = ((whole + np.int32(128)) & np.int32(255)) - np.int32(128)  # the nearest digits, each -128..127
                rest = (whole - low) >> np.int32(8)
                middle = ((rest + np.int32(128)) & np.int32(255)) - np.int32(128)
                high = (rest - middle) >> np.int32(8)
                digits[b, at + j] = np.int8(high)
                digits[b, at + 32 + j] = np.int8(middle)
                digits[b, at + 64 + j] = np.int8(low)
                sum_high += high
                sum_middle += middle
                sum_low += low
            corrections[b, kb * DIGITS] = np.int32(128) * sum_high
            corrections[b, kb * DIGITS + 1] = np.int32(128) * sum_middle
            corrections[b, kb * DIGITS + 2] = np.int32(128) * sum_low
    return digits, x_scales, corrections


@njit(cache=True)
def _no_digits(x, n_blocks):  # pragma: no cover -- compiled; where the blocks multiply in float32
    rows = x.shape[0]
    return np.empty((rows, 0), np.int8), np.empty((rows, 0), np.float32), np.empty((rows, 0), np.int32)


@njit(inline="always")
def block_sums(x, n_blocks):  # pragma: no cover -- compiled
    """Each block of 32 of x's elements' sum: what Q4's m multiplies."""
    sums = np.empty((x.shape[0], n_blocks), dtype=np.float32)
    for b in range(x.shape[0]):
        for kb in range(n_blocks):
            total = F32(0)
            for j in range(32):
                total += x[b, kb * 32 + j]
            sums[b, kb] = total
    return sums


# Each machine compiles one arithmetic for the block formats: integers where the CPU has AVX-512 VNNI, float32
# elsewhere (F16 always float32).
row_digits = _digits_of_rows if VNNI else _no_digits
_block_dot = digit_dot if VNNI else group_dot
f16_dot = group_dot(WEIGHT_FORMATS["f16"])
q8_0_dot = _block_dot(WEIGHT_FORMATS["q8_0"])
q4_0_dot = _block_dot(WEIGHT_FORMATS["q4_0"])
q4_1_dot = _block_dot(WEIGHT_FORMATS["q4_1"])
