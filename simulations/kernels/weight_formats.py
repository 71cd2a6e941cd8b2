"""The weight formats, one entry each, as ggml's `type_traits` tables them: what a block holds and which kernels read it.

Everything that depends on a format reads it here: `quantized` (the bytes a matrix takes, checking data),
`formats` (holding a GGUF file's bytes), and the kernels (`blocks`: the interleaved copy, the decode dot
products, dequantizing). Defining only: no numba here, so importing the table costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

BLOCK = 32  # weights per block in every block format here (GGUF's QK8_0, QK4_0, QK4_1)


@dataclass(frozen=True)
class WeightFormat:
    """One format. The kernel fields name functions of `simulations.kernels.blocks` (loaded with numba on first
    use), so that the table itself stays importable without compiling anything."""

    name: str  # llama.cpp's type name, in lower case
    block_weights: int  # weights a block holds (1 for the float formats)
    block_bytes: int  # bytes a block takes in GGUF's layout
    storage: str  # the numpy dtype a matrix's data is held in: rows of weights, or rows of blocks' bytes
    scales: tuple[str, ...]  # the f16 values a block begins with: the scale d, and Q4_1's minimum m
    quant_bits: int  # bits of one weight after the scales (the float formats: the weight itself)
    quant_offset: int  # added to a quant before its scale: Q4_0's weight = d · (q − 8)
    quants: str  # how the quants lie in a block
    weight: str  # what a weight is, from its block
    dequantize: str | None = None  # rows start..stop as float32, as rows or as the float32 kernel's tiles
    dot: str | None = None  # the decode micro-kernel: one column of interleaved blocks times one row of x
    group: str | None = None  # a few rows of x times the whole matrix, parallel over groups of rows

    @property
    def bytes_per_weight(self) -> float:
        return self.block_bytes / self.block_weights

    @property
    def is_block_format(self) -> bool:
        return self.block_weights > 1

    @property
    def column_quant_bytes(self) -> int:
        """Bytes of BLOCK weights' quants: what one row contributes to a column of the kernels' interleaved copy."""
        return BLOCK * self.quant_bits // 8


WEIGHT_FORMATS: dict[str, WeightFormat] = {f.name: f for f in (
    WeightFormat("f32", 1, 4, "float32", (), 32, 0, "IEEE single", "the float itself"),
    WeightFormat("f16", 1, 2, "float16", (), 16, 0, "IEEE half", "the half itself",
                 dequantize="dequantize_f16", dot="f16_dot", group="rows_times_f16_groups"),
    WeightFormat("q8_0", BLOCK, 34, "uint8", ("d",), 8, 0, "32 int8", "d·q",
                 dequantize="dequantize_q8_0", dot="q8_0_dot", group="rows_times_q8_0_groups"),
    WeightFormat("q4_0", BLOCK, 18, "uint8", ("d",), 4, -8,
                 "16 bytes: byte j holds weight j in its low nibble, weight j + 16 in its high one", "d·(q − 8)",
                 dequantize="dequantize_q4_0", dot="q4_0_dot", group="rows_times_q4_0_groups"),
    WeightFormat("q4_1", BLOCK, 20, "uint8", ("d", "m"), 4, 0,
                 "16 bytes: byte j holds weight j in its low nibble, weight j + 16 in its high one", "d·q + m",
                 dequantize="dequantize_q4_1", dot="q4_1_dot", group="rows_times_q4_1_groups"),
)}
