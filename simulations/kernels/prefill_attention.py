"""A prompt's queries attending causally over their keys (prefill, or a chunk of a prompt), as FlashAttention does.

A panel of QUERY_PANEL_ROWS query rows (Br: one KV head's query heads, token after token) takes PREFILL_KEY_BLOCK
keys (Bc) at a time: their scores (a register-blocked product over the head dimension), the running softmax, and
their values mixed into the panel's outputs (a second product over the block's keys). The scores never leave the L1,
and a panel stops at its last token's last key (causal). Both products are the GEMM micro-kernel's shape, C (rows ×
4 vectors) += A B: the scores read the keys transposed (made once a call), the mixing reads the values as stored.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import llvm_ir as L
from .tuning import F32, FAST, PANELS_PER_JOB, PREFILL_KEY_BLOCK, QUERY_PANEL_ROWS, TILE_LANES

ir = L.ir


def _panel_product(n_rows, n_vectors, numerators, masked=True):
    """A numba intrinsic product(a, b, b_row, b_column, count, c, c_column, visible, highest, block_sums, shrink):
    for each row r < n_rows and the n_vectors × TILE_LANES columns j from 0, C[r, j] = Σ_k<count a[r, k] · b[b_row
    + k, b_column + j], then c[r, c_column + j] += C[r, j] (the values' product into a panel's outputs). a, c:
    C-contiguous 2-D arrays; b: 2-D, its rows contiguous.

    With `numerators` (a key block's scores, c_column 0), the block's step of the running softmax instead, row by
    row: the scores S = C, -inf where j >= visible[r] (a key after row r's query); highest[r] becomes the row's
    largest score so far, m; c[r, j] = exp(S[r, j] - m), block_sums[r] their sum, and shrink[r] = exp(old m - m),
    what the row's earlier numerators are to be multiplied by (1 when m stayed). Otherwise the last four are not
    read."""

    @intrinsic
    def product(typingctx, a, b, b_row, b_column, count, c, c_column, visible, highest, block_sums, shrink):
        def codegen(context, builder, signature, args):
            a_type, b_type, _, _, _, c_type = signature.args[:6]
            zero = context.get_constant(types.intp, 0)
            a_array, a_first = L.address(context, builder, a_type, args[0], [zero, zero])
            b_array, b_first = L.address(context, builder, b_type, args[1], [args[2], args[3]])
            c_array, c_first = L.address(context, builder, c_type, args[5], [zero, args[6]])
            c_width = cgutils.unpack_tuple(builder, c_array.shape)[1]
            a_width = cgutils.unpack_tuple(builder, a_array.shape)[1]
            b_step = builder.sdiv(cgutils.unpack_tuple(builder, b_array.strides)[0],
                                  context.get_constant(types.intp, 4))  # floats from one row of b to the next
            count_value = context.cast(builder, args[4], signature.args[4], types.intp)

            def at(n):
                return context.get_constant(types.intp, n)

            def c_vector(r, v):  # a pointer to row r's vector v of c's columns
                pointer = builder.gep(c_first, [builder.add(builder.mul(at(r), c_width), at(v * TILE_LANES))])
                return builder.bitcast(pointer, L.TILE.as_pointer())

            sums = [[cgutils.alloca_once(builder, L.TILE) for _ in range(n_vectors)] for _ in range(n_rows)]  # registers
            for row in sums:
                for accumulator in row:
                    builder.store(ir.Constant(L.TILE, [0.0] * TILE_LANES), accumulator)
            with cgutils.for_range(builder, count_value) as loop:
                b_row = builder.gep(b_first, [builder.mul(loop.index, b_step)])
                lanes = [L.load(builder, b_row, v * TILE_LANES, L.TILE, align=4) for v in range(n_vectors)]
                for r, row in enumerate(sums):
                    a_value = builder.load(builder.gep(a_first, [builder.add(builder.mul(at(r), a_width), loop.index)]))
                    a_lanes = L.splat(builder, a_value, L.TILE)
                    for v, accumulator in enumerate(row):
                        builder.store(L.fmuladd(builder, lanes[v], a_lanes, builder.load(accumulator)), accumulator)
            if not numerators:
                for r, row in enumerate(sums):
                    for v, accumulator in enumerate(row):
                        total = builder.fadd(builder.load(c_vector(r, v), align=4), builder.load(accumulator))
                        builder.store(total, c_vector(r, v), align=4)
                return context.get_dummy_value()
            visible_first, highest_first, sums_first, shrink_first = (
                L.address(context, builder, signature.args[i], args[i], [zero])[1] for i in range(7, 11))
            below = ir.Constant(L.TILE, [float("-inf")] * TILE_LANES)
            lanes_i32 = ir.VectorType(L.I32, TILE_LANES)
            minus_infinity = ir.Constant(L.F32, float("-inf"))

            def larger(x, y):
                return L.fmax(builder, x, y)

            differences = ir.Constant(L.TILE, [0.0] * TILE_LANES)  # each row's old maximum - new, one lane a row
            for r, row in enumerate(sums):
                scores = [builder.load(accumulator) for accumulator in row]
                if masked:  # 32-bit lanes: comparing 64-bit ones takes two instructions a vector
                    shown = L.splat(builder, builder.trunc(builder.load(builder.gep(visible_first, [at(r)])), L.I32),
                                    lanes_i32)
                    scores = [builder.select(builder.icmp_signed("<", ir.Constant(lanes_i32, [v * TILE_LANES + i for i
                                                                                              in range(TILE_LANES)]),
                                                                 shown), score, below) for v, score in enumerate(scores)]
                old = builder.load(builder.gep(highest_first, [at(r)]))
                new = larger(L.reduce(builder, scores, larger), old)
                builder.store(new, builder.gep(highest_first, [at(r)]))
                # no key seen yet (every score -inf): numerators 0, and nothing earlier to shrink
                base = builder.select(builder.fcmp_ordered("==", new, minus_infinity), ir.Constant(L.F32, 0.0), new)
                difference = builder.select(builder.fcmp_ordered("==", old, minus_infinity), minus_infinity,
                                            builder.fsub(old, base))
                differences = builder.insert_element(differences, difference, ir.Constant(L.I32, r))
                shifted = L.splat(builder, base, L.TILE)
                weights = [L.exp(builder, builder.fsub(s, shifted)) for s in scores]
                for v, w in enumerate(weights):
                    builder.store(w, c_vector(r, v), align=4)
                builder.store(L.reduce(builder, weights, builder.fadd), builder.gep(sums_first, [at(r)]))
            shrinks = L.exp(builder, differences)
            for r in range(n_rows):
                builder.store(builder.extract_element(shrinks, ir.Constant(L.I32, r)), builder.gep(shrink_first, [at(r)]))
            return context.get_dummy_value()
        return types.void(a, b, b_row, b_column, count, c, c_column, visible, highest, block_sums, shrink), codegen
    return product


_block_numerators = _panel_product(QUERY_PANEL_ROWS, PREFILL_KEY_BLOCK // TILE_LANES, numerators=True)
# A block every row of the panel sees whole (all but a panel's last): no mask to compute.
_whole_block_numerators = _panel_product(QUERY_PANEL_ROWS, PREFILL_KEY_BLOCK // TILE_LANES, numerators=True,
                                         masked=False)
# The values' product, four vectors of the head dimension at a time (SmolLM2's 64 is four with AVX-512, eight with
# AVX2), and what is left of another head dimension one vector at a time.
_mix_4_vectors = _panel_product(QUERY_PANEL_ROWS, 4, numerators=False)
_mix_1_vector = _panel_product(QUERY_PANEL_ROWS, 1, numerators=False)


def prompt_attention(q: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Causal grouped-query attention of the last Tq positions over all Lk keys and values, as model.attention:
    q (Tq, heads, hd); keys, values (kv_heads, Lk, hd), each row contiguous. Returns (Tq, heads * hd)."""
    tq, heads, hd = q.shape
    if values.strides[2] != 4:
        raise ValueError("prompt_attention needs the values' rows contiguous")
    kv_heads, lk = keys.shape[:2]
    blocks = -(-lk // PREFILL_KEY_BLOCK)
    # The keys transposed a block at a time, (hd, PREFILL_KEY_BLOCK) each, the last padded with zeros (always
    # masked): a block is one contiguous run, where rows of the whole transposed matrix would fall into the same few
    # sets of the L1 (lever `transposed-key-blocks`).
    transposed = np.zeros((kv_heads, blocks * PREFILL_KEY_BLOCK, hd), dtype=F32)
    transposed[:, :lk] = keys
    transposed = np.ascontiguousarray(transposed.reshape(kv_heads, blocks, PREFILL_KEY_BLOCK, hd).transpose(0, 1, 3, 2))
    out = np.empty((tq, heads, hd), dtype=F32)
    _prompt_attention(q, transposed, values, F32(1 / math.sqrt(hd)), numba.config.NUMBA_NUM_THREADS, out)
    return out.reshape(tq, heads * hd)


@njit(parallel=True, fastmath=FAST, cache=True)
def _prompt_attention(q, transposed, values, scale, threads, out):  # pragma: no cover -- compiled; tested through prompt_attention
    tq, heads, hd = q.shape
    kv_heads, lk = values.shape[0], values.shape[1]
    rep = heads // kv_heads
    past = lk - tq  # keys before the first query
    rows = tq * rep  # a KV head's query rows, token after token, its `rep` query heads each
    panels = (rows + QUERY_PANEL_ROWS - 1) // QUERY_PANEL_ROWS
    runs = (panels + PANELS_PER_JOB - 1) // PANELS_PER_JOB  # a job's panels: PANELS_PER_JOB neighbours
    jobs = kv_heads * runs
    # Each core takes every `threads`-th job, so each gets as many late (long, causal) panels as early ones, with its
    # scratch made once (lever `worker-scratch`). The jobs go KV head by KV head, so the cores share one head's keys
    # and values in the L2 (lever `jobs-by-kv-head`); a job's panels take each key block in turn while it is in
    # the L1 (lever `panels-per-job`).
    for worker in prange(threads):
        queries = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS, hd), dtype=F32)
        limits = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS), dtype=np.int64)  # row r sees keys 0 .. limits[r] - 1
        visible = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS), dtype=np.int64)  # of a block's keys, the first visible[r]
        numerators = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS, PREFILL_KEY_BLOCK), dtype=F32)  # exp(score - highest)
        highest = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS), dtype=F32)  # each row's largest score so far
        sums = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS), dtype=F32)  # its numerators' sum
        block_sums = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS), dtype=F32)
        shrink = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS), dtype=F32)
        mixed = np.empty((PANELS_PER_JOB, QUERY_PANEL_ROWS, hd), dtype=F32)  # Σ numerator · value
        counts = np.empty(PANELS_PER_JOB, dtype=np.int64)  # each panel's query rows
        for job in range(worker, jobs, threads):
            g, run = job // runs, job % runs
            # A runtime count (the last job's maybe fewer): with the constant, LLVM unrolled the loops over a job's
            # panels and the cold compile grew by seconds.
            job_panels = min(PANELS_PER_JOB, panels - run * PANELS_PER_JOB)
            end = 0
            for p in range(job_panels):
                first_row = (run * PANELS_PER_JOB + p) * QUERY_PANEL_ROWS
                n = min(QUERY_PANEL_ROWS, rows - first_row)
                counts[p] = n
                queries[p] = 0
                limits[p] = 0  # rows past the last query see no key: their numerators are 0
                highest[p] = -np.inf
                sums[p] = 0
                mixed[p] = 0
                for r in range(n):
                    t, h = (first_row + r) // rep, g * rep + (first_row + r) % rep
                    for d in range(hd):
                        queries[p, r, d] = q[t, h, d] * scale
                    limits[p, r] = past + t + 1
                    end = max(end, limits[p, r])
            for first_key in range(0, end, PREFILL_KEY_BLOCK):
                block = transposed[g, first_key // PREFILL_KEY_BLOCK]
                for p in range(job_panels):
                    n = counts[p]
                    if limits[p, n - 1] <= first_key:  # the panel's rows see none of this block
                        continue
                    for r in range(QUERY_PANEL_ROWS):
                        visible[p, r] = limits[p, r] - first_key
                    if limits[p, 0] - first_key >= PREFILL_KEY_BLOCK:
                        _whole_block_numerators(queries[p], block, 0, 0, hd, numerators[p], 0, visible[p], highest[p],
                                                block_sums[p], shrink[p])
                    else:
                        _block_numerators(queries[p], block, 0, 0, hd, numerators[p], 0, visible[p], highest[p],
                                          block_sums[p], shrink[p])
                    for r in range(n):
                        if shrink[p, r] != 1:  # a larger score: what was summed shrinks to the new scale
                            sums[p, r] *= shrink[p, r]
                            for d in range(hd):
                                mixed[p, r, d] *= shrink[p, r]
                        sums[p, r] += block_sums[p, r]
                    count = min(PREFILL_KEY_BLOCK, limits[p, n - 1] - first_key)
                    for column in range(0, hd - 4 * TILE_LANES + 1, 4 * TILE_LANES):
                        _mix_4_vectors(numerators[p], values[g], first_key, column, count, mixed[p], column, visible[p],
                                       highest[p], block_sums[p], shrink[p])
                    for column in range(hd // (4 * TILE_LANES) * 4 * TILE_LANES, hd, TILE_LANES):
                        _mix_1_vector(numerators[p], values[g], first_key, column, count, mixed[p], column, visible[p],
                                      highest[p], block_sums[p], shrink[p])
            for p in range(job_panels):
                first_row = (run * PANELS_PER_JOB + p) * QUERY_PANEL_ROWS
                for r in range(counts[p]):
                    t, h = (first_row + r) // rep, g * rep + (first_row + r) % rep
                    share = 1 / sums[p, r]  # one division a row, not one an element
                    for d in range(hd):
                        out[t, h, d] = mixed[p, r, d] * share
