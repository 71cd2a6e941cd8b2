"""The CPU's features and every tuning constant of the kernels, in one place.

Loaded by `configure()` (numba imported, its settings in place). The features are the host's, unless
$NUMBA_CPU_NAME names another CPU (then those $NUMBA_CPU_FEATURES lists): what numba compiles for.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import binding as llvm

F32 = np.float32
# fastmath without "ninf"/"nnan": reductions may be reordered and fused (vectorised), infinities stay exact.
FAST = {"reassoc", "contract", "arcp", "nsz"}

# --- the CPU -------------------------------------------------------------------------------------------------
CPU_NAME = numba.config.CPU_NAME or llvm.get_host_cpu_name()
FEATURES = (numba.config.CPU_FEATURES or "") if numba.config.CPU_NAME else llvm.get_host_cpu_features().flatten()
AVX512 = "+avx512f" in FEATURES
# AVX-512 VNNI (Intel since Cascade Lake, AMD since Zen 4): vpdpbusd, 64 byte products an instruction.
VNNI = AVX512 and "+avx512vnni" in FEATURES
CACHE_LINE_FLOATS = 16  # a 64-byte line

# --- float32 products (`f32`): a GEMM micro-kernel's register blocking ---------------------------------------
# Rows of x one pass over a matrix takes; a prompt's rows go in pieces of this many, each piece's inputs staying in
# the L2 cache while W streams (lever `row-pieces`).
MAX_KERNEL_ROWS = 64
TILE_LANES = 16 if AVX512 else 8  # floats in a vector
TILE_OUTPUTS = 2 * TILE_LANES  # NR: a tile's outputs, two vectors
TILE_INPUTS = 12 if AVX512 else 6  # MR: 2 x MR accumulators, 24 of AVX-512's 32 registers, 12 of AVX2's 16
K_UNROLL = 4  # the input dimension a multiple of it: the one- and two-row tiles keep 4 and 2 sets of accumulators
# Software prefetch of the few-row tiles: the weights this far ahead into the L1, the next group into the L2. Off on
# AMD's Zen, whose hardware prefetcher follows the one stream; on Intel, whose prefetchers stop at each 4 KiB page,
# on (lever `prefetch-few-rows`).
PREFETCH_FEW_ROWS = not CPU_NAME.startswith("znver")
PREFETCH_NEAR_FLOATS = 256  # 1 KiB

# --- memory (`memory`) ----------------------------------------------------------------------------------------
HUGE_PAGE = 2 << 20
ARENA_CHUNK = 64 << 20  # the kernels' copies are carved from huge-page mappings this big (lever `huge-page-arena`)

# --- GGUF blocks (`blocks`, `block_dot`) ----------------------------------------------------------------------
# Prefetch distances of a block column: into the L2 and into the L1 (lever `block-prefetch-distance`).
PREFETCH_L2_BYTES = 8192
PREFETCH_L1_BYTES = 4 * PREFETCH_NEAR_FLOATS
COLUMN_ACCUMULATORS = 4  # a column's independent partial sums, so no multiply-add waits on the one before
# Activations as 2^e (A + B/256 + C/65536), three 8-bit digits, for VNNI's integer products (lever `vnni-digits`).
DIGITS = 3
DIGIT_SCALES = (1.0, 2.0 ** -8, 2.0 ** -16)

# --- attention (`decode_attention`, `prefill_attention`) -----------------------------------------------------------
MIN_SPLIT_TOKENS = 256  # split-K: the shortest piece of a context one core attends over on its own
DECODE_KEY_BLOCK = TILE_LANES  # a decode block: keys whose scores, softmax step and values go together
PREFETCH_ROWS = DECODE_KEY_BLOCK // 2  # prefetch distance of the key and value rows (lever `attention-prefetch`)
QUERY_PANEL_ROWS = 6 if AVX512 else 3  # FlashAttention's Br: rows × 4 vectors, 24 accumulators (12 with AVX2)
PREFILL_KEY_BLOCK = 4 * TILE_LANES  # FlashAttention's Bc: four vectors of scores a query row
PANELS_PER_JOB = 4  # neighbouring panels one job takes, each key block in turn while it is in L1 (`panels-per-job`)

# --- element-wise work (`pointwise`) -----------------------------------------------------------------------
PARALLEL_ROWS = 64  # rows from which the MLP gate, RoPE and rms_norm split them between the cores
ROWS_PER_JOB = 16  # rows a core takes at once in those three
LOG2_E = 1.442695
# 2^f on [-1/2, 1/2], Cephes' exp2f polynomial, the highest power's coefficient first: `pointwise._exp_parts`
# and `llvm_ir.exp` compute the same exp.
EXP2_POLYNOMIAL = (1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2,
                   2.402264791363012e-1, 6.931472028550421e-1, 1.0)
