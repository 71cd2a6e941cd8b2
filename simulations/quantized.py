"""A weight matrix kept in one of GGUF's formats, as llama.cpp stores it: fewer bytes per weight.

- F16: IEEE half floats, 2 bytes a weight.
- Q8_0: blocks of 32 weights along a row: one f16 scale d, then 32 int8 q; weight = d·q (34 bytes / 32).
- Q4_0: blocks of 32: one f16 scale d, then 16 bytes of nibbles; weight = d·(q − 8) (18 bytes / 32).
- Q4_1: blocks of 32: f16 scale d and f16 minimum m, then 16 bytes of nibbles; weight = d·q + m (20 bytes / 32).
  In a block's 16 bytes, byte j holds weight j in its low nibble and weight j + 16 in its high one.

The blocks stay as stored (one uint8 row of blocks per output row, the layout of a GGUF tensor's data);
nothing here keeps a float32 copy. `model.linear` sends a few rows to the compiled kernels
(`kernels.rows_times_blocks`), which read these bytes (regrouped once, `kernels.interleaved_blocks`)
and multiply them in registers (as integers where the CPU has AVX-512 VNNI), so a decode step reads these bytes and
no more; many rows (prefill) are multiplied one dequantized tile of output rows at a time, by the float32 kernel
(BLAS on the numpy path). The reference every kernel is tested against is `gguf.quants` (llama.cpp's own Python
(de)quantization), which `dequantize` calls on the numpy path.
"""

from __future__ import annotations

import functools

import numpy as np

from .errors import WeightFormatError
from .kernels.weight_formats import BLOCK, WEIGHT_FORMATS, WeightFormat

__all__ = ["BLOCK", "BLOCK_BYTES", "BYTES_PER_WEIGHT", "FORMATS", "WEIGHT_FORMATS", "QuantizedWeight", "WeightFormat",
           "check_format", "ggml_type", "output_tiles", "quantize"]

F32 = np.float32
# Bytes of one block of each block format, as GGUF lays them out, and a weight's bytes in each format (the table's).
BLOCK_BYTES = {f.name: f.block_bytes for f in WEIGHT_FORMATS.values() if f.is_block_format}
BYTES_PER_WEIGHT = {f.name: f.bytes_per_weight for f in WEIGHT_FORMATS.values()}
FORMATS = tuple(WEIGHT_FORMATS)  # every format a weight can be held in, llama.cpp's names in lower case
# Output rows dequantized at once for a many-row product: at most 9.4 MB of float32 here (the LM head's tiles), and
# most layer matrices in one tile; smaller tiles make smaller, slower BLAS products (lever `dequantize-tile-rows`).
TILE_ROWS = 4096


def output_tiles(rows: int) -> list[tuple[int, int]]:
    """The (start, stop) output rows a many-row product dequantizes at a time: TILE_ROWS each, the last shorter."""
    return [(start, min(start + TILE_ROWS, rows)) for start in range(0, rows, TILE_ROWS)]


def ggml_type(name: str):
    """The gguf package's GGMLQuantizationType of a format name ("q8_0" -> Q8_0)."""
    from gguf import GGMLQuantizationType

    return GGMLQuantizationType[name.upper()]


def check_format(name: str) -> str:
    if name not in FORMATS:
        raise WeightFormatError(f"weight format {name!r} is not supported — allowed: {', '.join(FORMATS)}")
    return name


class QuantizedWeight:
    """A (out, in) weight matrix held in `format` ("f16", "q8_0", "q4_0" or "q4_1"), y = x @ W.T as for a
    float32 matrix. `data`: float16 (out, in) for F16, else uint8 (out, in / 32 · block bytes), GGUF's rows."""

    def __init__(self, fmt: str, shape: tuple[int, int], data: np.ndarray) -> None:
        fmt = check_format(fmt)
        if fmt == "f32":
            raise WeightFormatError("a float32 matrix is a plain numpy array, not a QuantizedWeight")
        out, n_in = shape
        entry, dtype = WEIGHT_FORMATS[fmt], np.dtype(WEIGHT_FORMATS[fmt].storage)
        if not entry.is_block_format:
            expected = (out, n_in)
        else:
            if n_in % BLOCK:
                raise WeightFormatError(f"{fmt.upper()} stores rows in blocks of {BLOCK} weights (as GGUF does): "
                                 f"the input dimension must be a multiple of {BLOCK}, got {n_in}")
            expected = (out, n_in // BLOCK * entry.block_bytes)
        if data.shape != expected or data.dtype != dtype:
            raise WeightFormatError(f"{fmt.upper()} data for a {out}×{n_in} matrix must be {np.dtype(dtype).name} "
                             f"{expected}, got {data.dtype.name} {data.shape}")
        self.format, self.shape, self.data = fmt, (int(out), int(n_in)), data

    def __repr__(self) -> str:
        return f"QuantizedWeight({self.format!r}, {self.shape})"

    @property
    def dtype(self):  # what a float32 matrix's dtype answers: the numbers it gives are float32
        return np.dtype(F32)

    @property
    def nbytes(self) -> int:
        """The bytes held, block scales included: what a pass that reads every weight reads."""
        return int(self.data.nbytes)

    @property
    def bytes_per_weight(self) -> float:
        return self.nbytes / (self.shape[0] * self.shape[1])

    @functools.cached_property
    def blocks(self) -> np.ndarray:
        """The rows as (out, in / 32, block bytes) uint8, a view: GGUF's blocks, or F16's weights 32 halves (64 bytes)
        a block when a row holds a whole number of them (the decode kernels read F16 so). Made once: a decode step
        asks each of its 121 matrices for it (lever `cached-blocks-view`)."""
        if self.format == "f16":
            return np.ascontiguousarray(self.data).view(np.uint8).reshape(self.shape[0], -1, 2 * BLOCK)
        return self.data.reshape(self.shape[0], -1, BLOCK_BYTES[self.format])

    def dequantize(self, rows: slice | np.ndarray = slice(None)) -> np.ndarray:
        """float32 (n, in) of the given output rows, by llama.cpp's reference (`gguf.quants.dequantize`)."""
        from gguf.quants import dequantize

        return np.asarray(dequantize(np.ascontiguousarray(self.data[rows]), ggml_type(self.format)), dtype=F32)

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """Rows `ids` as float32: an embedding lookup in a quantized table."""
        return self.dequantize(np.asarray(ids, dtype=np.int64))


def quantize(matrix: np.ndarray, fmt: str) -> QuantizedWeight:
    """A float32 (out, in) matrix in `fmt`, by llama.cpp's reference quantization (`gguf.quants.quantize`)."""
    from gguf.quants import quantize as reference

    fmt = check_format(fmt)
    matrix = np.ascontiguousarray(matrix, dtype=F32)
    if fmt == "f16":
        biggest, limit = float(np.abs(matrix).max(initial=0)), float(np.finfo(np.float16).max)
        if not np.isfinite(biggest) or biggest > limit:
            raise WeightFormatError(f"F16 holds magnitudes up to {limit:g}; this matrix has {biggest:g}")
    if fmt != "f16" and matrix.shape[1] % BLOCK:
        QuantizedWeight(fmt, matrix.shape, np.empty((0,), np.uint8))  # raises the clear block-size error
    return QuantizedWeight(fmt, matrix.shape, reference(matrix, ggml_type(fmt)))
