"""The model's hot spots, compiled with numba: what an inference engine's CPU kernels do, beside the model.

`model.py` stays the readable numpy definition and calls these behind its own functions:

- `rows_times_weight` (from `model.linear`): y = x @ W.T — a decode step of up to MAX_KERNEL_ROWS users, the LM
  head, or a prompt's rows in pieces of that many. Each weight is read from memory once for all the rows, from a
  copy of the matrix in the order the kernel reads it (`weight_tiles`, made by its first product: a
  model's float32 matrices take their size again in memory). numpy's BLAS packs the whole matrix into a
  buffer on every product of a few rows, so its step of 8 users cost 2-7 times one user's though the
  weights are read once either way (benchmarks/README.md).
- `rows_times_blocks` (from `model.quantized_linear`): the same product for a matrix kept in a GGUF format (F16,
  Q8_0, Q4_0, Q4_1), reading the format's bytes from a copy with the blocks of 16 rows interleaved. Where the CPU has
  AVX-512 VNNI, the Q8_0 and Q4 blocks multiply integers (each activation as three 8-bit digits, exact to float32's
  rounding: `_digit_dot_intrinsic`); elsewhere each weight becomes a float in registers (`_group_dot_intrinsic`).
- `one_token_attention` (from `model.transformer_block`): one new token per sequence attends over its
  KV cache. Each cached key and value row is read once for all the query heads that share it
  (grouped-query attention), in parallel over sequences × KV heads × parts of the context, each part a block of
  keys at a time with a running softmax, the parts combined by their maxima (a numerically stable
  "flash-decoding" split).
- `prompt_attention` (from `model.attention`): a prompt's queries attend causally over their keys, block by
  block as FlashAttention does, the scores never stored: a prompt's attention in two register-blocked products
  a block, with the running softmax between them.
- element-wise work: rms_norm and RoPE (one compiled pass instead of numpy's several calls), and exp for
  every size (the MLP gate's sigmoid, numpy attention's softmax): numpy's float32 exp takes three times as long
  here.

PD_KERNELS=numpy selects the pure numpy path instead: the reference every kernel is tested against, and
what `machine_info()` names on every trace and page. Compiled code is cached in the per-user cache
directory (`numba/` in it), so only the first build on a machine compiles.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
import weakref

import numpy as np

from .paths import cache_dir

# Set before numba is imported: its cache goes to the per-user cache, never into the source tree.
os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir() / "numba"))
# OpenMP first: a parallel region starts in about 3 µs against 30-40 µs for numba's own workqueue
# here, and a decode step starts about 200 of them. OpenMP also accepts calls from several threads.
os.environ.setdefault("NUMBA_THREADING_LAYER_PRIORITY", "omp tbb workqueue")
# Idle OpenMP threads spin briefly, then sleep. A decode step calls a kernel every 20-100 µs: a sleeping team
# woke up for each (passive waiting cost a one-user step 2-3 ms of its ~30 here, a 513-token attention call 126
# µs against 57), while an endless spin (OMP_WAIT_POLICY=active) lost whole time slices on a loaded machine
# (a 0.2 ms attention call took 30-50 ms) and would compete with BLAS's threads in prefill. libgomp's spin
# count covers the gaps between a step's calls (about 0.5 ms here); it shortens it itself when oversubscribed.
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

import numba  # noqa: E402 -- configured above

if not numba.config.CACHE_DIR:  # numba was imported before this module, without the variable: its setting still counts
    numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
from llvmlite import binding as llvm  # noqa: E402
from llvmlite import ir  # noqa: E402 -- numba's own code generator
from numba import njit, prange, types  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

PATHS = ("numba", "numpy")
# Rows the kernel takes in one pass over a matrix; a prompt's rows (prefill) are cut into pieces of this many, each
# a pass over the matrix from the caches. Each piece's inputs stay in the L2 cache while the matrix streams, as a
# GEMM blocks its inputs. Here (AMD EPYC, Zen 4) a layer's four products in 64-row pieces ran at 160-192 GFLOP/s
# from 128 to 2048 rows, against BLAS's 95 at 128 rows (its threads split 128 rows in two blocks of 64, each
# packed on its own) and 130 / 156 / 165 / 181 at 256 / 512 / 1024 / 2048; 48- to 192-row pieces alike
# (benchmarks/README.md; bench_batch.py prints the kernel against BLAS at each size). A matrix the tiles do not
# fit goes to BLAS above this many rows.
MAX_KERNEL_ROWS = 64
# fastmath without "ninf"/"nnan": reductions may be reordered and fused (vectorised), infinities stay exact.
FAST = {"reassoc", "contract", "arcp", "nsz"}
F32 = np.float32


# os.environ.get took 1.3 µs here (it encodes the name, and an unset name raises and catches a KeyError), and a
# decode step asks which path to take about 270 times: 2% of a step. os.environ keeps the variables in a dict of
# bytes, which its setting (and pytest's monkeypatch.setenv) update; read there, the answer takes 30 ns.
_ENVIRON_BYTES = getattr(os.environ, "_data", None)
_PATH_KEY = os.environ.encodekey("PD_KERNELS") if _ENVIRON_BYTES is not None else None


def selected_path() -> str:
    """"numba" (the default) or "numpy", from $PD_KERNELS; read at each call, so a test can switch it."""
    raw = _ENVIRON_BYTES.get(_PATH_KEY) if _ENVIRON_BYTES is not None else os.environ.get("PD_KERNELS")
    if not raw:
        return "numba"
    path = os.environ.decodevalue(raw) if isinstance(raw, bytes) else raw
    if path not in PATHS:
        raise ValueError(f"PD_KERNELS={path!r}: allowed values are {', '.join(PATHS)}")
    return path


def enabled() -> bool:
    return selected_path() == "numba"


def activation_digits() -> int:
    """How many 8-bit digits a decode step's GGUF block products write each activation as, to multiply integers
    (`_digit_dot_intrinsic`): DIGITS where the CPU has AVX-512 VNNI, 0 where they multiply in float32 (and on the numpy
    path, which dequantizes for BLAS)."""
    return DIGITS if enabled() and _VNNI else 0


def describe() -> str:
    """The path that measured a figure, as traces and pages name it."""
    if not enabled():
        return "numpy"
    return f"numba {numba.__version__}"  # its threads are the machine's cores, which the source line names


# --- a few rows times a weight matrix --------------------------------------------------------------

def rows_times_weight(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ W.T for x (rows, in) and a row-major W (out, in): every weight read once for each MAX_KERNEL_ROWS rows
    (once for a decode step's)."""
    x = np.ascontiguousarray(x)
    y = np.empty((x.shape[0], w.shape[0]), dtype=F32)
    if not tiles_fit(w):  # none of the model's matrices
        _rows_times_weight(x, w.view(np.ndarray), y)
    else:
        _rows_times_tiles(x, weight_tiles(w), y)
    return y


def rows_times_dequantized(x: np.ndarray, w, start: int, stop: int) -> np.ndarray:
    """x @ W[start:stop].T for a many-row product (a prompt's) with a `quantized.QuantizedWeight`: its output rows
    start..stop dequantized straight into the order the float32 kernel's tiles read (`dequantize_tiles`), into this
    thread's scratch (one matrix's worth at most: a model in a GGUF format keeps no float32 copy of its weights),
    then that kernel's product, as a float32 matrix's. Rows that do not fill the tiles go to the row kernel as plain
    rows."""
    x = np.ascontiguousarray(x, dtype=F32)
    y = np.empty((x.shape[0], stop - start), dtype=F32)
    if _fills_tiles(w, start, stop):
        _rows_times_tiles(x, dequantized(w, start, stop), y)
    else:
        _rows_times_weight(x, dequantized(w, start, stop), y)
    return y


def dequantized(w, start: int, stop: int) -> np.ndarray:
    """What `rows_times_dequantized` multiplies by: output rows start..stop of a QuantizedWeight as float32, in the
    float32 kernel's tiles when they fill them (in this thread's scratch: valid until its next call here), else as
    rows. The step a prompt's product in a GGUF format takes that a float32 matrix's does not (formats.dequantize_ms
    times it)."""
    if not _fills_tiles(w, start, stop):
        return dequantize_rows(w, start, stop)
    shape = ((stop - start) // TILE_OUTPUTS, TILE_OUTPUTS * w.shape[1])
    return dequantize_tiles(w, start, stop, out=_scratch_tiles(shape))


def _fills_tiles(w, start: int, stop: int) -> bool:
    return (stop - start) % TILE_OUTPUTS == 0 and w.shape[1] % COLUMNS_A_TURN == 0


def dequantize_tiles(w, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
    """Output rows start..stop of a QuantizedWeight as float32, in the order the float32 kernel's tiles read
    them (`weight_tiles`), in one pass: the same values as `dequantize_rows`, regrouped (into `out` if given).
    Dequantized into rows first, the regrouping was a second pass as long as the first (Q4_1's 120 matrices: 55 +
    55 ms)."""
    shape = ((stop - start) // TILE_OUTPUTS, TILE_OUTPUTS * w.shape[1])
    tiles = np.empty(shape, dtype=F32) if out is None else out
    return _dequantized(w, start, stop, tiles, _dequantize_halves_in_tiles, _dequantize_q8_0_in_tiles,
                        _dequantize_q4_in_tiles)


def _rows_times_tiles(x: np.ndarray, tiles: np.ndarray, y: np.ndarray) -> None:
    if x.shape[0] <= MAX_KERNEL_ROWS:  # a decode step's rows: one pass
        _tiled_rows_times_weight(x, tiles, y)
        return
    for first in range(0, x.shape[0], MAX_KERNEL_ROWS):  # a prompt's, in pieces
        rows = slice(first, first + MAX_KERNEL_ROWS)
        _tiled_rows_times_weight(x[rows], tiles, y[rows])


def elementwise(x: np.ndarray) -> bool:
    """Whether rms_norm or RoPE on x goes to a compiled kernel (`rms_norm`, `rope`): float32 rows, any number."""
    return x.dtype == F32 and enabled()


def streams(x: np.ndarray, w: np.ndarray) -> bool:
    """Whether `linear` hands x @ W.T to the kernel: float32, W row-major, and any number of rows if the tiles fit W
    (`tiles_fit`: every matrix of the model), else up to MAX_KERNEL_ROWS."""
    return (w.flags.c_contiguous and w.dtype == F32 and x.dtype == F32 and enabled()
            and (x.shape[0] <= MAX_KERNEL_ROWS or tiles_fit(w)))


@njit(parallel=True, fastmath=FAST, cache=True)
def _rows_times_weight(x, w, y):  # pragma: no cover -- compiled; tested through rows_times_weight
    # Matrices `_tiled_rows_times_weight` does not fit (rows of a length no multiple of its vectors, an output
    # count no multiple of four: none of the model's). Four weight rows at a time (parallel over groups of
    # them), each multiplied by two input rows at a time: eight sums in registers per pass over the input
    # dimension; the four rows stay in the L1 cache while every input row passes, so memory delivers W once.
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


# --- LLVM vector instructions, for the kernels numba's loops left short of memory's speed -------------------
# Used through numba's `intrinsic` (its documented way to emit LLVM IR inside a compiled function): the float32
# products below, the GGUF formats' blocks and a prompt's attention.

_I8, _I32, _F32 = ir.IntType(8), ir.IntType(32), ir.FloatType()


def _ir_splat(builder, value, vector):  # copies of a float in every lane of a vector type
    lanes = builder.insert_element(ir.Constant(vector, ir.Undefined), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(lanes, ir.Constant(vector, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32, vector.count), [0] * vector.count))


def _ir_fmuladd(builder, a, b, c):  # a·b + c, fused where the CPU can; vectors of any width
    function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(a.type, [a.type] * 3),
                                              f"llvm.fmuladd.v{a.type.count}f32")
    return builder.call(function, [a, b, c])


def _ir_load(builder, base, offset, vector, align=1):  # a vector load at base + offset elements (a number or a value)
    pointer = builder.gep(base, [offset if isinstance(offset, ir.Value) else ir.Constant(_I32, offset)])
    return builder.load(builder.bitcast(pointer, vector.as_pointer()), align=align)


def _ir_address(context, builder, array_type, value, indices):
    """The array value's struct, and a pointer to its element at `indices` (no bounds check, no wraparound)."""
    array = context.make_array(array_type)(context, builder, value)
    return array, cgutils.get_item_pointer2(
        context, builder, data=array.data, shape=cgutils.unpack_tuple(builder, array.shape),
        strides=cgutils.unpack_tuple(builder, array.strides), layout=array_type.layout, inds=indices,
        wraparound=False, boundscheck=False)


def _ir_prefetch(builder, pointer, locality=3):
    # A hint (it never faults) to read a line: locality 3 keeps it in every cache level, 2 from the L2 cache out.
    function = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [_I8.as_pointer(), _I32, _I32, _I32]), "llvm.prefetch.p0i8")
    builder.call(function, [pointer, ir.Constant(_I32, 0), ir.Constant(_I32, locality), ir.Constant(_I32, 1)])


