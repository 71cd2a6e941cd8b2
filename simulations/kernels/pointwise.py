"""Element-wise work: rms_norm, RoPE, the MLP gate (SwiGLU) and softmax's exp; and the read stream of the roofline.

Each is one compiled pass where numpy takes several calls of 10-30 µs overhead each, and exp is a vectorised
polynomial where numpy's float32 exp is several times slower (lever `compiled-elementwise`). A prompt's rows (from
PARALLEL_ROWS) are split between the cores, each parallel loop calling the function that does a range of rows:
bodies inlined in each loop compiled again and lengthened the cold compile (lever `parallel-rows`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .tuning import EXP2_POLYNOMIAL, F32, FAST, LOG2_E, PARALLEL_ROWS, ROWS_PER_JOB


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
    # an int64, and AVX2 converts no int64 vector to float.
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
    """row[:] = exp(row - shift), in place, and returns their sum; `powers` is int32 scratch at least as long. Two
    indexed passes (see _exp_parts): iterating `for value in row`, or storing a tuple at once, stayed scalar."""
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
    # The rows' maxima by numpy, whose loop is vectorised: numba's max() of floats waits on each comparison.
    tops = x.max(axis=-1)
    sums = np.empty(x.shape[:-1] + (1,), dtype=F32)
    _softmax_numerators(x.reshape(-1, x.shape[-1]), tops.reshape(-1), sums.reshape(-1))
    return sums


@njit(fastmath=FAST, nogil=True, cache=True)
def _softmax_numerators(x, tops, sums):  # pragma: no cover -- compiled; tested through softmax_numerators
    # Two passes over a row after the maximum's (exp's two factors; their product and its sum).
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


# error_model="numpy": numba's default checks every float division for a zero divisor (to raise
# ZeroDivisionError), and a loop with that branch is not vectorised. Here the divisor is 1 + exp(-x) >= 1.
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


@njit(parallel=True, cache=True)
def _silu_gate_in_parallel(gate_up, out):  # pragma: no cover -- compiled; tested through silu_gate
    for block in prange(-(-out.shape[0] // ROWS_PER_JOB)):
        _silu_gate_rows(gate_up, out, block * ROWS_PER_JOB, min(out.shape[0], (block + 1) * ROWS_PER_JOB))


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
    # One loop for each layout, so that each is vectorised: one loop choosing between them pair by pair stays scalar.
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


@njit(parallel=True, cache=True)
def _rms_norm_in_parallel(x, weight, eps, out):  # pragma: no cover -- compiled; tested through rms_norm
    for block in prange(-(-x.shape[0] // ROWS_PER_JOB)):
        _rms_norm_rows(x, weight, eps, out, block * ROWS_PER_JOB, min(x.shape[0], (block + 1) * ROWS_PER_JOB))


@njit(parallel=True, cache=True)
def _rope_in_parallel(x, cos, sin, interleaved, out):  # pragma: no cover -- compiled; tested through rope
    for block in prange(-(-x.shape[0] // ROWS_PER_JOB)):
        _rope_rows(x, cos, sin, interleaved, out, block * ROWS_PER_JOB, min(x.shape[0], (block + 1) * ROWS_PER_JOB))


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
