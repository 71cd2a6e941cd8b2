"""Rows times a float32 weight matrix: y = x @ W.T, a GEMM micro-kernel's register blocking.

A tile of TILE_OUTPUTS outputs (NR: two vectors) times up to TILE_INPUTS input rows (MR) takes a pass over the input
dimension: at each column k it loads the outputs' two vectors of weights and multiplies them by each input row's
x[k], broadcast, into 2 × MR accumulators, which end as the outputs themselves (lever `outputs-as-lanes`, shape
`tile-2x12`). The next input rows then reuse the tile's weights from the L1, so memory delivers W once. The tiles
read W from a packed copy (`weight_tiles`, BLIS's packed panel): each group of NR rows transposed, column after
column, one forward stream.
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import llvm_ir as L
from .memory import IdentityCache, arena_array
from .tuning import (
    CACHE_LINE_FLOATS,
    F32,
    FAST,
    K_UNROLL,
    MAX_KERNEL_ROWS,
    PREFETCH_FEW_ROWS,
    PREFETCH_NEAR_FLOATS,
    TILE_INPUTS,
    TILE_LANES,
    TILE_OUTPUTS,
)


def rows_times_weight(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ W.T for x (rows, in) and a row-major W (out, in): every weight read once for each MAX_KERNEL_ROWS rows
    (once for a decode step's)."""
    x = np.ascontiguousarray(x)
    y = np.empty((x.shape[0], w.shape[0]), dtype=F32)
    if not tiles_fit(w):  # none of the model's matrices
        _rows_times_weight(x, w.view(np.ndarray), y)
    else:
        rows_times_tiles(x, weight_tiles(w), y)
    return y


def tiles_fit(w: np.ndarray) -> bool:
    """Whether the micro-kernels take W: whole groups of rows, whole unrolled steps of columns."""
    return w.shape[0] % TILE_OUTPUTS == 0 and w.shape[1] % K_UNROLL == 0


def rows_times_tiles(x: np.ndarray, tiles: np.ndarray, y: np.ndarray) -> None:
    """y = x @ W.T from W's `weight_tiles`: a decode step's rows in one pass, a prompt's in pieces."""
    if x.shape[0] <= MAX_KERNEL_ROWS:
        _tiled_rows_times_weight(x, tiles, y)
        return
    for first in range(0, x.shape[0], MAX_KERNEL_ROWS):
        rows = slice(first, first + MAX_KERNEL_ROWS)
        _tiled_rows_times_weight(x[rows], tiles, y[rows])