def _ir_larger(builder, x, y):  # max, as the CPU's max instruction (which passes y on where x is NaN)
    return builder.select(builder.fcmp_ordered(">", x, y), x, y)


# --- rows times a float32 weight matrix -----------------------------------------------------------------------
# A GEMM micro-kernel's register blocking: a tile of TILE_OUTPUTS outputs (the lanes of two vectors as wide as the
# CPU's: 16 floats with AVX-512, else 8) times up to TILE_INPUTS input rows, a pass over the input dimension. At each
# column k the tile loads its outputs' two vectors of weights and multiplies them by each input row's x[k], taken
# as a copy in every lane (a broadcast load, part of the multiply-add's own instruction), into 2 x TILE_INPUTS vector
# accumulators: each weight in a register serves every input row, each x[k] every output, and an accumulator
# ends as its outputs' values, stored as they are. Then the next input rows, while the tile's weights stay in the
# L1 cache, so memory delivers W once.
# The tiles read W in its own copy (`weight_tiles`): each group of TILE_OUTPUTS rows transposed, column after
# column, so memory sees one forward stream, as a matrix-vector product's.
# Until the twelfth session the lanes ran along the input dimension (a tile of four weight rows times six input
# rows, each output a vector of partial sums added up across its lanes at the tile's end): in cache, on one core
# of an Intel Xeon, 110-116 GFLOP/s against numpy's BLAS at 166 (its adding-up about a quarter of a 576-column
# tile's work; its six rows' inputs from the L2 cache at every step); outputs as lanes reach 165-173. A prompt's
# products there (64-row pieces, six layers' matrices, 2 cores, interleaved): 64 / 512 / 2048 rows 182 / 171 /
# 158 -> 248 / 243 / 257 GFLOP/s; a decode step's for 1-4 users the same, 16 users 0.91 of the time, 64 users
# 0.75 (benchmarks/README.md). Two vectors of outputs by twelve rows (24 of AVX-512's 32 registers): four vectors
# by six rows took 1.1 times as long at 8-16 users and 1.2 times at 64.
# Where a group takes several passes (more than TILE_INPUTS input rows), the first asks for the same share of the
# next group's tiles (the next group a core takes: prange hands each core a band of them) into the L2 cache,
# so the stream keeps going while the group's later input rows compute from the cache. On the AMD EPYC (Zen 4)
# hosts a tile of few rows asks nothing (the hardware prefetcher follows one stream on its own, and asking for
# the next group cost 1-2 ms a step); on an Intel Xeon, whose prefetchers stop at each 4 KiB page, a core read a
# matrix through the one-row tile at 0.8 of a plain read's rate, and asking pays: each pass of a few rows asks
# for the weights NEAR_FLOATS ahead into the L1 cache, and those of 2 and more rows also for the next group's
# into the L2. A step's products there (the four-row tiles then), against asking nothing, for 1 / 2 / 4 users:
# 18.7 -> 16.6, 21.4 -> 19.1, 27.4 -> 19.8 ms (256 bytes ahead to 2 KiB alike; 4 KiB none).
# One or two input rows give each accumulator one multiply-add a column, which would wait on the last one's
# latency: their tiles keep two or four sets of accumulators, columns taken in turn, added up at the end.
# The features numba compiles for: the host's, unless $NUMBA_CPU_NAME names another CPU (then those that
# $NUMBA_CPU_FEATURES lists).
_CPU_NAME = numba.config.CPU_NAME or llvm.get_host_cpu_name()
_FEATURES = (numba.config.CPU_FEATURES or "") if numba.config.CPU_NAME else llvm.get_host_cpu_features().flatten()
_WIDE = "+avx512f" in _FEATURES
_FEW_ROWS_ASK = not _CPU_NAME.startswith("znver")  # AMD's Zen cores: measured faster asking nothing
# AVX-512 VNNI (Intel since Cascade Lake, AMD since Zen 4): 64 byte products a vector instruction, for the GGUF
# formats' blocks (`_digit_dot_intrinsic`).
_VNNI = _WIDE and "+avx512vnni" in _FEATURES
NEAR_FLOATS = 256  # 1 KiB
TILE_LANES = 16 if _WIDE else 8
TILE_OUTPUTS = 2 * TILE_LANES
TILE_INPUTS = 12 if _WIDE else 6  # accumulators: 24 of AVX-512's 32 registers, 12 of AVX2's 16
PANEL_QUERY_ROWS = 6 if _WIDE else 3  # a prompt attention panel (below): its rows by 4 vectors, 24 accumulators (12)
_TILE = ir.VectorType(_F32, TILE_LANES)
FLOATS_PER_LINE = 16  # a 64-byte cache line


def _tile_intrinsic(n_inputs, turns=1, ask_ahead=False, ask_near=False):
    """A numba intrinsic tile(tiles, g, x, b, y): y[b + j, T g + o] = W[T g + o] · x[b + j] for o < T (TILE_OUTPUTS)
    and j < n_inputs, W's group g of rows taken from its `weight_tiles`, x's rows contiguous. `turns`: sets of
    accumulators the columns take in turn (the input dimension a multiple of them); `ask_ahead`: the pass asks
    for its share of the next group's tiles (into the L2 cache); `ask_near`: for the weights NEAR_FLOATS ahead of
    its own (into the L1)."""
    @intrinsic
    def tile(typingctx, tiles, group, x, first_input, y):
        def codegen(context, builder, signature, args):
            tiles_type, _, x_type, _, y_type = signature.args
            zero = context.get_constant(types.intp, 0)

            def plus(base, i):
                return builder.add(base, context.get_constant(types.intp, i))

            def ask(offset, locality):
                _ir_prefetch(builder, builder.bitcast(builder.gep(weights, [offset]), _I8.as_pointer()), locality)

            tiles_array, weights = _ir_address(context, builder, tiles_type, args[0], [args[1], zero])
            inputs = [_ir_address(context, builder, x_type, args[2], [plus(args[3], j), zero])[1]
                      for j in range(n_inputs)]
            group_floats = cgutils.unpack_tuple(builder, tiles_array.shape)[1]
            count = lambda value: ir.Constant(group_floats.type, value)  # noqa: E731
            n_in = builder.sdiv(group_floats, count(TILE_OUTPUTS))
            vectors = TILE_OUTPUTS // TILE_LANES
            sums = [[[cgutils.alloca_once(builder, _TILE) for _ in range(vectors)] for _ in range(n_inputs)]
                    for _ in range(turns)]  # registers
            for accumulator in (a for turn in sums for row in turn for a in row):
                builder.store(ir.Constant(_TILE, [0.0] * TILE_LANES), accumulator)
            with cgutils.for_range(builder, builder.sdiv(n_in, count(turns))) as loop:
                for turn in range(turns):
                    k = builder.add(builder.mul(loop.index, count(turns)), count(turn))
                    here = builder.mul(k, count(TILE_OUTPUTS))  # column k's weights, for the group's outputs
                    for line in range(0, TILE_OUTPUTS, FLOATS_PER_LINE) if ask_ahead else ():
                        ask(builder.add(builder.add(here, group_floats), count(line)), 2)
                    for line in range(0, TILE_OUTPUTS, FLOATS_PER_LINE) if ask_near else ():
                        ask(builder.add(here, count(NEAR_FLOATS + line)), 3)
                    weight_lanes = [_ir_load(builder, weights, builder.add(here, count(v * TILE_LANES)), _TILE, align=4)
                                    for v in range(vectors)]
                    for j, pointer in enumerate(inputs):
                        xs = _ir_splat(builder, builder.load(builder.gep(pointer, [k])), _TILE)
                        for v, lanes in enumerate(weight_lanes):
                            builder.store(_ir_fmuladd(builder, lanes, xs, builder.load(sums[turn][j][v])), sums[turn][j][v])
            first_output = builder.mul(args[1], count(TILE_OUTPUTS))
            for j in range(n_inputs):  # input row j's outputs, as they lie in y's row
                for v in range(vectors):
                    outputs = builder.load(sums[0][j][v])
                    for turn in range(1, turns):
                        outputs = builder.fadd(outputs, builder.load(sums[turn][j][v]))
                    _, at = _ir_address(context, builder, y_type, args[4],
                                        [plus(args[3], j), builder.add(first_output, count(v * TILE_LANES))])
                    builder.store(outputs, builder.bitcast(at, _TILE.as_pointer()), align=4)
            return context.get_dummy_value()
        return types.void(tiles, group, x, first_input, y), codegen
    return tile


_tile_of_rows = _tile_intrinsic(TILE_INPUTS, ask_ahead=True)
_tile_of_8_rows = _tile_intrinsic(8, ask_ahead=_FEW_ROWS_ASK, ask_near=_FEW_ROWS_ASK)
_tile_of_4_rows = _tile_intrinsic(4, ask_ahead=_FEW_ROWS_ASK, ask_near=_FEW_ROWS_ASK)
_tile_of_2_rows = _tile_intrinsic(2, turns=2, ask_ahead=_FEW_ROWS_ASK, ask_near=_FEW_ROWS_ASK)
_tile_of_1_row = _tile_intrinsic(1, turns=4, ask_near=_FEW_ROWS_ASK)
COLUMNS_A_TURN = 4  # the input dimension a multiple of it: every tile's columns split into whole turns


def tiles_fit(w: np.ndarray) -> bool:
    """Whether `_tiled_rows_times_weight` takes W: whole groups of rows, whole turns of columns."""
    return w.shape[0] % TILE_OUTPUTS == 0 and w.shape[1] % COLUMNS_A_TURN == 0


# --- memory for the kernels' own copies of the weights ------------------------------------------------------
# The copies the kernels read (`weight_tiles`, `interleaved_blocks`) are carved from anonymous mappings the operating
# system is asked to back with 2 MiB pages (madvise MADV_HUGEPAGE), a chunk of them at a time. Allocated one by
# one, most of a model's copies landed in 4 KiB pages (numpy asks for huge pages from 4 MiB on; most matrices are
# smaller, and an allocation's first and last partial 2 MiB never get one). In the same rounds a plain read of
# those copies ran at 29.5 GB/s and of the model's own weights, which the loader holds in one block of huge
# pages, at 31.0; from the chunks, a step's float32 products for 1 / 4 / 16 users took 17.7 / 20.5 / 24.3 ->
# 16.7 / 17.5 / 22.9 ms, the Q8_0 model's 6.10 -> 5.60 (benchmarks/README.md).
_HUGE_PAGE = 2 << 20
_CHUNK = 64 << 20
_arena_lock = threading.Lock()
_arena = {"chunk": None, "used": 0}


