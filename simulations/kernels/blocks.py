"""Rows times a matrix kept in a GGUF format (`quantized.QuantizedWeight`), and dequantizing it.

A decode step reads the format's bytes (scales included) and multiplies them in registers, never a float32 copy:
from the kernels' own copy of the matrix (`interleaved_blocks`, on huge pages), the blocks of TILE_LANES rows
interleaved as llama.cpp's CPU backend repacks Q4_0, so that a vector's lanes are output rows (`block_dot`). A
prompt's rows dequantize one tile of output rows at a time into the float32 micro-kernels' layout
(`rows_times_dequantized`). Which kernel serves which format is the table `weight_formats.WEIGHT_FORMATS`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .block_dot import block_sums, f16_dot, q4_0_dot, q4_1_dot, q8_0_dot, row_digits
from .f32 import _rows_times_weight, rows_times_tiles
from .memory import IdentityCache, arena_array, scratch_tiles
from .tuning import F32, FAST, K_UNROLL, TILE_LANES, TILE_OUTPUTS, VNNI
from .weight_formats import BLOCK, WEIGHT_FORMATS


def rows_times_blocks(x: np.ndarray, w) -> np.ndarray:
    """x @ W.T for x (rows, in) float32 and a `quantized.QuantizedWeight` W: every block read once for all rows."""
    x = np.ascontiguousarray(x, dtype=F32)
    if w.format == "f16" and w.shape[1] % BLOCK:  # rows of halves not taken 32 at a time: a loop of their own
        y = np.empty((x.shape[0], w.shape[0]), dtype=F32)
        _rows_times_f16(x, w.data.view(np.uint16), y)
        return y
    groups = interleaved_blocks(w)
    y = np.empty((x.shape[0], groups.shape[0] * TILE_LANES), dtype=F32)
    globals()[WEIGHT_FORMATS[w.format].group](x, groups, y)
    return y if y.shape[1] == w.shape[0] else np.ascontiguousarray(y[:, :w.shape[0]])


def rows_times_dequantized(x: np.ndarray, w, start: int, stop: int) -> np.ndarray:
    """x @ W[start:stop].T for a many-row product (a prompt's): output rows start..stop dequantized straight into
    the float32 micro-kernels' tiles, in this thread's scratch (a model in a GGUF format keeps no float32 copy),
    then their product; rows that do not fill the tiles go to the row kernel as plain rows."""
    x = np.ascontiguousarray(x, dtype=F32)
    y = np.empty((x.shape[0], stop - start), dtype=F32)
    if _fills_tiles(w, start, stop):
        rows_times_tiles(x, dequantize(w, start, stop, "product"), y)
    else:
        _rows_times_weight(x, dequantize(w, start, stop, "product"), y)
    return y


def dequantize(w, start: int, stop: int, layout: str = "rows", out: np.ndarray | None = None) -> np.ndarray:
    """Output rows start..stop of a QuantizedWeight as float32, in parallel; the values of `w.dequantize(slice(start,
    stop))` (gguf.quants), laid out as:

    - "rows": (stop - start, in);
    - "tiles": the float32 micro-kernels' packed layout (`f32.weight_tiles`), ((stop - start) / T, T · in), in one
      pass (lever `dequantize-into-tiles`), into `out` if given;
    - "product": what `rows_times_dequantized` multiplies: tiles in this thread's scratch (valid until its next
      call) when the rows fill them, else rows (what `formats` times as dequantizing)."""
    if layout == "product":
        if not _fills_tiles(w, start, stop):
            return dequantize(w, start, stop, "rows")
        shape = ((stop - start) // TILE_OUTPUTS, TILE_OUTPUTS * w.shape[1])
        return dequantize(w, start, stop, "tiles", out=scratch_tiles(shape))
    tiles = layout == "tiles"
    if not tiles and layout != "rows":
        raise ValueError(f"dequantize layout {layout!r}: allowed values are rows, tiles, product")
    if out is None:
        shape = ((stop - start) // TILE_OUTPUTS, TILE_OUTPUTS * w.shape[1]) if tiles else (stop - start, w.shape[1])
        out = np.empty(shape, dtype=F32)
    globals()[WEIGHT_FORMATS[w.format].dequantize](w, start, stop, out, tiles)
    return out


def _fills_tiles(w, start: int, stop: int) -> bool:
    return (stop - start) % TILE_OUTPUTS == 0 and w.shape[1] % K_UNROLL == 0


# --- the kernels' copy: blocks of TILE_LANES rows interleaved -------------------------------------------------------
_interleaved = IdentityCache()


def interleaved_blocks(w) -> np.ndarray:
    """A QuantizedWeight in groups of L = TILE_LANES rows (the last filled with zero rows, scales 0): per group,
    block column after block column, the L rows' f16 scales d (2L bytes), for Q4_1 their f16 minimums m (2L bytes),
    then their quants, byte i of every row's block together (L bytes, for each of the block's 32 or 16 quant
    bytes; with VNNI, bytes 4j..4j+3 of every row's block together, 4L bytes for each j); F16's column k of 32
    holds the L rows' halves at column k (2L bytes). The same bytes as GGUF's rows, in another order: uint8
    (groups, blocks · column bytes); made once, kept while w lives."""
    groups = _interleaved.get(w)
    if groups is None:
        fmt = WEIGHT_FORMATS[w.format]
        blocks = w.blocks
        out, n_blocks, block_bytes = blocks.shape
        n_groups = -(-out // TILE_LANES)
        padded = blocks
        if out < n_groups * TILE_LANES:  # zero rows fill the last group
            padded = np.zeros((n_groups * TILE_LANES, n_blocks, block_bytes), dtype=np.uint8)
            padded[:out] = blocks
        groups = arena_array((n_groups, n_blocks * block_bytes * TILE_LANES), np.uint8)
        columns = groups.reshape(n_groups, n_blocks, -1)
        if not fmt.scales:  # F16: a block's 32 halves, column k's of every row together
            by_half = padded.view(np.uint16).reshape(n_groups, TILE_LANES, n_blocks, BLOCK).transpose(0, 2, 3, 1)
            columns.view(np.uint16)[:] = by_half.reshape(n_groups, n_blocks, -1)
        else:
            by_byte = padded.reshape(n_groups, TILE_LANES, n_blocks, block_bytes).transpose(0, 2, 3, 1)  # g, kb, byte, row
            halves = 2 * len(fmt.scales)
            scales = by_byte[:, :, :halves].reshape(n_groups, n_blocks, halves // 2, 2, TILE_LANES).transpose(0, 1, 2, 4, 3)
            quants = by_byte[:, :, halves:]  # g, kb, byte, row
            if VNNI:  # g, kb, run of 4 bytes, row, byte of the run
                quants = quants.reshape(n_groups, n_blocks, -1, 4, TILE_LANES).transpose(0, 1, 2, 4, 3)
            np.concatenate([scales.reshape(n_groups, n_blocks, -1), quants.reshape(n_groups, n_blocks, -1)],
                           axis=2, out=columns)
        groups.flags.writeable = False
        _interleaved.put(w, groups)
    return groups


# --- a few rows times the groups: the formats' `group` kernels --------------------------------------------------------
@njit(parallel=True, cache=True)
def rows_times_f16_groups(x, groups, y):  # pragma: no cover -- compiled
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            f16_dot(groups, g, x, b, x, x, x, x, y)  # no block sums, no digits: x, unread


@njit(parallel=True, cache=True)
def rows_times_q8_0_groups(x, groups, y):  # pragma: no cover -- compiled
    digits, x_scales, corrections = row_digits(x, x.shape[1] // 32)
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            q8_0_dot(groups, g, x, b, x, digits, x_scales, corrections, y)  # no block sums: x, unread


@njit(parallel=True, cache=True)
def rows_times_q4_0_groups(x, groups, y):  # pragma: no cover -- compiled
    x_sums = block_sums(x, x.shape[1] // 32)
    digits, x_scales, corrections = row_digits(x, x.shape[1] // 32)
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            q4_0_dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y)


@njit(parallel=True, cache=True)
def rows_times_q4_1_groups(x, groups, y):  # pragma: no cover -- compiled
    x_sums = block_sums(x, x.shape[1] // 32)
    digits, x_scales, corrections = row_digits(x, x.shape[1] // 32)
    for g in prange(groups.shape[0]):
        for b in range(x.shape[0]):
            q4_1_dot(groups, g, x, b, x_sums, digits, x_scales, corrections, y)


@njit(inline="always")
def _half(bits):  # pragma: no cover -- compiled
    # An IEEE half (its uint16 bits) to float32 without branches, so loops over it vectorise: exponent and mantissa
    # moved to single precision's places, then scaled by 2^112 (the bias difference), which also gets subnormals
    # right. Weights hold no infinities or NaNs (quantized.quantize refuses them), the one case this would not convert.
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


# --- dequantizing: the formats' `dequantize` kernels (rows, or the float32 micro-kernels' tiles) --------------------
def dequantize_f16(w, start: int, stop: int, out: np.ndarray, tiles: bool) -> None:
    (_halves_to_tiles if tiles else _halves_to_rows)(w.data[start:stop].view(np.uint16), out)


def dequantize_q8_0(w, start: int, stop: int, out: np.ndarray, tiles: bool) -> None:
    blocks = w.blocks[start:stop]
    (_q8_0_to_tiles if tiles else _q8_0_to_rows)(blocks, blocks.view(np.int8), out)


def dequantize_q4_0(w, start: int, stop: int, out: np.ndarray, tiles: bool) -> None:
    (_q4_to_tiles if tiles else _q4_to_rows)(w.blocks[start:stop], False, out)


def dequantize_q4_1(w, start: int, stop: int, out: np.ndarray, tiles: bool) -> None:
    (_q4_to_tiles if tiles else _q4_to_rows)(w.blocks[start:stop], True, out)


@njit(parallel=True, cache=True)
def _halves_to_rows(bits, out):  # pragma: no cover -- compiled
    # F16 converted here rather than by numpy: several times faster (lever `f16-conversion`)
    for r in prange(bits.shape[0]):
        for k in range(bits.shape[1]):
            out[r, k] = _half(bits[r, k])


@njit(parallel=True, cache=True)
def _q8_0_to_rows(blocks, signed, out):  # pragma: no cover -- compiled
    for r in prange(blocks.shape[0]):
        for kb in range(blocks.shape[1]):
            d = _block_half(blocks, r, kb, 0)
            for j in range(32):
                out[r, kb * 32 + j] = F32(signed[r, kb, 2 + j]) * d


@njit(parallel=True, cache=True)
def _q4_to_rows(blocks, with_min, out):  # pragma: no cover -- compiled
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


# Tiles: row o's column k at TILE_OUTPUTS k + o, written column by column, the group's rows innermost, so that each
# column's stores are one run (each row's scale, and Q4_1's minimum, converted once a block into a small table first).
@njit(parallel=True, cache=True)
def _halves_to_tiles(bits, tiles):  # pragma: no cover -- compiled; tested through dequantize
    for g in prange(tiles.shape[0]):
        for k in range(bits.shape[1]):
            for o in range(TILE_OUTPUTS):
                tiles[g, TILE_OUTPUTS * k + o] = _half(bits[g * TILE_OUTPUTS + o, k])


@njit(parallel=True, cache=True)
def _q8_0_to_tiles(blocks, signed, tiles):  # pragma: no cover -- compiled; tested through dequantize
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
def _q4_to_tiles(blocks, with_min, tiles):  # pragma: no cover -- compiled; tested through dequantize
    quants = 4 if with_min else 2
    for g in prange(tiles.shape[0]):
        first = g * TILE_OUTPUTS
        scales = np.empty(TILE_OUTPUTS, dtype=F32)
        offsets = np.empty(TILE_OUTPUTS, dtype=F32)  # as _q4_to_rows: d q + m, or d q - 8 d
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