@njit(parallel=True, fastmath=FAST, cache=True)
def _rows_times_weight(x, w, y):  # pragma: no cover -- compiled; tested through rows_times_weight
    # Matrices the tiles do not fit (none of the model's). Four weight rows at a time (parallel over groups of
    # them) by two input rows: eight sums in registers; the four rows stay in the L1 while every input row passes.
    rows, n_in = x.shape
    n_out = w.shape[0]
    for group in prange((n_out + 3) // 4):
        o = 4 * np.int64(group)
        if o + 4 > n_out:  # the last rows, when `out` is not a multiple of four
            for r in range(o, n_out):
                for b in range(rows):
                    s = F32(0)
                    for k in range(n_in):
                        s += w[r, k] * x[b, k]
                    y[b, r] = s
            continue
        b = 0
        while b + 2 <= rows:
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = F32(0)
            for k in range(n_in):
                w0, w1, w2, w3, x0, x1 = w[o, k], w[o + 1, k], w[o + 2, k], w[o + 3, k], x[b, k], x[b + 1, k]
                s00 += w0 * x0
                s01 += w1 * x0
                s02 += w2 * x0
                s03 += w3 * x0
                s10 += w0 * x1
                s11 += w1 * x1
                s12 += w2 * x1
                s13 += w3 * x1
            y[b, o], y[b, o + 1], y[b, o + 2], y[b, o + 3] = s00, s01, s02, s03
            y[b + 1, o], y[b + 1, o + 1], y[b + 1, o + 2], y[b + 1, o + 3] = s10, s11, s12, s13
            b += 2
        if b < rows:  # an odd row
            s0 = s1 = s2 = s3 = F32(0)
            for k in range(n_in):
                x0 = x[b, k]
                s0 += w[o, k] * x0
                s1 += w[o + 1, k] * x0
                s2 += w[o + 2, k] * x0
                s3 += w[o + 3, k] * x0
            y[b, o], y[b, o + 1], y[b, o + 2], y[b, o + 3] = s0, s1, s2, s3


def _microkernel(n_inputs, unroll=1, prefetch_next=False, prefetch_near=False):
    """A numba intrinsic tile(tiles, g, x, b, y): y[b + j, T g + o] = W[T g + o] · x[b + j] for o < T (TILE_OUTPUTS)
    and j < n_inputs, W's group g of rows from its `weight_tiles`, x's rows contiguous. `unroll`: sets of
    accumulators the columns take in turn, so that one or two rows do not wait on each multiply-add's latency (the
    input dimension a multiple of it); `prefetch_next`: the pass prefetches its share of the next group's tiles
    into the L2 (the next group a core takes: prange gives each core a band of them); `prefetch_near`: the weights
    PREFETCH_NEAR_FLOATS ahead of its own, into the L1."""
    @intrinsic
    def tile(typingctx, tiles, group, x, first_input, y):
        def codegen(context, builder, signature, args):
            tiles_type, _, x_type, _, y_type = signature.args
            zero = context.get_constant(types.intp, 0)

            def plus(base, i):
                return builder.add(base, context.get_constant(types.intp, i))

            def prefetch(offset, locality):
                L.prefetch(builder, builder.bitcast(builder.gep(weights, [offset]), L.I8.as_pointer()), locality)

            tiles_array, weights = L.address(context, builder, tiles_type, args[0], [args[1], zero])
            inputs = [L.address(context, builder, x_type, args[2], [plus(args[3], j), zero])[1]
                      for j in range(n_inputs)]
            group_floats = cgutils.unpack_tuple(builder, tiles_array.shape)[1]
            count = lambda value: L.ir.Constant(group_floats.type, value)  # noqa: E731
            n_in = builder.sdiv(group_floats, count(TILE_OUTPUTS))
            vectors = TILE_OUTPUTS // TILE_LANES
            sums = [[[cgutils.alloca_once(builder, L.TILE) for _ in range(vectors)] for _ in range(n_inputs)]
                    for _ in range(unroll)]  # registers
            for accumulator in (a for step in sums for row in step for a in row):
                builder.store(L.ir.Constant(L.TILE, [0.0] * TILE_LANES), accumulator)
            with cgutils.for_range(builder, builder.sdiv(n_in, count(unroll))) as loop:
                for step in range(unroll):
                    k = builder.add(builder.mul(loop.index, count(unroll)), count(step))
                    here = builder.mul(k, count(TILE_OUTPUTS))  # column k's weights, for the group's outputs
                    for line in range(0, TILE_OUTPUTS, CACHE_LINE_FLOATS) if prefetch_next else ():
                        prefetch(builder.add(builder.add(here, group_floats), count(line)), 2)
                    for line in range(0, TILE_OUTPUTS, CACHE_LINE_FLOATS) if prefetch_near else ():
                        prefetch(builder.add(here, count(PREFETCH_NEAR_FLOATS + line)), 3)
                    weight_lanes = [L.load(builder, weights, builder.add(here, count(v * TILE_LANES)), L.TILE, align=4)
                                    for v in range(vectors)]
                    for j, pointer in enumerate(inputs):
                        xs = L.splat(builder, builder.load(builder.gep(pointer, [k])), L.TILE)
                        for v, lanes in enumerate(weight_lanes):
                            builder.store(L.fmuladd(builder, lanes, xs, builder.load(sums[step][j][v])), sums[step][j][v])
            first_output = builder.mul(args[1], count(TILE_OUTPUTS))
            for j in range(n_inputs):  # input row j's outputs, as they lie in y's row
                for v in range(vectors):
                    outputs = builder.load(sums[0][j][v])
                    for step in range(1, unroll):
                        outputs = builder.fadd(outputs, builder.load(sums[step][j][v]))
                    _, at = L.address(context, builder, y_type, args[4],
                                      [plus(args[3], j), builder.add(first_output, count(v * TILE_LANES))])
                    builder.store(outputs, builder.bitcast(at, L.TILE.as_pointer()), align=4)
            return context.get_dummy_value()
        return types.void(tiles, group, x, first_input, y), codegen
    return tile


# A full tile prefetches the next group while its later rows compute from the cache; the few-row tiles as the CPU
# wants it (lever `prefetch-few-rows`).
_tile_mr_rows = _microkernel(TILE_INPUTS, prefetch_next=True)
_tile_8_rows = _microkernel(8, prefetch_next=PREFETCH_FEW_ROWS, prefetch_near=PREFETCH_FEW_ROWS)
_tile_4_rows = _microkernel(4, prefetch_next=PREFETCH_FEW_ROWS, prefetch_near=PREFETCH_FEW_ROWS)
_tile_2_rows = _microkernel(2, unroll=2, prefetch_next=PREFETCH_FEW_ROWS, prefetch_near=PREFETCH_FEW_ROWS)
_tile_1_row = _microkernel(1, unroll=4, prefetch_near=PREFETCH_FEW_ROWS)


@njit(parallel=True, fastmath=FAST, cache=True)
def _tiled_rows_times_weight(x, tiles, y):  # pragma: no cover -- compiled; tested through rows_times_weight
    rows = x.shape[0]
    for group in prange(tiles.shape[0]):
        b = 0
        while b + TILE_INPUTS <= rows:
            _tile_mr_rows(tiles, group, x, b, y)
            b += TILE_INPUTS
        if b + 8 <= rows:
            _tile_8_rows(tiles, group, x, b, y)
            b += 8
        if b + 4 <= rows:
            _tile_4_rows(tiles, group, x, b, y)
            b += 4
        if b + 2 <= rows:
            _tile_2_rows(tiles, group, x, b, y)
            b += 2
        if b < rows:
            _tile_1_row(tiles, group, x, b, y)


# Each matrix's tiles, made on its first product and kept while the array that owns its memory lives (a model's
# weights: for the process). The key is where W's elements are; a weak reference to the base array tells a matrix from a
# later one at the same address. The weights are read-only: a matrix changed in place keeps its old tiles. The
# asking array object is remembered too, so the model's matrices are answered at each step without their address.
_weight_tiles: dict[tuple, tuple[weakref.ref, np.ndarray]] = {}
_tiles_of_array = IdentityCache()


def weight_tiles(w: np.ndarray) -> np.ndarray:
    """W (out, in) packed as the micro-kernels read it: group g's row holds its T rows (TILE_OUTPUTS) transposed,
    column k's T weights at T k. Shape (out / T, T · in); made once."""
    tiles = _tiles_of_array.get(w)
    if tiles is not None:
        return tiles
    owner = w
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    key = (w.__array_interface__["data"][0], w.shape, w.strides)
    found = _weight_tiles.get(key)
    if found is not None and found[0]() is owner:
        tiles = found[1]
    else:
        tiles = arena_array((w.shape[0] // TILE_OUTPUTS, TILE_OUTPUTS * w.shape[1]), F32)
        _pack_tiles(w.view(np.ndarray), tiles)  # a memory map as a plain array: numba takes no subclass
        tiles.flags.writeable = False

        def forget(reference: weakref.ref, key: tuple = key) -> None:
            if _weight_tiles.get(key, (None,))[0] is reference:
                del _weight_tiles[key]

        _weight_tiles[key] = (weakref.ref(owner, forget), tiles)
    _tiles_of_array.put(w, tiles)
    return tiles


@njit(parallel=True, cache=True)
def _pack_tiles(w, tiles):  # pragma: no cover -- compiled; tested through rows_times_weight
    for group in prange(tiles.shape[0]):
        for k in range(w.shape[1]):
            for o in range(TILE_OUTPUTS):
                tiles[group, TILE_OUTPUTS * k + o] = w[TILE_OUTPUTS * group + o, k]