def _huge_pages(size: int) -> np.ndarray:
    """`size` bytes (a multiple of 2 MiB) of an anonymous mapping the OS is asked to back with 2 MiB pages, starting
    on a 2 MiB boundary; unmapped once nothing holds a view of it."""
    mapping = mmap.mmap(-1, size + _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        mapping.madvise(mmap.MADV_HUGEPAGE)
    raw = np.frombuffer(mapping, dtype=np.uint8)
    start = -raw.__array_interface__["data"][0] % _HUGE_PAGE  # huge pages start on 2 MiB boundaries
    return raw[start:start + size]


def _empty_copy(shape: tuple[int, int], dtype) -> np.ndarray:
    """An empty array for a kernel's copy, 64-byte aligned, from the current huge-page chunk (a new one when it is
    full). A chunk is unmapped once neither the arena nor any copy carved from it holds it."""
    nbytes = shape[0] * shape[1] * np.dtype(dtype).itemsize
    if not hasattr(mmap, "MAP_ANONYMOUS"):  # not a POSIX system: ordinary memory
        return np.empty(shape, dtype=dtype)
    with _arena_lock:
        chunk = _arena["chunk"]
        if chunk is None or _arena["used"] + nbytes > chunk.size:
            chunk = _arena["chunk"] = _huge_pages(max(_CHUNK, -(-nbytes // _HUGE_PAGE) * _HUGE_PAGE))
            _arena["used"] = 0
        memory = chunk[_arena["used"]:_arena["used"] + nbytes]
        _arena["used"] += -(-nbytes // 64) * 64  # the next copy on a cache line of its own
    return memory.view(dtype).reshape(shape)


# A prompt's product in a GGUF format dequantizes its matrix into tiles it drops at once (`dequantized`): into a
# scratch of its thread's, on huge pages, kept for the next product. A new numpy array for each made the products read
# the tiles from 4 KiB pages (and touch fresh ones): on an Intel Xeon the layers' products of a 512-token prompt took
# 389 ms from 4 KiB pages against 351 from the float32 copies' huge pages. Interleaved, TTFT at 128 / 512 / 2048 tokens,
# Q4_1 141 / 495 / 2471 -> 135 / 476 / 2264 ms, Q8_0 155 / 513 / 2412 -> 147 / 488 / 2277, F32's 126 / 464 / 2294
# (benchmarks/README.md, "Fourteenth session").
_scratch = threading.local()


def _scratch_tiles(shape: tuple[int, int]) -> np.ndarray:
    nbytes = shape[0] * shape[1] * 4
    if not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=F32)
    memory = getattr(_scratch, "memory", None)
    if memory is None or memory.size < nbytes:
        memory = _scratch.memory = _huge_pages(-(-nbytes // _HUGE_PAGE) * _HUGE_PAGE)
    return memory[:nbytes].view(F32).reshape(shape)


class _ByIdentity:
    """Values kept for objects while they live, found by the object's identity: a weak reference tells the object
    from a later one given the same id. weakref.WeakKeyDictionary's lookup makes a weak reference each time: 1-2
    µs, and a decode step looks up its 121 matrices' copies."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, object]] = {}

    def get(self, obj: object) -> object | None:
        entry = self._entries.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else None

    def put(self, obj: object, value: object) -> None:
        key = id(obj)

        def forget(reference: weakref.ref) -> None:
            if self._entries.get(key, (None,))[0] is reference:
                del self._entries[key]

        self._entries[key] = (weakref.ref(obj, forget), value)


# Each matrix's tiles, made on its first product and kept while the array that owns its memory lives (a
# model's weights: for the process). The key is where W's elements are; the owner's weak reference tells a
# matrix from a later one allocated at the same address. The weights are read-only: a matrix changed in place
# after its first product would keep its old tiles. The array object that asked is remembered too, so that the
# same object asking again (the model's matrices, at every step) is answered without working out the address.
_weight_tiles: dict[tuple, tuple[weakref.ref, np.ndarray]] = {}
_tiles_of_array = _ByIdentity()


def weight_tiles(w: np.ndarray) -> np.ndarray:
    """W (out, in) regrouped as the tiles read it: group g's row holds its T rows (TILE_OUTPUTS) transposed,
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
        tiles = _empty_copy((w.shape[0] // TILE_OUTPUTS, TILE_OUTPUTS * w.shape[1]), F32)
        _regroup_in_tiles(w.view(np.ndarray), tiles)  # a memory map as a plain array: numba takes no subclass
        tiles.flags.writeable = False

        def forget(reference: weakref.ref, key: tuple = key) -> None:
            if _weight_tiles.get(key, (None,))[0] is reference:
                del _weight_tiles[key]

        _weight_tiles[key] = (weakref.ref(owner, forget), tiles)
    _tiles_of_array.put(w, tiles)
    return tiles


@njit(parallel=True, cache=True)
def _regroup_in_tiles(w, tiles):  # pragma: no cover -- compiled; tested through rows_times_weight
    for group in prange(tiles.shape[0]):
        for k in range(w.shape[1]):
            for o in range(TILE_OUTPUTS):
                tiles[group, TILE_OUTPUTS * k + o] = w[TILE_OUTPUTS * group + o, k]


@njit(parallel=True, fastmath=FAST, cache=True)
def _tiled_rows_times_weight(x, tiles, y):  # pragma: no cover -- compiled; tested through rows_times_weight
    rows = x.shape[0]
    for group in prange(tiles.shape[0]):
        b = 0
        while b + TILE_INPUTS <= rows:
            _tile_of_rows(tiles, group, x, b, y)
            b += TILE_INPUTS
        if b + 8 <= rows:
            _tile_of_8_rows(tiles, group, x, b, y)
            b += 8
        if b + 4 <= rows:
            _tile_of_4_rows(tiles, group, x, b, y)
            b += 4
        if b + 2 <= rows:
            _tile_of_2_rows(tiles, group, x, b, y)
            b += 2
        if b < rows:
            _tile_of_1_row(tiles, group, x, b, y)


# --- a few rows times a matrix kept in a GGUF format (quantized.py) --------------------------------
# Each kernel reads the format's bytes and multiplies them in registers (as integers with VNNI, below): a step reads
# the format's bytes (block scales included), never a float32 copy. It reads them from its own copy of the matrix
# (`interleaved_blocks`, on huge pages: a format the model file does not hold comes from the per-user cache as a
# memory map, in 4 KiB pages, and on an Intel Xeon a one-user step's F16 products read the map at 19.3 GB/s and a copy
# at 22.9), the blocks of TILE_LANES rows interleaved, as llama.cpp's CPU backend repacks Q4_0 for its kernels: for
# each block column, the rows' f16 scales d (and Q4_1's minimums m), then their quants, each byte (F16: each half) of
# the rows' blocks together (with VNNI each run of 4 bytes: `_digit_dot_intrinsic`). The outputs are then a vector's
# lanes, as in the float32 tiles: a column's quant byte i of the TILE_LANES rows is one vector, multiplied by x's
# element i (broadcast) into the column's partial sums, which the column's scales multiply once (one vector), Q4's
# m · Σx terms joining once; no per-row adding-up across lanes, no per-block broadcast of a scale. With each row's blocks
# together (the eleventh session's layout: a row's scales, then its quants) a block took about nine vector
# instructions and a row ended in a tree of sums: in cache, on one core of an Intel Xeon, Q4_1 1.71 -> 1.21 ns a
# block, Q8_0 1.65 -> 1.13. Streaming, each column asks for its bytes 8 KiB ahead into the L2 cache and 1 KiB ahead
# into the L1 (2 KiB into the L1 alone: Q8_0 1.38 times the time of the old layout; asking nothing, 1.6). A one-user
# step's products there, interleaved against the old layout: Q4_1 5.93 -> 4.67 ms, Q4_0 5.33 -> 4.19, Q8_0 6.63 ->
# 6.37 (4 KiB ahead), F16 9.13 -> 8.47 (benchmarks/README.md). A matrix whose rows do not fill the last group gets
# zero rows (scales 0) to fill it, and the product drops their outputs.

def rows_times_blocks(x: np.ndarray, w) -> np.ndarray:
    """x @ W.T for x (rows, in) float32 and a `quantized.QuantizedWeight` W: every block read once for all rows."""
    x = np.ascontiguousarray(x, dtype=F32)
    if w.format == "f16" and w.shape[1] % 32:  # rows of halves not taken 32 at a time: a loop of their own
        y = np.empty((x.shape[0], w.shape[0]), dtype=F32)
        _rows_times_f16(x, w.data.view(np.uint16), y)
        return y
    groups = interleaved_blocks(w)
    y = np.empty((x.shape[0], groups.shape[0] * TILE_LANES), dtype=F32)
    {"f16": _rows_times_f16_groups, "q8_0": _rows_times_q8_0_groups, "q4_0": _rows_times_q4_0_groups,
     "q4_1": _rows_times_q4_1_groups}[w.format](x, groups, y)
    return y if y.shape[1] == w.shape[0] else np.ascontiguousarray(y[:, :w.shape[0]])


# The kernels' copy of a QuantizedWeight, made on its first product and kept while it lives.
_interleaved = _ByIdentity()


GROUP_SCALES_AT = {"f16": 0, "q8_0": 1, "q4_0": 1, "q4_1": 2}  # vectors of the rows' f16 scales (and minimums) a column begins with


def interleaved_blocks(w) -> np.ndarray:
    """A QuantizedWeight in groups of L = TILE_LANES rows (the last filled with zero rows): per group, block column
    after block column, the L rows' f16 scales d (2L bytes), for Q4_1 their f16 minimums m (2L bytes), then their
    quants, byte i of every row's block together (L bytes, for each of the block's 32 or 16 quant bytes; with VNNI,
    bytes 4j..4j+3 of every row's block together, 4L bytes for each j); F16's column k of 32 holds the L rows'
    halves at column k (2L bytes). The same bytes as GGUF's rows, in another order: uint8 (groups, blocks · column
    bytes)."""
    groups = _interleaved.get(w)
    if groups is None:
        blocks = w.blocks
        out, n_blocks, block_bytes = blocks.shape
        n_groups = -(-out // TILE_LANES)
        padded = blocks
        if out < n_groups * TILE_LANES:  # zero rows fill the last group
            padded = np.zeros((n_groups * TILE_LANES, n_blocks, block_bytes), dtype=np.uint8)
            padded[:out] = blocks
        groups = _empty_copy((n_groups, n_blocks * block_bytes * TILE_LANES), np.uint8)
        columns = groups.reshape(n_groups, n_blocks, -1)
        if w.format == "f16":  # a block's 32 halves: column k's of every row together
            by_half = padded.view(np.uint16).reshape(n_groups, TILE_LANES, n_blocks, 32).transpose(0, 2, 3, 1)
            columns.view(np.uint16)[:] = by_half.reshape(n_groups, n_blocks, -1)
        else:
            by_byte = padded.reshape(n_groups, TILE_LANES, n_blocks, block_bytes).transpose(0, 2, 3, 1)  # g, kb, byte, row
            halves = 2 * GROUP_SCALES_AT[w.format]
            scales = by_byte[:, :, :halves].reshape(n_groups, n_blocks, halves // 2, 2, TILE_LANES).transpose(0, 1, 2, 4, 3)
            quants = by_byte[:, :, halves:]  # g, kb, byte, row
            if _VNNI:  # g, kb, run of 4 bytes, row, byte of the run
                quants = quants.reshape(n_groups, n_blocks, -1, 4, TILE_LANES).transpose(0, 1, 2, 4, 3)
            np.concatenate([scales.reshape(n_groups, n_blocks, -1), quants.reshape(n_groups, n_blocks, -1)],
                           axis=2, out=columns)
        groups.flags.writeable = False
        _interleaved.put(w, groups)
    return groups


def dequantize_rows(w, start: int, stop: int) -> np.ndarray:
    """Output rows start..stop of a QuantizedWeight as float32 (stop - start, in), in parallel: for a product
    whose rows do not fill the kernel's tiles. Equals `w.dequantize(slice(start, stop))` (gguf.quants). F16 as
    numpy converts it, at 0.2 ns a weight against numpy's 1.9 here."""
    out = np.empty((stop - start, w.shape[1]), dtype=F32)
    return _dequantized(w, start, stop, out, _dequantize_halves, _dequantize_q8_0, _dequantize_q4)


def _dequantized(w, start: int, stop: int, out: np.ndarray, halves, q8_0, q4) -> np.ndarray:
    """out filled with W's rows start..stop by the format's function of the three, as rows or as tiles."""
    if w.format == "f16":
        halves(w.data[start:stop].view(np.uint16), out)
    elif w.format == "q8_0":
        blocks = w.blocks[start:stop]
        q8_0(blocks, blocks.view(np.int8), out)
    else:
        q4(w.blocks[start:stop], w.format == "q4_1", out)
    return out


@njit(inline="always")
def _half(bits):  # pragma: no cover -- compiled
    # An IEEE half (as its uint16 bits) to float32, without branches (so loops over it vectorise): the
    # exponent and mantissa moved into single precision's places, then rescaled by 2^112 (the bias
    # difference, 127 − 15), which also gets subnormals right. Weights hold no infinities or NaNs
    # (quantized.quantize refuses them), the one case this would not convert.
    magnitude = (np.uint32(bits) & np.uint32(0x7FFF)) << np.uint32(13)
    sign = (np.uint32(bits) & np.uint32(0x8000)) << np.uint32(16)
    return np.uint32(magnitude | sign).view(np.float32) * F32(5.192296858534828e33)  # 2.0 ** 112


@njit(inline="always")
def _block_half(blocks, r, kb, at):  # pragma: no cover -- compiled
    # The f16 at bytes at, at + 1 of block kb of row r (its scale d, or Q4_1's minimum m), as float32.
    return _half(np.uint32(blocks[r, kb, at]) | (np.uint32(blocks[r, kb, at + 1]) << np.uint32(8)))


@njit(parallel=True, fastmath=FAST, cache=True)
def _rows_times_f16(x, h, y):  # pragma: no cover -- compiled
    rows, n_in = x.shape
    for r in prange(h.shape[0]):
        for b in range(rows):
            s = F32(0)
            for k in range(n_in):
                s += _half(h[r, k]) * x[b, k]
            y[b, r] = s


# How far ahead a block column asks for its bytes, into the L2 cache (4 KiB: Q8_0's products 1.05 times the time,
# Q4_1's 1.1; 12-16 KiB as 8) and into the L1 (as the float32 tiles of a few rows).
GROUP_FAR_BYTES = 8192
GROUP_NEAR_BYTES = 4 * NEAR_FLOATS
PARTIAL_SUMS = 4  # a column's partial sums, taken in turn by its products (one would wait on each one's latency)


def _column_bytes(fmt):  # a block column of a group of TILE_LANES rows, in `interleaved_blocks`
    return TILE_LANES * (2 * GROUP_SCALES_AT[fmt] + {"q8_0": 32, "q4_0": 16, "q4_1": 16, "f16": 64}[fmt])


def _ir_halves(builder, pointer):  # TILE_LANES f16 values, as float32
    return builder.fpext(builder.load(builder.bitcast(pointer, ir.VectorType(ir.HalfType(), TILE_LANES).as_pointer()),
                                      align=1), _TILE)


def _ir_block_columns(context, builder, fmt, arrays, args, column_products):
    """The loop the block formats' intrinsics share: for each block column of group g (`interleaved_blocks`), its
    bytes asked for ahead, totals += d · products (times the column's factor, if any) and, for the Q4 formats,
    offsets += m · Σx (Q4_0's m = −8 d; F16 has neither: totals += products); then y[b, L g .. L g + L] = totals
    + offsets. arrays, args: the (type, value) of groups, g, b, x_sums and y. column_products(index, column,
    quants, count) gives the column's q · x, a lane an output row, and the factor its d takes (or None)."""
    (groups_type, groups), (_, group), (_, row), (sums_type, x_sums), (y_type, y) = zip(arrays, args, strict=True)
    zero = context.get_constant(types.intp, 0)
    groups_array, start = _ir_address(context, builder, groups_type, groups, [group, zero])
    _, sums_start = _ir_address(context, builder, sums_type, x_sums, [row, zero])
    start = builder.bitcast(start, _I8.as_pointer())
    group_bytes = cgutils.unpack_tuple(builder, groups_array.shape)[1]
    count = lambda value: ir.Constant(group_bytes.type, value)  # noqa: E731
    column_bytes = _column_bytes(fmt)
    totals = cgutils.alloca_once(builder, _TILE)  # Σ d · (q · x), a lane an output row: a register
    offsets = cgutils.alloca_once(builder, _TILE)  # Σ m · Σx
    for accumulator in (totals, offsets):
        builder.store(ir.Constant(_TILE, [0.0] * TILE_LANES), accumulator)
    with cgutils.for_range(builder, builder.sdiv(group_bytes, count(column_bytes))) as loop:
        column = builder.gep(start, [builder.mul(loop.index, count(column_bytes))])
        for line in range(0, column_bytes, 64):
            _ir_prefetch(builder, builder.gep(column, [count(GROUP_FAR_BYTES + line)]), locality=2)
            _ir_prefetch(builder, builder.gep(column, [count(GROUP_NEAR_BYTES + line)]))
        quants = builder.gep(column, [count(2 * TILE_LANES * GROUP_SCALES_AT[fmt])])
        products, factor = column_products(loop.index, column, quants, count)
        if fmt == "f16":  # no scales
            builder.store(builder.fadd(products, builder.load(totals)), totals)
        else:
            ds = _ir_halves(builder, column)
            scales = ds if factor is None else builder.fmul(ds, factor)
            builder.store(_ir_fmuladd(builder, scales, products, builder.load(totals)), totals)
        if fmt in ("q4_0", "q4_1"):
            ms = (_ir_halves(builder, builder.gep(column, [count(2 * TILE_LANES)])) if fmt == "q4_1"
                  else builder.fmul(ds, ir.Constant(_TILE, [-8.0] * TILE_LANES)))
            block_sum = _ir_splat(builder, builder.load(builder.gep(sums_start, [loop.index])), _TILE)
            builder.store(_ir_fmuladd(builder, ms, block_sum, builder.load(offsets)), offsets)
    outputs = builder.fadd(builder.load(totals), builder.load(offsets))
    _, at = _ir_address(context, builder, y_type, y, [row, builder.mul(group, count(TILE_LANES))])
    builder.store(outputs, builder.bitcast(at, _TILE.as_pointer()), align=4)


def _group_dot_intrinsic(fmt):
    """A numba intrinsic group_dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y): y[b, L g + o] = row
    L g + o of a matrix's `interleaved_blocks` times row b of x (rows, in; float32, each row contiguous), for o < L
    (TILE_LANES): Σ over block columns of d · (q · x) + m · Σx, with Q4_0's m = −8 d, Q8_0's none and F16's weights
    the halves themselves. x_sums (rows, in / 32 float32): each block's Σx (read for the Q4 formats only). digits,
    x_scales and corrections: unread (`_digit_dot_intrinsic`'s, which takes the same arguments)."""
    lanes = ir.VectorType(_I8, TILE_LANES)
    words = ir.VectorType(_I32, TILE_LANES)

    @intrinsic
    def group_dot(typingctx, groups, group, x, x_row, x_sums, digits, x_scales, corrections, y):
        def codegen(context, builder, signature, args):
            types_ = signature.args
            _, x_start = _ir_address(context, builder, types_[2], args[2], [args[3], context.get_constant(types.intp, 0)])

            if TILE_LANES == 16:  # AVX-512: vpermps looks a nibble's float up in a table of 0..15, reading only an
                # index's low four bits: one instruction for a mask and a conversion. On an Intel Xeon, Q4_1's gate
                # and up matrix in cache 33.7 -> 31.0 µs a product, its layers' products streamed 3.57 -> 3.31 ms.
                permute = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_TILE, [_TILE, words]),
                                                         "llvm.x86.avx512.permvar.sf.512")
                table = ir.Constant(_TILE, [float(n) for n in range(16)])

                def nibbles(word):  # each lane's low four bits, as float32
                    return builder.call(permute, [table, word])
            else:
                def nibbles(word):
                    return builder.sitofp(builder.and_(word, ir.Constant(words, [15] * TILE_LANES)), _TILE)

            def column_products(index, column, quants, count):
                xs = builder.gep(x_start, [builder.mul(index, count(32))])
                partials = [None] * PARTIAL_SUMS

                def add(q, k):  # partial sums += q · x[k]
                    x_k = _ir_splat(builder, builder.load(builder.gep(xs, [count(k)])), _TILE)
                    slot = k % PARTIAL_SUMS
                    partials[slot] = (builder.fmul(q, x_k) if partials[slot] is None
                                      else _ir_fmuladd(builder, q, x_k, partials[slot]))

                if fmt in ("q4_0", "q4_1"):  # byte i: weight i in its low nibble, weight 16 + i in its high one
                    for i in range(16):
                        word = builder.zext(_ir_load(builder, quants, i * TILE_LANES, lanes), words)
                        add(nibbles(word), i)
                        add(nibbles(builder.lshr(word, ir.Constant(words, [4] * TILE_LANES))), 16 + i)
                elif fmt == "q8_0":
                    for k in range(32):
                        add(builder.sitofp(_ir_load(builder, quants, k * TILE_LANES, lanes), _TILE), k)
                else:  # F16: column k's weights are the rows' halves, converted as they are loaded
                    for k in range(32):
                        add(_ir_halves(builder, builder.gep(quants, [count(2 * TILE_LANES * k)])), k)
                products = partials[0]
                for partial in partials[1:]:
                    products = builder.fadd(products, partial)
                return products, None

            _ir_block_columns(context, builder, fmt, [types_[i] for i in (0, 1, 3, 4, 8)],
                              [args[i] for i in (0, 1, 3, 4, 8)], column_products)
            return context.get_dummy_value()
        return types.void(groups, group, x, x_row, x_sums, digits, x_scales, corrections, y), codegen
    return group_dot


# With AVX-512 VNNI the block formats multiply integers: vpdpbusd multiplies 64 unsigned bytes by 64 signed ones and
# adds each 4 neighbouring products into a 32-bit lane, exactly. The weights' bytes are the unsigned ones (Q4: the
# nibbles 0..15; Q8_0: q + 128, one xor a vector, 128 · Σ x's digits taken off at the block's end); x becomes
# signed bytes without losing what float32 keeps of it: each element of a block of 32 is 2^e (A + B/256 + C/65536)
# with A, B, C whole numbers from -128 to 127 (its three "digits", `_digits_of_rows`), 2^e chosen from the block's
# largest |x| so that A stays within them; what is dropped is below 2^-23 of that largest |x|, about float32's own
# rounding. So q · x = 2^e (q · A + (q · B) / 256 + (q · C) / 65536), three exact integer dot products, then the
# scales in float32 as before: the same sums as the float path's up to float32 rounding (the tests hold both to
# dequantize-then-numpy alike), in about half its vector instructions (a column of 16 rows × 32 weights: about 48
# against 96, where the float path takes each weight through a widening, a conversion or vpermps, and a
# multiply-add, 16 at a time). This is not llama.cpp's arithmetic, which rounds x to one 8-bit digit an element
# (Q8_K / Q8_0 blocks), a third of these products: that changes the logits beyond float32 rounding, where these
# match gguf.quants' dequantization. On the Intel Xeon (2 cores, interleaved against the float path): the gate
# and up product (3072 × 576) in cache Q4_1 30.3–31.8 -> 18.6–20.8 µs, Q8_0 32.8–34.0 -> 22.3–25.4; whole decode
# steps at 512 tokens, one user Q4_1 0.94, Q8_0 0.89 of the time, 16 users 0.76 and 0.79 (benchmarks/README.md,
# "Sixteenth session").
DIGITS = 3
DIGIT_SCALES = (1.0, 2.0 ** -8, 2.0 ** -16)


def _digit_dot_intrinsic(fmt):
    """A numba intrinsic digit_dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y): what
    `_group_dot_intrinsic`'s group_dot gives, y[b, L g + o] for o < L (TILE_LANES), from row b of x as
    `_digits_of_rows` gives it (digits, x_scales, corrections; x itself unread) and, for the Q4 formats, each
    block's Σx (x_sums), by integer dot products (vpdpbusd)."""
    words = ir.VectorType(_I32, TILE_LANES)  # a vector of 64 bytes, as vpdpbusd takes them

    @intrinsic
    def digit_dot(typingctx, groups, group, x, x_row, x_sums, digits, x_scales, corrections, y):
        def codegen(context, builder, signature, args):
            types_ = signature.args
            zero = context.get_constant(types.intp, 0)
            _, digits_start = _ir_address(context, builder, types_[5], args[5], [args[3], zero])
            _, scales_start = _ir_address(context, builder, types_[6], args[6], [args[3], zero])
            _, corrections_start = _ir_address(context, builder, types_[7], args[7], [args[3], zero])
            digits_start = builder.bitcast(digits_start, _I8.as_pointer())
            dot = cgutils.get_or_insert_function(builder.module, ir.FunctionType(words, [words] * 3),
                                                 "llvm.x86.avx512.vpdpbusd.512")
            low_nibbles = ir.Constant(words, [0x0F0F0F0F] * TILE_LANES)
            sign_bits = ir.Constant(words, [-0x7F7F7F80] * TILE_LANES)  # 0x80808080: q + 128 for each signed byte q

            def column_products(index, column, quants, count):
                block_digits = builder.gep(digits_start, [builder.mul(index, count(DIGITS * 32))])
                # two sums a digit, taken in turn: each vpdpbusd waits on its sum's last one
                sums = [[ir.Constant(words, [0] * TILE_LANES)] * DIGITS for _ in range(2)]

                def x_digits(digit, k):  # x's digit of elements k..k+3 (4 bytes), in every lane
                    pointer = builder.gep(block_digits, [count(32 * digit + k)])
                    return _ir_splat(builder, builder.load(builder.bitcast(pointer, _I32.as_pointer()), align=1), words)

                if fmt in ("q4_0", "q4_1"):  # 4 bytes of each row: weights 4j..4j+3 in the low nibbles, 16 + 4j.. in the high
                    for j in range(4):
                        run = _ir_load(builder, quants, count(64 * j), words)
                        low = builder.and_(run, low_nibbles)
                        high = builder.and_(builder.lshr(run, ir.Constant(words, [4] * TILE_LANES)), low_nibbles)
                        for digit in range(DIGITS):
                            sums[0][digit] = builder.call(dot, [sums[0][digit], low, x_digits(digit, 4 * j)])
                            sums[1][digit] = builder.call(dot, [sums[1][digit], high, x_digits(digit, 16 + 4 * j)])
                else:  # Q8_0: 4 signed bytes of each row, made unsigned
                    for j in range(8):
                        run = builder.xor(_ir_load(builder, quants, count(64 * j), words), sign_bits)
                        for digit in range(DIGITS):
                            sums[j % 2][digit] = builder.call(dot, [sums[j % 2][digit], run, x_digits(digit, 4 * j)])
                products = None  # q · (A + B/256 + C/65536), in float32
                for digit in range(DIGITS):
                    total = builder.add(sums[0][digit], sums[1][digit])
                    if fmt == "q8_0":
                        taken = builder.gep(corrections_start, [builder.add(builder.mul(index, count(DIGITS)), count(digit))])
                        total = builder.sub(total, _ir_splat(builder, builder.load(taken), words))
                    total = builder.sitofp(total, _TILE)
                    scale = ir.Constant(_TILE, [DIGIT_SCALES[digit]] * TILE_LANES)
                    products = builder.fmul(total, scale) if products is None else _ir_fmuladd(builder, total, scale, products)
                return products, _ir_splat(builder, builder.load(builder.gep(scales_start, [index])), _TILE)  # 2^e

            _ir_block_columns(context, builder, fmt, [types_[i] for i in (0, 1, 3, 4, 8)],
                              [args[i] for i in (0, 1, 3, 4, 8)], column_products)
            return context.get_dummy_value()
        return types.void(groups, group, x, x_row, x_sums, digits, x_scales, corrections, y), codegen
    return digit_dot


@intrinsic
def _largest_magnitude(typingctx, x, row, first):
    """max |x[row, first + j]| for j < 32, as its float32 bits (non-negative floats order as their bits do): one
    vector reduction, where numba's loop of max() stayed 32 scalar steps."""
    def codegen(context, builder, signature, args):
        _, at = _ir_address(context, builder, signature.args[0], args[0], [args[1], args[2]])
        block = ir.VectorType(_I32, 32)
        magnitudes = builder.and_(builder.load(builder.bitcast(at, block.as_pointer()), align=4),
                                  ir.Constant(block, [0x7FFFFFFF] * 32))
        largest = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I32, [block]),
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
            top = _largest_magnitude(x, b, kb * 32)
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


_f16_group_dot = _group_dot_intrinsic("f16")
# Each machine compiles one arithmetic for the Q8_0 and Q4 blocks: integers where the CPU has AVX-512 VNNI
# (`_digit_dot_intrinsic`, the activations' digits from `_digits_of_rows`), float32 elsewhere (no digits).
_block_dot = _digit_dot_intrinsic if _VNNI else _group_dot_intrinsic
_q8_0_block_dot, _q4_0_block_dot, _q4_1_block_dot = (_block_dot(fmt) for fmt in ("q8_0", "q4_0", "q4_1"))


@njit(inline="always")
def _block_sums(x, n_blocks):  # pragma: no cover -- compiled
    sums = np.empty((x.shape[0], n_blocks), dtype=np.float32)
    for b in range(x.shape[0]):
        for kb in range(n_blocks):
            total = F32(0)
            for j in range(32):
                total += x[b, kb * 32 + j]
            sums[b, kb] = total
    return sums


@njit(cache=True)
def _no_digits(x, n_blocks):  # pragma: no cover -- compiled; where the blocks multiply in float32
    rows = x.shape[0]
    return np.empty((rows, 0), np.int8), np.empty((rows, 0), np.float32), np.empty((rows, 0), np.int32)


_row_digits = _digits_of_rows if _VNNI else _no_digits


@njit(parallel=True, cache=True)
def _rows_times_f16_groups(x, groups, y):  # pragma: no cover -- compiled
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            _f16_group_dot(groups, g, x, b, x, x, x, x, y)  # no block sums, no digits: x, unread


@njit(parallel=True, cache=True)
def _rows_times_q8_0_groups(x, groups, y):  # pragma: no cover -- compiled
    digits, x_scales, corrections = _row_digits(x, x.shape[1] // 32)
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            _q8_0_block_dot(groups, g, x, b, x, digits, x_scales, corrections, y)  # no block sums: x, unread


@njit(parallel=True, cache=True)
def _rows_times_q4_0_groups(x, groups, y):  # pragma: no cover -- compiled
    x_sums = _block_sums(x, x.shape[1] // 32)
    digits, x_scales, corrections = _row_digits(x, x.shape[1] // 32)
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            _q4_0_block_dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y)


@njit(parallel=True, cache=True)
def _rows_times_q4_1_groups(x, groups, y):  # pragma: no cover -- compiled
    x_sums = _block_sums(x, x.shape[1] // 32)
    digits, x_scales, corrections = _row_digits(x, x.shape[1] // 32)
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            _q4_1_block_dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y)


@njit(parallel=True, cache=True)
def _dequantize_halves(bits, out):  # pragma: no cover -- compiled
    for r in prange(bits.shape[0]):
        for k in range(bits.shape[1]):
            out[r, k] = _half(bits[r, k])


@njit(parallel=True, cache=True)
def _dequantize_q8_0(blocks, signed, out):  # pragma: no cover -- compiled
    for r in prange(blocks.shape[0]):
        for kb in range(blocks.shape[1]):
            d = _block_half(blocks, r, kb, 0)
            for j in range(32):
                out[r, kb * 32 + j] = F32(signed[r, kb, 2 + j]) * d


@njit(parallel=True, cache=True)
def _dequantize_q4(blocks, with_min, out):  # pragma: no cover -- compiled
    first = 4 if with_min else 2
    for r in prange(blocks.shape[0]):
        for kb in range(blocks.shape[1]):
            d = _block_half(blocks, r, kb, 0)
            if with_min:
                m = _block_half(blocks, r, kb, 2)
                for j in range(16):
                    byte = blocks[r, kb, first + j]
                    out[r, kb * 32 + j] = d * F32(byte & np.uint8(15)) + m
                    out[r, kb * 32 + 16 + j] = d * F32(byte >> np.uint8(4)) + m
            else:
                for j in range(16):
                    byte = blocks[r, kb, first + j]
                    out[r, kb * 32 + j] = d * F32(np.int32(byte & np.uint8(15)) - 8)
                    out[r, kb * 32 + 16 + j] = d * F32(np.int32(byte >> np.uint8(4)) - 8)


# A group's row of tiles holds its TILE_OUTPUTS rows transposed: row o's column k at TILE_OUTPUTS k + o. Written
# column by column, the group's rows innermost, so that each column's stores are one run (each row's scale, and
# Q4_1's minimum, converted once a block into a small table first).
@njit(parallel=True, cache=True)
def _dequantize_halves_in_tiles(bits, tiles):  # pragma: no cover -- compiled; tested through dequantize_tiles
    for g in prange(tiles.shape[0]):
        for k in range(bits.shape[1]):
            for o in range(TILE_OUTPUTS):
                tiles[g, TILE_OUTPUTS * k + o] = _half(bits[g * TILE_OUTPUTS + o, k])


@njit(parallel=True, cache=True)
def _dequantize_q8_0_in_tiles(blocks, signed, tiles):  # pragma: no cover -- compiled; tested through dequantize_tiles
    for g in prange(tiles.shape[0]):
        first = g * TILE_OUTPUTS
        scales = np.empty(TILE_OUTPUTS, dtype=F32)
        for kb in range(blocks.shape[1]):
            for o in range(TILE_OUTPUTS):
                scales[o] = _block_half(blocks, first + o, kb, 0)
            for h in range(32):
                at = TILE_OUTPUTS * (kb * 32 + h)
                for o in range(TILE_OUTPUTS):
                    tiles[g, at + o] = F32(signed[first + o, kb, 2 + h]) * scales[o]


@njit(parallel=True, cache=True)
def _dequantize_q4_in_tiles(blocks, with_min, tiles):  # pragma: no cover -- compiled; tested through dequantize_tiles
    quants = 4 if with_min else 2
    for g in prange(tiles.shape[0]):
        first = g * TILE_OUTPUTS
        scales = np.empty(TILE_OUTPUTS, dtype=F32)
        offsets = np.empty(TILE_OUTPUTS, dtype=F32)  # as _dequantize_q4: d q + m, or d q - 8 d
        for kb in range(blocks.shape[1]):
            for o in range(TILE_OUTPUTS):
                d = _block_half(blocks, first + o, kb, 0)
                scales[o] = d
                offsets[o] = _block_half(blocks, first + o, kb, 2) if with_min else F32(-8) * d
            for h in range(16):  # column h in the low nibbles, 16 + h in the high ones
                low_at, high_at = TILE_OUTPUTS * (kb * 32 + h), TILE_OUTPUTS * (kb * 32 + 16 + h)
                for o in range(TILE_OUTPUTS):
                    byte = blocks[first + o, kb, quants + h]
                    tiles[g, low_at + o] = scales[o] * F32(byte & np.uint8(15)) + offsets[o]
                    tiles[g, high_at + o] = scales[o] * F32(byte >> np.uint8(4)) + offsets[o]


# --- one new token attending over its cache, for several sequences --------------------------------

TOKENS_PER_PART = 256  # the shortest part of a context one core attends over on its own
# A part's keys go a block at a time, as flash-decoding's do: KEYS_A_BLOCK keys' scores for every query head that
# shares them (one vector of scores a head), the running softmax's step, then the block's values mixed in. The block's
# keys and values are read one after the other, each row in order, and the first head's pass over each asks for the
# row ASK_ROWS_AHEAD further on as it reads one. Until the thirteenth session a part's scores came first, then its
# softmax, then its values, each pass over all of the part's keys: on an Intel Xeon memory delivered them at about
# 17 GB/s of the 33-36 a plain read gets, and a plain loop reading the same rows in the same order, with no
# arithmetic, got 21; keys and values a block at a time, 21-23 (with no arithmetic, 25-28). A core computes a block
# from its L1 cache in about 0.22 µs (37 GB/s of keys and values: per key and head four multiply-adds for its score, a
# share of one tree of shuffles that adds up each key's lanes, four for its value); the same steps as plain numba
# loops took 0.55-0.6.
# A step's attention at 512 tokens, interleaved against the old kernel, 1 / 4 / 16 / 64 users: 2.17 / 6.44 / 23.3 /
# 93.1 -> 1.93 / 5.29 / 19.6 / 75.6 ms (benchmarks/README.md, "Thirteenth session").
KEYS_A_BLOCK = TILE_LANES
# Half a block ahead (2 KiB of SmolLM2's keys with AVX-512): on an Intel Xeon, against a whole block ahead, a step's
# attention alone at 16 / 64 users took 0.93-0.97 of the time, whole decode steps at 1 / 4 / 16 / 32 / 64 users
# 0.985 / 0.99 / 0.975-0.99 / 0.974 / 0.978 (interleaved); two and four blocks ahead were slower (attention alone
# 1.12 and 1.25 times), asking for nothing 1.02-1.04 times (benchmarks/README.md, "Fourteenth session").
ASK_ROWS_AHEAD = KEYS_A_BLOCK // 2


def one_token_attention(q: np.ndarray, keys: np.ndarray, values: np.ndarray, layer: int, first_slot: int,
                        lengths: np.ndarray) -> np.ndarray:
    """Attention of one new token per sequence over its KV cache; returns (n, heads * hd).

    q: (n, heads, hd). keys, values: a cache block (layers, slots, kv_heads, max_tokens, hd) whose slots
    first_slot .. first_slot + n - 1 hold the n sequences; sequence i's first lengths[i] rows (its new
    token's included) are attended. Equals model.decode_attention on the same rows.
    """
    n, heads, hd = q.shape
    out = np.empty((n, heads, hd), dtype=F32)
    # Everything else happens compiled: the numpy calls that prepared the arguments here took about 12 µs a call,
    # as much as the compiled work itself for one user at 128 tokens.
    # q contiguous: the model's queries are a view into its fused QKV product, and compiled for a strided q the
    # score loops were not vectorised (a step of 64 users took 147 ms of attention instead of 80).
    _one_token_attention(np.ascontiguousarray(q), keys, values, layer, first_slot, np.asarray(lengths, dtype=np.int64),
                         F32(1 / math.sqrt(hd)), numba.config.NUMBA_NUM_THREADS, out)
    return out.reshape(n, heads * hd)


@njit(cache=True)
def _parts(pairs, longest, threads):  # pragma: no cover -- compiled; tested through one_token_attention
    """How many parts each (sequence, KV head) pair's context is split into: enough for several jobs per core,
    none shorter than TOKENS_PER_PART, and a whole number of jobs per core when the pairs alone do not give one
    (one user's 3 KV heads in 3 parts made 9 jobs for 2 cores: one core did 5 while the other waited)."""
    most = max(1, -(-longest // TOKENS_PER_PART))
    wanted = max(1, min(most, -(-4 * threads // pairs)))
    for parts in range(wanted, most + 1):
        if pairs * parts % threads == 0:
            return parts
    for parts in range(wanted - 1, 0, -1):  # fewer, longer parts, when more would be too short (513 tokens: 2, not 3)
        if pairs * parts % threads == 0:
            return parts
    return wanted


def _ir_totals(builder, vectors):
    """Vectors of partial sums, vector j all of key j's -> one vector whose lane j is vector j's total: a tree that
    adds two vectors' halves at each level (two shuffles and an add), so a level's vectors each hold twice as many
    keys, in half as many lanes each; then one shuffle puts the keys in order."""
    width = vectors[0].type.count
    indices = lambda values: ir.Constant(ir.VectorType(_I32, width), values)  # noqa: E731
    level = [(vector, [j]) for j, vector in enumerate(vectors)]  # a vector, and the key of each of its runs of lanes
    while len(level) > 1:
        merged = []
        for (a, a_keys), (b, b_keys) in zip(level[0::2], level[1::2], strict=True):
            run = width // len(a_keys)
            half = run // 2
            low, high, keys = [], [], []
            for i in range(len(a_keys)):  # each run's halves: a's first, then b's (b's lanes are width + ...)
                low += [i * run + lane for lane in range(half)] + [width + i * run + lane for lane in range(half)]
                high += [i * run + half + lane for lane in range(half)] + [width + i * run + half + lane for lane in range(half)]
                keys += [a_keys[i], b_keys[i]]
            merged.append((builder.fadd(builder.shuffle_vector(a, b, indices(low)), builder.shuffle_vector(a, b, indices(high))),
                           keys))
        level = merged
    vector, keys = level[0]
    return builder.shuffle_vector(vector, ir.Constant(vector.type, ir.Undefined), indices([keys.index(j) for j in range(width)]))


def _key_block_intrinsic(n_vectors):
    """A numba intrinsic attend(k, v, first_key, mine, scale, tops, sums, mixed, scratch): one block of the running
    softmax, for a head dimension of n_vectors vectors. Keys (and values) first_key .. first_key + KEYS_A_BLOCK - 1 of
    k and v (2-D, rows contiguous); mine (rep, hd) the query heads that share them; for each head r, tops[r] is
    its largest scaled score so far, sums[r] its numerators' sum and mixed[r] their values' sum, each numerator
    exp(score - tops[r]); the block's keys join them (the earlier ones shrunk by exp(old top - new top)). scratch:
    (rep, 2 KEYS_A_BLOCK) float32, each head's numerators and shrink factor."""
    @intrinsic
    def attend(typingctx, k, v, first_key, mine, scale, tops, sums, mixed, scratch):
        def codegen(context, builder, signature, args):
            k_type, v_type, _, mine_type, _, tops_type, sums_type, mixed_type, scratch_type = signature.args
            zero = context.get_constant(types.intp, 0)

            def at(n):
                return context.get_constant(types.intp, n)

            k_array, k_first = _ir_address(context, builder, k_type, args[0], [args[2], zero])
            v_array, v_first = _ir_address(context, builder, v_type, args[1], [args[2], zero])
            mine_array, mine_first = _ir_address(context, builder, mine_type, args[3], [zero, zero])
            tops_first, sums_first, mixed_first, scratch_first = (
                _ir_address(context, builder, signature.args[i], args[i], [zero] * signature.args[i].ndim)[1]
                for i in range(5, 9))
            rep = cgutils.unpack_tuple(builder, mine_array.shape)[0]
            hd = at(n_vectors * TILE_LANES)
            k_step, v_step = (builder.sdiv(cgutils.unpack_tuple(builder, array.strides)[0], at(4))
                              for array in (k_array, v_array))  # floats from one row to the next
            scale = _ir_splat(builder, args[4], _TILE)

            def row(first, step, j):
                return builder.gep(first, [builder.mul(at(j), step)])

            def ask_for_row(first, step, j):  # the row's lines, from memory into the cache (past the end: only a hint)
                for line in range(0, n_vectors * TILE_LANES, FLOATS_PER_LINE):
                    _ir_prefetch(builder, builder.bitcast(builder.gep(row(first, step, j), [at(line)]), _I8.as_pointer()))

            def scratch_vector(r, which):  # head r's numerators (0) or shrink factor (1)
                pointer = builder.gep(scratch_first, [builder.add(builder.mul(r, at(2 * KEYS_A_BLOCK)), at(which * KEYS_A_BLOCK))])
                return builder.bitcast(pointer, _TILE.as_pointer())

            def larger(x, y):
                return _ir_larger(builder, x, y)

            # Scores, head after head, each key's row read in order (the first head's from memory; it asks for the
            # keys ASK_ROWS_AHEAD rows on as it goes), each key's lanes added up by one tree for the block.
            with cgutils.for_range(builder, rep) as heads:
                r = heads.index
                q_row = builder.gep(mine_first, [builder.mul(r, hd)])
                queries = [builder.fmul(_ir_load(builder, q_row, c * TILE_LANES, _TILE, align=4), scale)
                           for c in range(n_vectors)]
                first_head = builder.icmp_signed("==", r, zero)
                partial = []
                for j in range(KEYS_A_BLOCK):
                    with builder.if_then(first_head):
                        ask_for_row(k_first, k_step, ASK_ROWS_AHEAD + j)
                    key = row(k_first, k_step, j)
                    total = builder.fmul(_ir_load(builder, key, 0, _TILE, align=4), queries[0])
                    for c in range(1, n_vectors):
                        total = _ir_fmuladd(builder, _ir_load(builder, key, c * TILE_LANES, _TILE, align=4), queries[c], total)
                    partial.append(total)
                builder.store(_ir_totals(builder, partial), scratch_vector(r, 0), align=4)
            # The running softmax's step, head after head.
            with cgutils.for_range(builder, rep) as heads:
                r = heads.index
                scores = builder.load(scratch_vector(r, 0), align=4)
                top_at, sum_at = builder.gep(tops_first, [r]), builder.gep(sums_first, [r])
                old = builder.load(top_at)
                new = larger(_ir_fold(builder, [scores], larger), old)
                builder.store(new, top_at)
                numerators = _ir_exp(builder, builder.fsub(scores, _ir_splat(builder, new, _TILE)))
                builder.store(numerators, scratch_vector(r, 0), align=4)
                shrink = _ir_exp(builder, _ir_splat(builder, builder.fsub(old, new), _TILE))  # exp(-inf) = 0: the first block
                builder.store(shrink, scratch_vector(r, 1), align=4)
                earlier = builder.fmul(builder.load(sum_at), builder.extract_element(shrink, ir.Constant(_I32, 0)))
                builder.store(builder.fadd(earlier, _ir_fold(builder, [numerators], builder.fadd)), sum_at)
            # The values, head after head, each row read in order (the first head's from memory, asking for the row
            # ASK_ROWS_AHEAD on), into two sets of sums taken in turn (one would wait on each multiply-add's latency).
            with cgutils.for_range(builder, rep) as heads:
                r = heads.index
                mixed_row = builder.gep(mixed_first, [builder.mul(r, hd)])
                numerator_row = builder.bitcast(scratch_vector(r, 0), _F32.as_pointer())
                shrink = builder.load(scratch_vector(r, 1), align=4)
                sums = [[builder.fmul(_ir_load(builder, mixed_row, c * TILE_LANES, _TILE, align=4), shrink)
                         for c in range(n_vectors)], [None] * n_vectors]
                first_head = builder.icmp_signed("==", r, zero)
                for j in range(KEYS_A_BLOCK):
                    with builder.if_then(first_head):
                        ask_for_row(v_first, v_step, ASK_ROWS_AHEAD + j)
                    weight = _ir_splat(builder, builder.load(builder.gep(numerator_row, [at(j)])), _TILE)
                    value = row(v_first, v_step, j)
                    for c in range(n_vectors):
                        lanes = _ir_load(builder, value, c * TILE_LANES, _TILE, align=4)
                        before = sums[j % 2][c]
                        sums[j % 2][c] = (builder.fmul(lanes, weight) if before is None
                                          else _ir_fmuladd(builder, lanes, weight, before))
                for c in range(n_vectors):
                    pointer = builder.bitcast(builder.gep(mixed_row, [at(c * TILE_LANES)]), _TILE.as_pointer())
                    builder.store(builder.fadd(sums[0][c], sums[1][c]), pointer, align=4)
            return context.get_dummy_value()
        return types.void(k, v, first_key, mine, scale, tops, sums, mixed, scratch), codegen
    return attend


# A head dimension of 4 or 8 vectors (SmolLM2's 64: 4 with AVX-512, 8 with AVX2; 128 with AVX-512); any other goes
# key by key (the tiny test model's 16). Each variant adds about a second to the kernels' cold compile.
_attend_4_vectors = _key_block_intrinsic(4)
_attend_8_vectors = _key_block_intrinsic(8)


@njit(fastmath=FAST, inline="always")
def _attend_keys(k, v, first, stop, mine, scale, tops, sums, mixed, scores, powers):  # pragma: no cover -- compiled
    """The blocks' step for keys first .. stop - 1 (at most as many as `scores` holds), key by key: a part's last
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
# numba's default would raise ZeroDivisionError from the division of the parts' sums.
@njit(parallel=True, fastmath=FAST, cache=True, error_model="numpy")
def _one_token_attention(q, keys, values, layer, first_slot, lengths, scale, threads, out):  # pragma: no cover
    n, heads, hd = q.shape
    kv_heads = keys.shape[2]
    rep = heads // kv_heads  # query heads per KV head
    longest = 0
    for length in lengths:  # a loop, not lengths.max(): that too would be a parallel loop of its own (see below)
        longest = max(longest, length)
    # threads: numba's team ($NUMBA_NUM_THREADS; nothing here calls set_num_threads). get_num_threads() took 1.5 µs
    # from Python, and called compiled it keeps the function out of numba's cache.
    parts = _parts(n * kv_heads, longest, threads)
    jobs = n * kv_heads * parts
    vectors = hd // TILE_LANES if hd % TILE_LANES == 0 else 0
    # np.empty, never np.zeros, outside the parallel loop: numba runs each np.zeros as a parallel loop of its own,
    # about 3.5 µs each to start here (a tenth of one user's call at 512 tokens). Each job sets its own rows.
    part_max = np.empty((jobs, rep), dtype=np.float32)
    part_sum = np.empty((jobs, rep), dtype=np.float32)
    part_out = np.empty((jobs, rep, hd), dtype=np.float32)
    # Each job's scratch, allocated once here rather than once per job inside the parallel loop.
    block_scratch = np.empty((jobs, rep, 2 * KEYS_A_BLOCK), dtype=np.float32)
    key_scores = np.empty((jobs, KEYS_A_BLOCK), dtype=np.float32)
    key_powers = np.empty((jobs, KEYS_A_BLOCK), dtype=np.int32)
    for job_index in prange(jobs):
        job = np.int64(job_index)  # prange's index may be unsigned, and unsigned // signed is a float in numba
        seq, rest = divmod(job, kv_heads * parts)
        group, part = divmod(rest, parts)
        slot, length = first_slot + seq, lengths[seq]
        per_part = -(-length // parts)
        start, stop = part * per_part, min(length, (part + 1) * per_part)
        tops, sums, mixed = part_max[job], part_sum[job], part_out[job]
        for r in range(rep):
            tops[r], sums[r] = -np.inf, 0  # an empty part stays so: its sum 0 weighs nothing below
            for d in range(hd):
                mixed[r, d] = 0
        k, v = keys[layer, slot, group], values[layer, slot, group]  # (max_tokens, hd)
        mine = q[seq, group * rep:(group + 1) * rep]  # this group's query heads
        first = start
        while (vectors == 4 or vectors == 8) and first + KEYS_A_BLOCK <= stop:
            if vectors == 4:
                _attend_4_vectors(k, v, first, mine, scale, tops, sums, mixed, block_scratch[job])
            else:
                _attend_8_vectors(k, v, first, mine, scale, tops, sums, mixed, block_scratch[job])
            first += KEYS_A_BLOCK
        while first < stop:
            last = min(stop, first + KEYS_A_BLOCK)
            _attend_keys(k, v, first, last, mine, scale, tops, sums, mixed, key_scores[job], key_powers[job])
            first = last
    # Combine the parts: rescale each by exp(its max - the overall max). A few thousand multiply-adds, on one
    # core: a second parallel region would cost more to start than the work.
    for head_index in range(n * heads):
        seq, head = divmod(head_index, heads)
        group, r = divmod(head, rep)
        first = (seq * kv_heads + group) * parts
        top = part_max[first, r]  # the first part is never empty: every sequence has a token
        for p in range(first + 1, first + parts):
            if part_sum[p, r] > 0:
                top = max(top, part_max[p, r])
        total = np.float32(0)
        for d in range(hd):
            out[seq, head, d] = 0
        for p in range(first, first + parts):
            if part_sum[p, r] > 0:
                factor = np.exp(part_max[p, r] - top)
                total += factor * part_sum[p, r]
                for d in range(hd):
                    out[seq, head, d] += factor * part_out[p, r, d]
        for d in range(hd):
            out[seq, head, d] /= total


# --- a prompt's queries attending over their keys (prefill, a chunk of a prompt) ----------------------------
# Block by block, as FlashAttention does: a panel of PANEL_QUERY_ROWS query rows (one KV head's query heads, token
# after token) takes KEY_BLOCK keys at a time: their scores (one register-blocked product over the head
# dimension), the running softmax (each row's maximum so far, and its sum of numerators), and their values
# mixed into the panel's outputs (a second product over the block's keys). The scores never leave the L1 cache,
# and a panel stops at its last token's last key (causal), where numpy's path computed each query block's whole
# rows and masked the future. Both products are the GEMM micro-kernel's shape, C (rows × 4 vectors) += A B:
# the scores read the keys transposed (hd × keys, made once a call), the mixing reads the values as stored.
KEY_BLOCK = 4 * TILE_LANES  # keys a panel takes at once: four vectors of scores per query row
PANELS_A_JOB = 4  # neighbouring panels one job takes together, each block of keys in turn (see _prompt_attention)


def _ir_exp(builder, x):
    """exp of a float32 vector, as `_exp_parts` computes it (its polynomial and its clamps): exp(-inf) = 0, exp(0) = 1."""
    vector, lanes = x.type, x.type.count
    words = ir.VectorType(_I32, lanes)

    def each(value):
        return ir.Constant(vector, [value] * lanes)

    t = builder.fmul(x, each(LOG2_E))
    t = builder.select(builder.fcmp_ordered("<", t, each(-127.5)), each(-127.5), t)
    t = builder.select(builder.fcmp_ordered(">", t, each(127.49)), each(127.49), t)
    biased = builder.fptosi(builder.fadd(t, each(127.5)), words)  # n + 127, t + 127.5 >= 0: truncation is the floor
    f = builder.fsub(t, builder.sitofp(builder.sub(biased, ir.Constant(words, [127] * lanes)), vector))
    p = each(EXP2_POLYNOMIAL[0])
    for coefficient in EXP2_POLYNOMIAL[1:]:
        p = _ir_fmuladd(builder, p, f, each(coefficient))
    return builder.fmul(p, builder.bitcast(builder.shl(biased, ir.Constant(words, [23] * lanes)), vector))


def _ir_fold(builder, vectors, combine):
    """Vectors -> one float: all their lanes combined (combine(a, b) of two vectors), halving the lanes."""
    total = vectors[0]
    for vector in vectors[1:]:
        total = combine(total, vector)
    lanes = total.type.count
    undefined = ir.Constant(total.type, ir.Undefined)
    while lanes > 1:
        lanes //= 2
        upper = [lanes + i for i in range(lanes)] + [0] * (total.type.count - lanes)
        total = combine(total, builder.shuffle_vector(total, undefined, ir.Constant(ir.VectorType(_I32, total.type.count), upper)))
    return builder.extract_element(total, ir.Constant(_I32, 0))


def _panel_product_intrinsic(n_rows, n_vectors, numerators, masked=True):
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
            a_array, a_first = _ir_address(context, builder, a_type, args[0], [zero, zero])
            b_array, b_first = _ir_address(context, builder, b_type, args[1], [args[2], args[3]])
            c_array, c_first = _ir_address(context, builder, c_type, args[5], [zero, args[6]])
            c_width = cgutils.unpack_tuple(builder, c_array.shape)[1]
            a_width = cgutils.unpack_tuple(builder, a_array.shape)[1]
            b_step = builder.sdiv(cgutils.unpack_tuple(builder, b_array.strides)[0],
                                  context.get_constant(types.intp, 4))  # floats from one row of b to the next
            count_value = context.cast(builder, args[4], signature.args[4], types.intp)

            def at(n):
                return context.get_constant(types.intp, n)

            def c_vector(r, v):  # a pointer to row r's vector v of c's columns
                pointer = builder.gep(c_first, [builder.add(builder.mul(at(r), c_width), at(v * TILE_LANES))])
                return builder.bitcast(pointer, _TILE.as_pointer())

            sums = [[cgutils.alloca_once(builder, _TILE) for _ in range(n_vectors)] for _ in range(n_rows)]  # registers
            for row in sums:
                for accumulator in row:
                    builder.store(ir.Constant(_TILE, [0.0] * TILE_LANES), accumulator)
            with cgutils.for_range(builder, count_value) as loop:
                b_row = builder.gep(b_first, [builder.mul(loop.index, b_step)])
                lanes = [_ir_load(builder, b_row, v * TILE_LANES, _TILE, align=4) for v in range(n_vectors)]
                for r, row in enumerate(sums):
                    a_value = builder.load(builder.gep(a_first, [builder.add(builder.mul(at(r), a_width), loop.index)]))
                    a_lanes = _ir_splat(builder, a_value, _TILE)
                    for v, accumulator in enumerate(row):
                        builder.store(_ir_fmuladd(builder, lanes[v], a_lanes, builder.load(accumulator)), accumulator)
            if not numerators:
                for r, row in enumerate(sums):
                    for v, accumulator in enumerate(row):
                        total = builder.fadd(builder.load(c_vector(r, v), align=4), builder.load(accumulator))
                        builder.store(total, c_vector(r, v), align=4)
                return context.get_dummy_value()
            visible_first, highest_first, sums_first, shrink_first = (
                _ir_address(context, builder, signature.args[i], args[i], [zero])[1] for i in range(7, 11))
            below = ir.Constant(_TILE, [float("-inf")] * TILE_LANES)
            lanes_i32 = ir.VectorType(_I32, TILE_LANES)
            minus_infinity = ir.Constant(_F32, float("-inf"))

            def larger(x, y):
                return _ir_larger(builder, x, y)

            differences = ir.Constant(_TILE, [0.0] * TILE_LANES)  # each row's old maximum - new, one lane a row
            for r, row in enumerate(sums):
                scores = [builder.load(accumulator) for accumulator in row]
                if masked:  # 32-bit lanes: the comparisons of 64-bit ones took two instructions a vector
                    shown = _ir_splat(builder, builder.trunc(builder.load(builder.gep(visible_first, [at(r)])), _I32),
                                      lanes_i32)
                    scores = [builder.select(builder.icmp_signed("<", ir.Constant(lanes_i32, [v * TILE_LANES + i for i
                                                                                              in range(TILE_LANES)]),
                                                                 shown), score, below) for v, score in enumerate(scores)]
                old = builder.load(builder.gep(highest_first, [at(r)]))
                new = larger(_ir_fold(builder, scores, larger), old)
                builder.store(new, builder.gep(highest_first, [at(r)]))
                # no key seen yet (every score -inf): numerators 0, and nothing earlier to shrink
                base = builder.select(builder.fcmp_ordered("==", new, minus_infinity), ir.Constant(_F32, 0.0), new)
                difference = builder.select(builder.fcmp_ordered("==", old, minus_infinity), minus_infinity,
                                            builder.fsub(old, base))
                differences = builder.insert_element(differences, difference, ir.Constant(_I32, r))
                shifted = _ir_splat(builder, base, _TILE)
                weights = [_ir_exp(builder, builder.fsub(s, shifted)) for s in scores]
                for v, w in enumerate(weights):
                    builder.store(w, c_vector(r, v), align=4)
                builder.store(_ir_fold(builder, weights, builder.fadd), builder.gep(sums_first, [at(r)]))
            shrinks = _ir_exp(builder, differences)
            for r in range(n_rows):
                builder.store(builder.extract_element(shrinks, ir.Constant(_I32, r)), builder.gep(shrink_first, [at(r)]))
            return context.get_dummy_value()
        return types.void(a, b, b_row, b_column, count, c, c_column, visible, highest, block_sums, shrink), codegen
    return product


_block_numerators = _panel_product_intrinsic(PANEL_QUERY_ROWS, KEY_BLOCK // TILE_LANES, numerators=True)
# A block every row of the panel sees whole (all but a panel's last): no mask to compute.
_whole_block_numerators = _panel_product_intrinsic(PANEL_QUERY_ROWS, KEY_BLOCK // TILE_LANES, numerators=True,
                                                   masked=False)
# The values' product, four vectors of the head dimension at a time (SmolLM2's 64 is four with AVX-512, eight with
# AVX2), and what is left of another head dimension one vector at a time.
_mix_4_vectors = _panel_product_intrinsic(PANEL_QUERY_ROWS, 4, numerators=False)
_mix_1_vector = _panel_product_intrinsic(PANEL_QUERY_ROWS, 1, numerators=False)


def attends(q: np.ndarray, keys: np.ndarray) -> bool:
    """Whether `model.attention` hands a prompt's attention to `prompt_attention`: float32, a head dimension of
    whole vectors."""
    return enabled() and q.dtype == F32 and keys.dtype == F32 and q.shape[2] % TILE_LANES == 0


def prompt_attention(q: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Causal grouped-query attention of the last Tq positions over all Lk keys and values, as model.attention:
    q (Tq, heads, hd); keys, values (kv_heads, Lk, hd), each row contiguous. Returns (Tq, heads * hd)."""
    tq, heads, hd = q.shape
    if values.strides[2] != 4:
        raise ValueError("prompt_attention needs the values' rows contiguous")
    kv_heads, lk = keys.shape[:2]
    blocks = -(-lk // KEY_BLOCK)
    # The keys transposed a block at a time, (hd, KEY_BLOCK) each, the last padded with zeros (always masked). A
    # block is one run of 16 KiB: as rows of the whole transposed matrix, 8 KiB apart at 2048 tokens, its lines
    # fell into the same few sets of the L1 cache, and the scores took 16.3 ms of a layer's 33.3 against 12.5
    # for the values' product, the same arithmetic.
    transposed = np.zeros((kv_heads, blocks * KEY_BLOCK, hd), dtype=F32)
    transposed[:, :lk] = keys
    transposed = np.ascontiguousarray(transposed.reshape(kv_heads, blocks, KEY_BLOCK, hd).transpose(0, 1, 3, 2))
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
    panels = (rows + PANEL_QUERY_ROWS - 1) // PANEL_QUERY_ROWS
    runs = (panels + PANELS_A_JOB - 1) // PANELS_A_JOB  # a job's panels: PANELS_A_JOB neighbours
    jobs = kv_heads * runs
    # Each core takes every `threads`-th job, job after job, so each gets as many late (long, causal) panels as
    # early ones; its scratch is made once, not for each job (a 64-token prompt's panel computes in about a
    # microsecond, its eight arrays took as long to allocate). The jobs go KV head by KV head, so the cores work on
    # one head's keys and values at a time (1 MiB at 2048 tokens, within a core's L2 cache); taken head after head
    # in turn, each core's panels read all three heads' (3 MiB), and on an Intel Xeon a layer at 2048 tokens took
    # 26.0 ms against 21.3 (1024 tokens: 5.22 against 5.15). A job's panels take each block of keys in turn, while
    # its keys and values (16 KiB each) are in the L1 cache: one panel a job, each block came from the L2 for each
    # panel, and the products ran at 0.87 (values) and 0.79 (scores) of their speed from the L1. Interleaved in one
    # process, 256 / 1024 / 2048 tokens, against one panel a job: two 0.95-1.00 / 0.97 / 0.93-0.94 of the time, four
    # 0.94-0.99 / 0.94-0.95 / 0.91-0.93, eight 0.94 / 0.96 / 0.87 (benchmarks/README.md).
    for worker in prange(threads):
        queries = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS, hd), dtype=F32)
        limits = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS), dtype=np.int64)  # row r sees keys 0 .. limits[r] - 1
        visible = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS), dtype=np.int64)  # of a block's keys, the first visible[r]
        numerators = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS, KEY_BLOCK), dtype=F32)  # a block's exp(score - highest)
        highest = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS), dtype=F32)  # each row's largest score so far
        sums = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS), dtype=F32)  # its numerators' sum
        block_sums = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS), dtype=F32)
        shrink = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS), dtype=F32)
        mixed = np.empty((PANELS_A_JOB, PANEL_QUERY_ROWS, hd), dtype=F32)  # Σ numerator · value
        counts = np.empty(PANELS_A_JOB, dtype=np.int64)  # each panel's query rows
        for job in range(worker, jobs, threads):
            g, run = job // runs, job % runs
            # A runtime count, the last job's maybe fewer: with the constant, LLVM unrolled the loops over a job's
            # panels, and their intrinsics took the kernels' cold compile 1.5 s longer.
            job_panels = min(PANELS_A_JOB, panels - run * PANELS_A_JOB)
            end = 0
            for p in range(job_panels):
                first_row = (run * PANELS_A_JOB + p) * PANEL_QUERY_ROWS
                n = min(PANEL_QUERY_ROWS, rows - first_row)
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
            for first_key in range(0, end, KEY_BLOCK):
                block = transposed[g, first_key // KEY_BLOCK]
                for p in range(job_panels):
                    n = counts[p]
                    if limits[p, n - 1] <= first_key:  # the panel's rows see none of this block
                        continue
                    for r in range(PANEL_QUERY_ROWS):
                        visible[p, r] = limits[p, r] - first_key
                    if limits[p, 0] - first_key >= KEY_BLOCK:
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
                    count = min(KEY_BLOCK, limits[p, n - 1] - first_key)
                    for column in range(0, hd - 4 * TILE_LANES + 1, 4 * TILE_LANES):
                        _mix_4_vectors(numerators[p], values[g], first_key, column, count, mixed[p], column, visible[p],
                                       highest[p], block_sums[p], shrink[p])
                    for column in range(hd // (4 * TILE_LANES) * 4 * TILE_LANES, hd, TILE_LANES):
                        _mix_1_vector(numerators[p], values[g], first_key, column, count, mixed[p], column, visible[p],
                                      highest[p], block_sums[p], shrink[p])
            for p in range(job_panels):
                first_row = (run * PANELS_A_JOB + p) * PANEL_QUERY_ROWS
                for r in range(counts[p]):
                    t, h = (first_row + r) // rep, g * rep + (first_row + r) % rep
                    share = 1 / sums[p, r]  # one division a row, not one an element
                    for d in range(hd):
                        out[t, h, d] = mixed[p, r, d] * share


# --- element-wise work ---------------------------------------------------------------------------------
# rms_norm and RoPE are a handful of numpy calls each on 576 floats: 10-30 µs of call overhead each time, some 2
# ms of a one-user step at 512 tokens (its weights stream in about 17). Compiled, one call each: on 2048 rows
# (AMD EPYC, Zen 4) RoPE took 1.0 ms on one core and rms_norm 0.19. exp (the softmax's numerators, the MLP gate's
# sigmoid) is compiled for every size: numpy's float32 exp and tanh run about 2 ns an element here (numpy 2.4 on
# AVX2; the kernel 0.5), and numpy's MLP gate alone was a tenth of a 2048-token prefill. The three split a
# prompt's rows between the cores (from PARALLEL_ROWS rows), each parallel loop calling the function that does a
# range of rows: the gate's 2048 rows 2.26 -> 1.76 ms; RoPE and rms_norm, interleaved against one core, a
# 2048-token prefill 3229 -> 3087 ms. As bodies of their own, inlined in each loop, the parallel versions had taken
# the kernels' cold compile past 15 s (17-20); so, 0.2 s more.

PARALLEL_ROWS = 64  # rows from which the MLP gate, RoPE and rms_norm split them between the cores
LOG2_E = 1.442695
# 2^f on [-1/2, 1/2], Cephes' exp2f polynomial, the highest power's coefficient first: `_exp_parts` (numba) and
# `_ir_exp` (a prompt's attention, in LLVM's instructions) compute the same exp.
EXP2_POLYNOMIAL = (1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2,
                   2.402264791363012e-1, 6.931472028550421e-1, 1.0)
ROWS_A_JOB = 16  # rows a core takes at once in those three (each gate job makes its own scratch)


@njit(fastmath=FAST, inline="always")
def _exp_parts(x):  # pragma: no cover -- compiled
    """exp(x) as two factors, 2^f (a polynomial) and the bits of 2^n, where x log2(e) = n + f, |f| <= 1/2.

    The caller stores the bits, views them as float32 and multiplies (numba has no bit cast of one value):
    written so, a loop of these vectorises, where libm's expf is one call per element. Relative error 3e-7
    for -3 < x <= 0 (numpy's: 2e-7) and within 1e-6 for |x| < 20 (the float32 rounding of x log2(e));
    exp(0) is exactly 1. Below 2^-126 (x < -87.3) the bits are those of 0.0, so exp(-inf) is exactly 0;
    above 2^127.5 (x > 88.4) it saturates at 2.4e38, never inf."""
    t = min(max(x * F32(LOG2_E), F32(-127.5)), F32(127.49))
    biased = np.int32(t + F32(127.5))  # n + 127, n the nearest integer: truncation is the floor, t + 127.5 >= 0
    # From t, not from t + 127.5 (that sum keeps 16 bits of f). Each int32 spelled out: numba makes int32 - int32
    # an int64, and AVX2 converts no int64 vector to float (the loop ran 2.5 times slower).
    f = t - F32(np.int32(biased - np.int32(127)))
    p = F32(EXP2_POLYNOMIAL[0])  # 2^f on [-1/2, 1/2], in Horner form
    p = p * f + F32(EXP2_POLYNOMIAL[1])
    p = p * f + F32(EXP2_POLYNOMIAL[2])
    p = p * f + F32(EXP2_POLYNOMIAL[3])
    p = p * f + F32(EXP2_POLYNOMIAL[4])
    p = p * f + F32(EXP2_POLYNOMIAL[5])
    p = p * f + F32(EXP2_POLYNOMIAL[6])
    return p, np.int32(biased << np.int32(23))  # biased 0: the bits of +0.0


@njit(fastmath=FAST, inline="always")
def _exp_row(row, powers, shift):  # pragma: no cover -- compiled
    """row[:] = exp(row - shift), in place, and returns their sum (unused, the compiler drops it); `powers` is int32
    scratch at least as long. Two indexed passes (see _exp_parts): `for row in x` and a tuple stored at once each
    ran three times slower."""
    for i in range(row.shape[0]):
        fraction, power = _exp_parts(row[i] - shift)
        row[i] = fraction
        powers[i] = power
    scales = powers.view(np.float32)
    total = F32(0)
    for i in range(row.shape[0]):
        row[i] *= scales[i]
        total += row[i]
    return total


def softmax_numerators(x: np.ndarray) -> np.ndarray:
    """x[...] = exp(x − its row's maximum), in place, for a C-contiguous float32 array; returns each row's sum of
    them, shaped (..., 1): softmax's numerators and denominators, as model.softmax_numerators gives them."""
    if not x.flags.c_contiguous or x.dtype != F32:  # a reshaped copy would be written, not x
        raise ValueError(f"softmax_numerators needs a C-contiguous float32 array, got {x.dtype} {x.shape}")
    # The rows' maxima by numpy, whose loop runs sixteen lanes at a time: numba's max() of floats waited on each
    # comparison (a block of 504 rows of 2048 scores: 1.08 ms against numpy's 0.16).
    tops = x.max(axis=-1)
    sums = np.empty(x.shape[:-1] + (1,), dtype=F32)
    _softmax_numerators(x.reshape(-1, x.shape[-1]), tops.reshape(-1), sums.reshape(-1))
    return sums


@njit(fastmath=FAST, nogil=True, cache=True)
def _softmax_numerators(x, tops, sums):  # pragma: no cover -- compiled; tested through softmax_numerators
    # Two passes over a row (exp's two factors of each shifted score; their product and its sum) after the
    # maximum's, where numpy's subtraction and sum around the compiled exp's two passes made four.
    powers = np.empty(x.shape[1], dtype=np.int32)
    for t in range(x.shape[0]):
        sums[t] = _exp_row(x[t], powers, tops[t])


def silu_gate(gate_up: np.ndarray, out: np.ndarray) -> None:
    """out = silu(gate) * up, the SwiGLU gate, where gate_up (T, 2 d_ff) holds gate and up side by side (as
    model.mlp's product gives them) and out is (T, d_ff); both C-contiguous, so every row is vectorised."""
    if out.shape[0] >= PARALLEL_ROWS:
        _silu_gate_in_parallel(gate_up, out)
    else:
        _silu_gate_rows(gate_up, out, 0, out.shape[0])


# error_model="numpy": numba's default (Python's) checks every float division for a zero divisor, to raise
# ZeroDivisionError, and a loop with that branch is not vectorised (the gate's last loop: 1.0 ns an element, 4 times
# the rest of the kernel's). Here the divisor is 1 + exp(-x) >= 1.
@njit(fastmath=FAST, cache=True, error_model="numpy")
def _silu_gate_rows(gate_up, out, first, stop):  # pragma: no cover -- compiled; tested through silu_gate
    d_ff = out.shape[1]
    powers = np.empty(d_ff, dtype=np.int32)
    for t in range(first, stop):
        row, o = gate_up[t], out[t]
        for i in range(d_ff):
            o[i] = -row[i]
        _exp_row(o, powers, F32(0))
        for i in range(d_ff):  # x sigmoid(x) = x / (1 + exp(-x)); exp(-x) saturates, never inf
            o[i] = row[i] * row[d_ff + i] / (F32(1) + o[i])


# The parallel loop calls the rows' function, not its inlined body: numba compiled that body a second time for the
# loop (the kernels' cold compile 0.6 s longer).
@njit(parallel=True, cache=True)
def _silu_gate_in_parallel(gate_up, out):  # pragma: no cover -- compiled; tested through silu_gate
    for block in prange(-(-out.shape[0] // ROWS_A_JOB)):
        _silu_gate_rows(gate_up, out, block * ROWS_A_JOB, min(out.shape[0], (block + 1) * ROWS_A_JOB))


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """model.rms_norm, one compiled pass a row; a prompt's rows (from PARALLEL_ROWS) split between the cores."""
    out = np.empty(x.shape, dtype=F32)
    if x.shape[0] >= PARALLEL_ROWS:
        _rms_norm_in_parallel(x, weight, F32(eps), out)
    else:
        _rms_norm_rows(x, weight, F32(eps), out, 0, x.shape[0])
    return out


@njit(fastmath=FAST, cache=True)
def _rms_norm_rows(x, weight, eps, out, first, stop):  # pragma: no cover -- compiled; tested through rms_norm
    n = x.shape[1]
    for t in range(first, stop):
        total = F32(0)
        for i in range(n):
            total += x[t, i] * x[t, i]
        scale = F32(1) / np.sqrt(total / F32(n) + eps)
        for i in range(n):
            out[t, i] = x[t, i] * (weight[i] * scale)


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, interleaved: bool) -> np.ndarray:
    """model.rope, one compiled pass: x (T, heads, hd), cos and sin (T, 1, hd/2); a prompt's rows (from
    PARALLEL_ROWS) split between the cores."""
    out = np.empty(x.shape, dtype=F32)
    if x.shape[0] >= PARALLEL_ROWS:
        _rope_in_parallel(x, cos, sin, interleaved, out)
    else:
        _rope_rows(x, cos, sin, interleaved, out, 0, x.shape[0])
    return out


@njit(fastmath=FAST, cache=True)
def _rope_rows(x, cos, sin, interleaved, out, first, stop):  # pragma: no cover -- compiled; tested through rope
    half = x.shape[2] // 2
    # One loop for each layout, so that each is vectorised: one loop choosing between them pair by pair stayed
    # scalar (2048 tokens' queries and keys: 3.2 ms against 1.0).
    if interleaved:
        for t in range(first, stop):
            for h in range(x.shape[1]):
                for i in range(half):
                    a, b, c, s = x[t, h, 2 * i], x[t, h, 2 * i + 1], cos[t, 0, i], sin[t, 0, i]
                    out[t, h, 2 * i] = a * c - b * s
                    out[t, h, 2 * i + 1] = a * s + b * c
    else:
        for t in range(first, stop):
            for h in range(x.shape[1]):
                for i in range(half):
                    a, b, c, s = x[t, h, i], x[t, h, half + i], cos[t, 0, i], sin[t, 0, i]
                    out[t, h, i] = a * c - b * s
                    out[t, h, half + i] = a * s + b * c


# The parallel loops call the rows' functions, as the MLP gate's does (bodies of their own, compiled again for the
# loops, had taken the cold compile from 13 to 17-20 s).
@njit(parallel=True, cache=True)
def _rms_norm_in_parallel(x, weight, eps, out):  # pragma: no cover -- compiled; tested through rms_norm
    for block in prange(-(-x.shape[0] // ROWS_A_JOB)):
        _rms_norm_rows(x, weight, eps, out, block * ROWS_A_JOB, min(x.shape[0], (block + 1) * ROWS_A_JOB))


@njit(parallel=True, cache=True)
def _rope_in_parallel(x, cos, sin, interleaved, out):  # pragma: no cover -- compiled; tested through rope
    for block in prange(-(-x.shape[0] // ROWS_A_JOB)):
        _rope_rows(x, cos, sin, interleaved, out, block * ROWS_A_JOB, min(x.shape[0], (block + 1) * ROWS_A_JOB))


# --- the bandwidth ceiling --------------------------------------------------------------------------

def read_everything(buffer: np.ndarray) -> float:
    """Sum of a float32 buffer, read once by every core in parallel: the roofline's bandwidth microbenchmark
    (a read-only stream, as a decode step's weights are)."""
    return float(_read_everything(buffer.reshape(-1)))


@njit(parallel=True, fastmath=FAST, cache=True)
def _read_everything(values):  # pragma: no cover -- compiled
    total = np.float32(0)
    for i in prange(values.shape[0]):  # numba gives each core one contiguous share and adds up the sums
        total += values[i]
    return total
