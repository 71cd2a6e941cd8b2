"""One new token per sequence attending over its KV cache (decode), as flash-decoding does.

Each cached key and value row is read once for all the query heads that share it (grouped-query attention), in
parallel over sequences × KV heads × split-K pieces of the context. A piece goes DECODE_KEY_BLOCK keys at a time:
their scores for every query head, the running softmax's step, then their values, each block's rows read in order
while they are in the L1 (lever `decode-key-blocks`); the pieces are combined by their maxima.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import llvm_ir as L
from .pointwise import _exp_row
from .tuning import (
    CACHE_LINE_FLOATS,
    DECODE_KEY_BLOCK,
    F32,
    FAST,
    MIN_SPLIT_TOKENS,
    PREFETCH_ROWS,
    TILE_LANES,
)

ir = L.ir


def one_token_attention(q: np.ndarray, keys: np.ndarray, values: np.ndarray, layer: int, first_slot: int,
                        lengths: np.ndarray) -> np.ndarray:
    """Attention of one new token per sequence over its KV cache; returns (n, heads * hd).

    q: (n, heads, hd). keys, values: a cache block (layers, slots, kv_heads, max_tokens, hd) whose slots
    first_slot .. first_slot + n - 1 hold the n sequences; sequence i's first lengths[i] rows (its new
    token's included) are attended. Equals model.decode_attention on the same rows.
    """
    n, heads, hd = q.shape
    out = np.empty((n, heads, hd), dtype=F32)
    # One compiled call does everything else: numpy calls preparing its arguments cost as much as one user's work.
    # q contiguous: the model's queries are a view into its fused QKV product, and strided ones kept the score loops
    # scalar (lever `contiguous-queries`).
    _one_token_attention(np.ascontiguousarray(q), keys, values, layer, first_slot, np.asarray(lengths, dtype=np.int64),
                         F32(1 / math.sqrt(hd)), numba.config.NUMBA_NUM_THREADS, out)
    return out.reshape(n, heads * hd)


@njit(cache=True)
def _split_k(pairs, longest, threads):  # pragma: no cover -- compiled; tested through one_token_attention
    """How many pieces each (sequence, KV head) pair's context is split into: enough for several jobs per core,
    none shorter than MIN_SPLIT_TOKENS, and a whole number of jobs per core when the pairs alone do not give one
    (so that no core waits on another's extra job)."""
    most = max(1, -(-longest // MIN_SPLIT_TOKENS))
    wanted = max(1, min(most, -(-4 * threads // pairs)))
    for splits in range(wanted, most + 1):
        if pairs * splits % threads == 0:
            return splits
    for splits in range(wanted - 1, 0, -1):  # fewer, longer pieces, when more would be too short (513 tokens: 2)
        if pairs * splits % threads == 0:
            return splits
    return wanted


def _key_block(n_vectors):
    """A numba intrinsic attend(k, v, first_key, mine, scale, tops, sums, mixed, scratch): one block of the running
    softmax, for a head dimension of n_vectors vectors. Keys (and values) first_key .. first_key + DECODE_KEY_BLOCK
    - 1 of k and v (2-D, rows contiguous); mine (rep, hd) the query heads that share them; for each head r, tops[r]
    is its largest scaled score so far, sums[r] its numerators' sum and mixed[r] their values' sum, each numerator
    exp(score - tops[r]); the block's keys join them (the earlier ones shrunk by exp(old top - new top)). scratch:
    (rep, 2 DECODE_KEY_BLOCK) float32, each head's numerators and shrink factor."""
    @intrinsic
    def attend(typingctx, k, v, first_key, mine, scale, tops, sums, mixed, scratch):
        def codegen(context, builder, signature, args):
            k_type, v_type, _, mine_type, _, tops_type, sums_type, mixed_type, scratch_type = signature.args
            zero = context.get_constant(types.intp, 0)

            def at(n):
                return context.get_constant(types.intp, n)

            k_array, k_first = L.address(context, builder, k_type, args[0], [args[2], zero])
            v_array, v_first = L.address(context, builder, v_type, args[1], [args[2], zero])
            mine_array, mine_first = L.address(context, builder, mine_type, args[3], [zero, zero])
            tops_first, sums_first, mixed_first, scratch_first = (
                L.address(context, builder, signature.args[i], args[i], [zero] * signature.args[i].ndim)[1]
                for i in range(5, 9))
            rep = cgutils.unpack_tuple(builder, mine_array.shape)[0]
            hd = at(n_vectors * TILE_LANES)
            k_step, v_step = (builder.sdiv(cgutils.unpack_tuple(builder, array.strides)[0], at(4))
                              for array in (k_array, v_array))  # floats from one row to the next
            scale = L.splat(builder, args[4], L.TILE)

            def row(first, step, j):
                return builder.gep(first, [builder.mul(at(j), step)])

            def prefetch_row(first, step, j):  # past the end of the cache: only a hint
                for line in range(0, n_vectors * TILE_LANES, CACHE_LINE_FLOATS):
                    L.prefetch(builder, builder.bitcast(builder.gep(row(first, step, j), [at(line)]), L.I8.as_pointer()))

            def scratch_vector(r, which):  # head r's numerators (0) or shrink factor (1)
                pointer = builder.gep(scratch_first, [builder.add(builder.mul(r, at(2 * DECODE_KEY_BLOCK)),
                                                                  at(which * DECODE_KEY_BLOCK))])
                return builder.bitcast(pointer, L.TILE.as_pointer())

            def larger(x, y):
                return L.fmax(builder, x, y)

            # Scores, head after head, each key's row read in order (the first head's from memory, prefetching the
            # keys PREFETCH_ROWS on), each key's lanes added up by one transposing tree for the block.
            with cgutils.for_range(builder, rep) as heads:
                r = heads.index
                q_row = builder.gep(mine_first, [builder.mul(r, hd)])
                queries = [builder.fmul(L.load(builder, q_row, c * TILE_LANES, L.TILE, align=4), scale)
                           for c in range(n_vectors)]
                first_head = builder.icmp_signed("==", r, zero)
                partial = []
                for j in range(DECODE_KEY_BLOCK):
                    with builder.if_then(first_head):
                        prefetch_row(k_first, k_step, PREFETCH_ROWS + j)
                    key = row(k_first, k_step, j)
                    total = builder.fmul(L.load(builder, key, 0, L.TILE, align=4), queries[0])
                    for c in range(1, n_vectors):
                        total = L.fmuladd(builder, L.load(builder, key, c * TILE_LANES, L.TILE, align=4), queries[c], total)
                    partial.append(total)
                builder.store(L.transpose_sums(builder, partial), scratch_vector(r, 0), align=4)
            # The running softmax's step, head after head.
            with cgutils.for_range(builder, rep) as heads:
                r = heads.index
                scores = builder.load(scratch_vector(r, 0), align=4)
                top_at, sum_at = builder.gep(tops_first, [r]), builder.gep(sums_first, [r])
                old = builder.load(top_at)
                new = larger(L.reduce(builder, [scores], larger), old)
                builder.store(new, top_at)
                numerators = L.exp(builder, builder.fsub(scores, L.splat(builder, new, L.TILE)))
                builder.store(numerators, scratch_vector(r, 0), align=4)
                shrink = L.exp(builder, L.splat(builder, builder.fsub(old, new), L.TILE))  # exp(-inf) = 0: the first block
                builder.store(shrink, scratch_vector(r, 1), align=4)
                earlier = builder.fmul(builder.load(sum_at), builder.extract_element(shrink, ir.Constant(L.I32, 0)))
                builder.store(builder.fadd(earlier, L.reduce(builder, [numerators], builder.fadd)), sum_at)
            # The values, head after head, each row read in order (the first head's from memory, prefetching the row
            # PREFETCH_ROWS on), into two sets of sums taken in turn (one would wait on each multiply-add's latency).
            with cgutils.for_range(builder, rep) as heads:
                r = heads.index
                mixed_row = builder.gep(mixed_first, [builder.mul(r, hd)])
                numerator_row = builder.bitcast(scratch_vector(r, 0), L.F32.as_pointer())
                shrink = builder.load(scratch_vector(r, 1), align=4)
                sums = [[builder.fmul(L.load(builder, mixed_row, c * TILE_LANES, L.TILE, align=4), shrink)
                         for c in range(n_vectors)], [None] * n_vectors]
                first_head = builder.icmp_signed("==", r, zero)
                for j in range(DECODE_KEY_BLOCK):
                    with builder.if_then(first_head):
                        prefetch_row(v_first, v_step, PREFETCH_ROWS + j)
                    weight = L.splat(builder, builder.load(builder.gep(numerator_row, [at(j)])), L.TILE)
                    value = row(v_first, v_step, j)
                    for c in range(n_vectors):
                        lanes = L.load(builder, value, c * TILE_LANES, L.TILE, align=4)
                        before = sums[j % 2][c]
                        sums[j % 2][c] = (builder.fmul(lanes, weight) if before is None
                                          else L.fmuladd(builder, lanes, weight, before))
                for c in range(n_vectors):
                    pointer = builder.bitcast(builder.gep(mixed_row, [at(c * TILE_LANES)]), L.TILE.as_pointer())
                    builder.store(builder.fadd(sums[0][c], sums[1][c]), pointer, align=4)
            return context.get_dummy_value()
        return types.void(k, v, first_key, mine, scale, tops, sums, mixed, scratch), codegen
    return attend


# A head dimension of 4 or 8 vectors (SmolLM2's 64: 4 with AVX-512, 8 with AVX2); any other goes key by key (the
# tiny test model's 16). Each variant adds about a second to the kernels' cold compile.
_attend_4_vectors = _key_block(4)
_attend_8_vectors = _key_block(8)


@njit(fastmath=FAST, inline="always")
def _attend_keys(k, v, first, stop, mine, scale, tops, sums, mixed, scores, powers):  # pragma: no cover -- compiled
    """The blocks' step for keys first .. stop - 1 (at most as many as `scores` holds), key by key: a piece's last
    keys, short of a block, and every key of a head dimension the blocks do not take."""
    rep, hd = mine.shape
    m = stop - first
    for r in range(rep):
        top = tops[r]
        for j in range(m):
            s = F32(0)
            for d in range(hd):
                s += mine[r, d] * k[first + j, d]
            scores[j] = s * scale
            top = max(top, scores[j])
        shrink = np.exp(tops[r] - top)  # exp(-inf) = 0: nothing earlier
        tops[r] = top
        sums[r] = sums[r] * shrink + _exp_row(scores[:m], powers[:m], top)
        for d in range(hd):
            mixed[r, d] *= shrink
        for j in range(m):
            for d in range(hd):
                mixed[r, d] += scores[j] * v[first + j, d]


# error_model="numpy": a NaN in the inputs (a model gone wrong) comes out as NaN, as from the numpy path, where
# numba's default would raise ZeroDivisionError from the division of the pieces' sums.
@njit(parallel=True, fastmath=FAST, cache=True, error_model="numpy")
def _one_token_attention(q, keys, values, layer, first_slot, lengths, scale, threads, out):  # pragma: no cover
    n, heads, hd = q.shape
    kv_heads = keys.shape[2]
    rep = heads // kv_heads  # query heads per KV head
    longest = 0
    for length in lengths:  # a loop, not lengths.max(): that too would be a parallel region of its own
        longest = max(longest, length)
    # threads: numba's team ($NUMBA_NUM_THREADS; nothing here calls set_num_threads), passed in: get_num_threads()
    # is slow from Python and, called compiled, keeps the function out of numba's cache.
    splits = _split_k(n * kv_heads, longest, threads)
    jobs = n * kv_heads * splits
    vectors = hd // TILE_LANES if hd % TILE_LANES == 0 else 0
    # np.empty, never np.zeros, outside the parallel loop: numba runs each np.zeros as a parallel region of its own,
    # a few µs each to start. Each job sets its own rows and has its own scratch, allocated once here.
    piece_max = np.empty((jobs, rep), dtype=np.float32)
    piece_sum = np.empty((jobs, rep), dtype=np.float32)
    piece_out = np.empty((jobs, rep, hd), dtype=np.float32)
    block_scratch = np.empty((jobs, rep, 2 * DECODE_KEY_BLOCK), dtype=np.float32)
    key_scores = np.empty((jobs, DECODE_KEY_BLOCK), dtype=np.float32)
    key_powers = np.empty((jobs, DECODE_KEY_BLOCK), dtype=np.int32)
    for job_index in prange(jobs):
        job = np.int64(job_index)  # prange's index may be unsigned, and unsigned // signed is a float in numba
        seq, rest = divmod(job, kv_heads * splits)
        group, piece = divmod(rest, splits)
        slot, length = first_slot + seq, lengths[seq]
        per_piece = -(-length // splits)
        start, stop = piece * per_piece, min(length, (piece + 1) * per_piece)
        tops, sums, mixed = piece_max[job], piece_sum[job], piece_out[job]
        for r in range(rep):
            tops[r], sums[r] = -np.inf, 0  # an empty piece stays so: its sum 0 weighs nothing below
            for d in range(hd):
                mixed[r, d] = 0
        k, v = keys[layer, slot, group], values[layer, slot, group]  # (max_tokens, hd)
        mine = q[seq, group * rep:(group + 1) * rep]  # this group's query heads
        first = start
        while (vectors == 4 or vectors == 8) and first + DECODE_KEY_BLOCK <= stop:
            if vectors == 4:
                _attend_4_vectors(k, v, first, mine, scale, tops, sums, mixed, block_scratch[job])
            else:
                _attend_8_vectors(k, v, first, mine, scale, tops, sums, mixed, block_scratch[job])
            first += DECODE_KEY_BLOCK
        while first < stop:
            last = min(stop, first + DECODE_KEY_BLOCK)
            _attend_keys(k, v, first, last, mine, scale, tops, sums, mixed, key_scores[job], key_powers[job])
            first = last
    # Combine the pieces: rescale each by exp(its max - the overall max). A few thousand multiply-adds, on one
    # core: a second parallel region would cost more to start than the work.
    for head_index in range(n * heads):
        seq, head = divmod(head_index, heads)
        group, r = divmod(head, rep)
        first = (seq * kv_heads + group) * splits
        top = piece_max[first, r]  # the first piece is never empty: every sequence has a token
        for p in range(first + 1, first + splits):
            if piece_sum[p, r] > 0:
                top = max(top, piece_max[p, r])
        total = np.float32(0)
        for d in range(hd):
            out[seq, head, d] = 0
        for p in range(first, first + splits):
            if piece_sum[p, r] > 0:
                factor = np.exp(piece_max[p, r] - top)
                total += factor * piece_sum[p, r]
                for d in range(hd):
                    out[seq, head, d] += factor * piece_out[p, r, d]
        for d in range(hd):
            out[seq, head, d] /= total
