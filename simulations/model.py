"""A Llama/Qwen2 decoder in numpy float32, written to be read.

The ways to run it are named after what they are, and all are one function, ``forward``:

- ``prefill``: all prompt tokens in one batched pass; fills the KV cache.
- ``decode_step``: one new token; reads the KV cache, appends one row to it.
- ``forward_without_cache``: the picoGPT-style baseline that recomputes every position for every
  new token. It exists so the article can measure what the KV cache saves.
- ``decode_batch`` and ``mixed_step``: what a serving engine runs, many sequences (a KV cache each) in
  one pass that reads the weights once; ``mixed_step`` adds a chunk of another prompt (chunked prefill).

Decode's two hot spots — a few rows times a weight matrix, and one new token attending over its cache —
run as compiled kernels (``kernels.py``) behind ``linear`` and the decode attention here, as an inference
engine's would: numpy's BLAS re-packs a whole weight matrix for every product of a few rows. So do a
decode step's norms and RoPE, and the exp of every softmax and MLP gate (numpy's float32 exp took three
times the kernel's on the build machine). The numpy code below is the definition and, with PD_KERNELS=numpy,
the path that runs; the tests check every kernel against it.

Everything stays float32: numpy 2 promotes float32 arrays combined with a float64 scalar
(``1 / np.sqrt(d)``) to float64, which silently doubles the bytes and costs 10-20x in speed.

Nothing here counts or times anything. Each way to run the model takes an optional ``observer``
(see ``Observer``): the matrix products and attention report what they are given, so a test can
count them and a recording can keep decode's attention weights. What a pass costs is stated once,
as closed forms, in ``cost.py``; timing is the generation loop's job (``generate.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import kernels, kv_memory, parallel
from .config import ModelConfig
from .cost import FLOAT32_BYTES
from .parallel import for_each, for_row_blocks, usable_cores
from .quantized import QuantizedWeight, output_tiles

F32 = np.float32
# Largest attention score block (bytes) built at once: prefill processes queries in chunks so a
# 4096-token prompt never materialises a (heads x 4096 x 4096) matrix.
ATTENTION_BLOCK_BYTES = 4 * 2**20  # measured best here: the score block stays in L2/L3 between passes
MAX_QUERY_BLOCK = 256  # smaller blocks waste less of the masked upper triangle
VECTOR_ROWS = 4  # up to this many rows, linear() runs one matrix-vector product per row (see there)


@dataclass
class LayerWeights:
    """One transformer block. Matrices are (out, in) as in PyTorch/GGUF, so y = x @ W.T, stored
    row-major (`weight_matrix`), or kept in a GGUF format (`quantized.QuantizedWeight`, `convert.convert`)."""

    attn_norm: np.ndarray  # (d,)
    wqkv: np.ndarray  # (q_dim + 2 kv_dim, d): Q, K and V stacked so one matmul reads them
    bqkv: np.ndarray | None  # (q_dim + 2 kv_dim,) Qwen2 only
    wo: np.ndarray  # (d, q_dim)
    mlp_norm: np.ndarray  # (d,)
    w_gate_up: np.ndarray  # (2 d_ff, d): gate and up stacked
    w_down: np.ndarray  # (d, d_ff)


@dataclass
class Weights:
    token_embedding: np.ndarray  # (vocab, d)
    layers: list[LayerWeights]
    final_norm: np.ndarray  # (d,)
    lm_head: np.ndarray  # (vocab, d); the very same array as token_embedding when tied


class KVCache:
    """Keys and values of every processed token, preallocated; appending is O(1).

    Layout (layers, kv_heads, max_tokens, head_dim): one head's keys are contiguous, so attention
    reads them as a plain matrix. ``length`` counts the tokens written so far.
    """

    def __init__(self, k: np.ndarray, v: np.ndarray, block: tuple[np.ndarray, np.ndarray, int] | None = None) -> None:
        self.k = k
        self.v = v
        self.length = 0
        # (keys, values, slot): the block (layers, slots, kv_heads, max_tokens, hd) this cache is slot `slot`
        # of (see `batch`); a cache made alone is the one slot of its own block.
        self.block = block or (k[:, None], v[:, None], 0)

    @classmethod
    def empty(cls, config: ModelConfig, max_tokens: int) -> KVCache:
        shape = (config.n_layers, config.n_kv_heads, max_tokens, config.head_dim)
        # Memory an earlier cache used, when one's is free (kv_memory: as a server keeps its KV memory, so the
        # prefill does not wait for new pages); new memory is committed by the OS only as it is written.
        return cls(kv_memory.empty(shape), kv_memory.empty(shape))

    @classmethod
    def batch(cls, config: ModelConfig, users: int, max_tokens: int) -> list[KVCache]:
        """One cache per user, all slots of one block (layers, users, kv_heads, max_tokens, hd).

        Each user's cache is still its own: its slot, its length. Being neighbours in one array lets
        `forward` attend for a run of decode rows with one product per step of attention, instead of one
        per user, as a serving engine's paged KV cache lets one kernel attend for the whole batch.
        np.zeros, not np.empty: a slot's unused rows are masked, and must hold no NaN that 0 * NaN
        would spread (zero pages are committed only when written, too).
        """
        shape = (config.n_layers, users, config.n_kv_heads, max_tokens, config.head_dim)
        k, v = np.zeros(shape, dtype=F32), np.zeros(shape, dtype=F32)
        return [cls(k[:, user], v[:, user], (k, v, user)) for user in range(users)]

    @property
    def max_tokens(self) -> int:
        return self.k.shape[2]

    @property
    def bytes_per_token(self) -> int:
        """What one token's K and V rows, every layer and KV head, occupy here."""
        return self.k[:, :, 0].nbytes + self.v[:, :, 0].nbytes

    @property
    def nbytes(self) -> int:
        """Bytes of K and V held for the cached tokens."""
        return self.length * self.bytes_per_token

    def write(self, layer: int, k_new: np.ndarray, v_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Store (T, kv_heads, hd) new keys/values after `length`; return views of all keys/values."""
        start, end = self.length, self.length + k_new.shape[0]
        if end > self.max_tokens:
            raise ValueError(f"KV cache full: {end} tokens > capacity {self.max_tokens}")
        self.k[layer, :, start:end] = k_new.transpose(1, 0, 2)
        self.v[layer, :, start:end] = v_new.transpose(1, 0, 2)
        return self.k[layer, :, :end], self.v[layer, :, :end]  # (kv_heads, end, hd)

    def advance(self, n_tokens: int) -> None:
        """Called once per forward pass, after every layer has written its rows."""
        self.length += n_tokens


class Observer:
    """Watches a pass without changing it; every method here does nothing. Subclass what you need.

    The model calls these from the main thread where the work happens. Arrays passed are the
    model's own: read them, never write them.
    """

    def matmul(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> None:
        """x (T, in) is multiplied by the weight matrix w (out, in), and the bias b added if any."""

    def attention(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
        """Queries q (Tq, heads, hd), the last Tq positions, attend causally over k, v (kv_heads, Lk, hd)."""


NO_OBSERVER = Observer()


def weight_matrix(matrix: np.ndarray) -> np.ndarray:
    """A weight matrix as the model keeps it: (out, in), row-major, so each output's weights are one run of
    memory, the order the decode kernel streams (`kernels.rows_times_weight`); prefill's BLAS products run
    as fast either way. Only speed depends on it: every function here takes either layout."""
    return np.ascontiguousarray(matrix, dtype=F32)


# --- primitives -----------------------------------------------------------------------------

def embed(table: np.ndarray | QuantizedWeight, token_ids: np.ndarray) -> np.ndarray:
    if isinstance(table, QuantizedWeight):  # a table kept in a GGUF format: dequantize the rows looked up
        return table.rows(token_ids)
    return table[token_ids]  # (T, d)


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    if kernels.elementwise(x):  # one compiled pass a row (kernels.rms_norm)
        return kernels.rms_norm(x, weight, eps)
    mean_square = np.einsum("td,td->t", x, x)[:, None] / F32(x.shape[-1])  # (T, 1)
    return x * (weight / np.sqrt(mean_square + F32(eps)))


def linear(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, observer: Observer = NO_OBSERVER
) -> np.ndarray:
    """y = x @ W.T (+ b). The compiled kernel takes float32 matrices: a decode step's rows (one user's, a
    batch's, the LM head's) in one pass that reads each weight once for all of them, a prompt's rows in pieces
    of MAX_KERNEL_ROWS (`kernels.rows_times_weight`). Other matrices, and the numpy path, go to BLAS
    (`blas_product`)."""
    observer.matmul(x, w, b)
    if isinstance(w, QuantizedWeight):
        y = quantized_linear(x, w)
    elif kernels.streams(x, w):
        y = kernels.rows_times_weight(x, w)
    else:  # as a plain array: a memory-mapped file's slices would run np.memmap's Python hook each time
        y = blas_product(x, w.view(np.ndarray))
    if b is not None:
        y += b
    return y


def blas_product(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ W.T by numpy's BLAS. Many rows (prefill) split into one block of token rows per core; fewer go to
    BLAS whole, on its own threads. Up to VECTOR_ROWS rows are one matrix-vector product each, every one
    streaming W: a layer's matrix, a few MB, stays in the L3 cache from the first row to the last, and
    OpenBLAS runs two such products faster than its matrix product of two rows."""
    y = np.empty((x.shape[0], w.shape[0]), dtype=F32)
    if x.shape[0] >= 2 * parallel.MIN_ROWS_PER_BLOCK:  # read at call time: tests change it
        for_row_blocks(lambda rows: np.matmul(x[rows], w.T, out=y[rows]), x.shape[0])
    elif x.shape[0] <= VECTOR_ROWS:
        for row in range(x.shape[0]):
            np.matmul(w, x[row], out=y[row])
    else:
        np.matmul(x, w.T, out=y)
    return y


def quantized_linear(x: np.ndarray, w: QuantizedWeight) -> np.ndarray:
    """x @ W.T for a matrix kept in a GGUF format (`quantized.py`). A few rows go to the compiled kernel,
    which reads the format's bytes and multiplies them in registers, as integers where the CPU has AVX-512 VNNI
    (decode reads no more than them); many rows (prefill) multiply one tile of dequantized output rows at a time
    (`quantized.output_tiles`), by the float32 kernel (`kernels.rows_times_dequantized`), as F32's prefill does.
    The numpy path dequantizes tiles with llama.cpp's reference (`gguf.quants`) for BLAS."""
    if kernels.enabled() and x.shape[0] <= kernels.MAX_KERNEL_ROWS:
        return kernels.rows_times_blocks(x, w)

    def product(start: int, stop: int) -> np.ndarray:
        if kernels.enabled():
            return kernels.rows_times_dequantized(x, w, start, stop)
        return blas_product(x, w.dequantize(slice(start, stop)))

    tiles = output_tiles(w.shape[0])
    if len(tiles) == 1:  # one tile: its product is the result
        return product(*tiles[0])
    y = np.empty((x.shape[0], w.shape[0]), dtype=F32)
    for start, stop in tiles:
        y[:, start:stop] = product(start, stop)
    return y


def silu(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x), with sigmoid(x) = (1 + tanh(x/2)) / 2: no overflow warnings, stays float32."""
    sigmoid = np.tanh(F32(0.5) * x)
    sigmoid += F32(1)  # in place: prefill's (T, d_ff) temporaries are megabytes each
    sigmoid *= F32(0.5)
    return x * sigmoid


def rope_angles(positions: np.ndarray, head_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of position * theta^(-2i/hd), shaped (T, 1, hd/2); computed once per pass."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = positions[:, None].astype(np.float64) * inv_freq[None, :]
    return np.cos(angles).astype(F32)[:, None, :], np.sin(angles).astype(F32)[:, None, :]


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, style: str) -> np.ndarray:
    """Rotate (T, heads, hd) query/key vectors by their positions (rotary position embedding)."""
    hd = x.shape[-1]
    if style in ("interleaved", "half") and kernels.elementwise(x):  # one compiled pass (kernels.rope)
        return kernels.rope(x, cos, sin, style == "interleaved")
    if style == "interleaved":  # pairs (0,1), (2,3), ...
        first, second = np.s_[..., 0::2], np.s_[..., 1::2]
    elif style == "half":  # pairs (i, i + hd/2), the NeoX / Hugging Face layout
        first, second = np.s_[..., : hd // 2], np.s_[..., hd // 2 :]
    else:
        raise ValueError(f"unknown rope style {style!r}")
    out = np.empty_like(x)

    def rotate(rows: slice) -> None:  # each pair (a, b) -> (a cos - b sin, a sin + b cos)
        a, b, c, s = x[rows][first], x[rows][second], cos[rows], sin[rows]
        out[rows][first] = a * c - b * s
        out[rows][second] = a * s + b * c

    for_row_blocks(rotate, x.shape[0])  # every token rotates on its own: rows split across cores
    return out


def attention_scores(q: np.ndarray, k: np.ndarray, first_position: int) -> np.ndarray:
    """q k^T / sqrt(hd) with the causal mask (-inf where a key lies after its query).

    q: (kv_heads, rep, Tq, hd), the query heads grouped by the KV head they share (GQA).
    k: (kv_heads, Lk, hd). Query t sits at absolute position first_position + t and may attend to
    keys 0..first_position + t. Returns (kv_heads, rep, Tq, Lk).
    """
    n_kv, rep, tq, hd = q.shape
    q = q * F32(1.0 / np.sqrt(hd))  # scale the small operand, not the big score matrix
    if tq == 1:  # decode: K @ q, one matrix-vector product per head (BLAS is ~4x faster this way round)
        scores = np.matmul(k[:, None], q.reshape(n_kv, rep, hd, 1)).reshape(n_kv, rep, 1, k.shape[1])
    else:
        scores = np.matmul(q.reshape(n_kv, rep * tq, hd), k.transpose(0, 2, 1)).reshape(n_kv, rep, tq, k.shape[1])
    if k.shape[1] - 1 > first_position:  # keys after the first query: mask the future
        tail = scores[..., first_position:]  # only the last Tq columns can be in the future
        allowed = np.arange(tail.shape[-1])[None, :] <= np.arange(tq)[:, None]
        tail += np.where(allowed, F32(0), F32(-np.inf))  # (Tq, Tq) broadcast over heads
    return scores


def softmax_numerators(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(scores − each row's maximum), in place, and each row's sum (…, 1): softmax(scores) is the one divided
    by the other, and attention divides only after its product with V. numpy's path below passes over a row
    four times; the compiled one three (`kernels.softmax_numerators`)."""
    if kernels.enabled() and scores.flags.c_contiguous and scores.dtype == F32:
        return scores, kernels.softmax_numerators(scores)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores, out=scores)
    return weights, weights.sum(axis=-1, keepdims=True)


def softmax(x: np.ndarray) -> np.ndarray:
    """exp(x) / sum(exp(x)) over the last axis, in x's dtype (attention() inlines its own)."""
    exp = np.exp(x - x.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def attention_weights(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(hd)), causal: how much each query head looks at each key, (heads, Tq, Lk).

    Built whole, for display; attention() computes the same weights block by block and never keeps
    them. q: (Tq, heads, hd), the last Tq positions; k: (kv_heads, Lk, hd).
    """
    tq, n_heads, hd = q.shape
    n_kv, lk, _ = k.shape
    grouped = q.reshape(tq, n_kv, n_heads // n_kv, hd).transpose(1, 2, 0, 3)  # (kv_heads, rep, Tq, hd)
    return softmax(attention_scores(grouped, k, lk - tq)).reshape(n_heads, tq, lk)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, observer: Observer = NO_OBSERVER) -> np.ndarray:
    """Causal grouped-query attention of the last Tq positions over all Lk keys/values.

    q: (Tq, heads, hd); k, v: (kv_heads, Lk, hd). Returns (Tq, heads * hd).
    """
    observer.attention(q, k, v)
    if kernels.attends(q, k):  # the compiled path: block by block, the scores never kept (kernels.prompt_attention)
        return kernels.prompt_attention(q, k, v)
    tq, n_heads, hd = q.shape
    n_kv, lk, _ = k.shape
    rep = n_heads // n_kv  # query heads per KV head; head h reads KV head h // rep
    q = q.reshape(tq, n_kv, rep, hd).transpose(1, 2, 0, 3)  # (kv_heads, rep, Tq, hd)
    out = np.empty((n_kv, rep, tq, hd), dtype=F32)
    past = lk - tq  # keys that precede the first query
    # At least one block per core: a short prompt's queries (under a few hundred) would otherwise be one block,
    # attended on one core while the others wait.
    chunk = max(1, min(MAX_QUERY_BLOCK, ATTENTION_BLOCK_BYTES // (n_heads * lk * FLOAT32_BYTES), -(-tq // usable_cores())))

    def query_block(start: int) -> None:
        stop = min(tq, start + chunk)
        keys = past + stop  # causal: this block of queries sees no key after its last query
        scores = attention_scores(q[:, :, start:stop], k[:, :keys], past + start)  # (kv, rep, Tc, keys)
        weights, sums = softmax_numerators(scores)
        # (w @ v) / sum(w) equals softmax(scores) @ v and saves a pass over the big weight matrix
        mixed = np.matmul(weights.reshape(n_kv, -1, keys), v[:, :keys]).reshape(n_kv, rep, stop - start, hd)
        np.divide(mixed, sums, out=out[:, :, start:stop])

    for_each(query_block, range(0, tq, chunk))  # blocks are independent: all cores share them
    return out.transpose(2, 0, 1, 3).reshape(tq, n_heads * hd)


def decode_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Attention of one new token per sequence, for n sequences whose caches are neighbours in one block.

    q: (n, heads, hd); k, v: (n, kv_heads, L, hd), sequence i's keys and values in its first
    lengths[i] rows (the new token's included), the rest masked. Returns (n, heads * hd), row i what
    attention(q[i:i+1], k[i, :, :lengths[i]], v[i, :, :lengths[i]]) gives.
    """
    n, n_heads, hd = q.shape
    n_kv, lk = k.shape[1], k.shape[2]
    q = (q * F32(1.0 / np.sqrt(hd))).reshape(n, n_kv, n_heads // n_kv, hd, 1)
    scores = np.matmul(k[:, :, None], q).reshape(n, n_kv, n_heads // n_kv, lk)  # K @ q per head, as attention_scores
    if (lengths < lk).any():  # rows past a sequence's own length belong to no token of it
        scores += np.where(np.arange(lk) < lengths[:, None], F32(0), F32(-np.inf))[:, None, None, :]
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores, out=scores)
    mixed = np.matmul(weights, v) / weights.sum(axis=-1, keepdims=True)  # (n, kv_heads, rep, hd)
    return mixed.reshape(n, n_heads * hd)


def mlp(x: np.ndarray, layer: LayerWeights, observer: Observer = NO_OBSERVER) -> np.ndarray:
    """SwiGLU: down(silu(gate(x)) * up(x))."""
    gate_up = linear(x, layer.w_gate_up, observer=observer)  # (T, 2 d_ff)
    d_ff = gate_up.shape[1] // 2
    hidden = np.empty((x.shape[0], d_ff), dtype=F32)

    if kernels.enabled():  # one compiled pass instead of numpy's four, its rows split across the cores
        kernels.silu_gate(gate_up, hidden)
    else:  # element-wise per token: rows split across cores
        for_row_blocks(lambda rows: np.multiply(silu(gate_up[rows, :d_ff]), gate_up[rows, d_ff:], out=hidden[rows]),
                       x.shape[0])
    return linear(hidden, layer.w_down, observer=observer)


def transformer_block(
    x: np.ndarray,
    layer: LayerWeights,
    config: ModelConfig,
    rotary: tuple[np.ndarray, np.ndarray],
    sequences: list[tuple[slice, KVCache | None]],
    layer_index: int,
    observer: Observer = NO_OBSERVER,
) -> np.ndarray:
    """Pre-norm block: x + attention(norm(x)), then + mlp(norm(x)). x: (T, d).

    The rows of x may belong to several sequences (a batch): `sequences` gives each one's rows and
    its KV cache. The matrix products see all T rows at once, so every weight is read once for the
    whole batch; attention runs per sequence, over that sequence's own cache.
    """
    t, h, hd = x.shape[0], config.n_heads, config.head_dim
    qkv = linear(rms_norm(x, layer.attn_norm, config.rms_eps), layer.wqkv, layer.bqkv, observer)
    # queries and keys rotate by the same angles: one RoPE call over (T, heads + kv_heads, hd)
    qk = rope(qkv[:, : config.q_dim + config.kv_dim].reshape(t, h + config.n_kv_heads, hd), *rotary, config.rope_style)
    q, k = qk[:, :h], qk[:, h:]
    v = qkv[:, config.q_dim + config.kv_dim :].reshape(t, config.n_kv_heads, hd)
    mixed = np.empty((t, config.q_dim), dtype=F32)
    attending = []  # (rows, keys, values) of every sequence
    for rows, cache in sequences:
        if cache is not None:
            keys, values = cache.write(layer_index, k[rows], v[rows])  # views of the cache, past + new
        else:  # no cache: attend over the keys/values computed in this very pass
            keys = np.ascontiguousarray(k[rows].transpose(1, 0, 2))
            values = np.ascontiguousarray(v[rows].transpose(1, 0, 2))
        observer.attention(q[rows], keys, values)  # here, on the calling thread, in sequence order
        attending.append((rows, keys, values))

    # Decode rows (one new token each, over its cache) in runs of neighbours in one cache block: each run
    # is one call, the kernel's (parallel inside) or numpy's. A longer sequence (a prompt or a chunk of
    # one) attends on its own, its query blocks split across the cores.
    runs = [run for run in _neighbour_runs(sequences) if sequences[run[0]][1] is not None]
    for run in runs:
        block_k, block_v, slot = sequences[run[0]][1].block
        lengths = np.array([attending[i][1].shape[1] for i in run])  # the new token's key included
        rows = slice(sequences[run[0]][0].start, sequences[run[-1]][0].stop)
        if kernels.enabled():
            mixed[rows] = kernels.one_token_attention(q[rows], block_k, block_v, layer_index, slot, lengths)
        else:
            end, n = int(lengths.max()), len(run)
            mixed[rows] = decode_attention(q[rows], block_k[layer_index, slot:slot + n, :, :end],
                                           block_v[layer_index, slot:slot + n, :, :end], lengths)
    in_runs = {i for run in runs for i in run}
    for index, (rows, keys, values) in enumerate(attending):
        if index not in in_runs:
            mixed[rows] = attention(q[rows], keys, values)
    x = x + linear(mixed, layer.wo, observer=observer)
    return x + mlp(rms_norm(x, layer.mlp_norm, config.rms_eps), layer, observer)


def _neighbour_runs(sequences: list[tuple[slice, KVCache | None]]) -> list[list[int]]:
    """The decode rows (sequences of one new token), as runs of neighbours: consecutive sequences whose
    caches are consecutive slots of one block (KVCache.batch). Any other decode row is a run of one."""
    runs: list[list[int]] = []
    for index, (rows, cache) in enumerate(sequences):
        if rows.stop - rows.start != 1:
            continue
        previous = sequences[index - 1][1] if runs and runs[-1][-1] == index - 1 else None
        if previous is not None and previous.block and cache is not None and cache.block \
                and cache.block[0] is previous.block[0] and cache.block[2] == previous.block[2] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


def forward(
    weights: Weights, config: ModelConfig, token_ids: Sequence[np.ndarray], caches: Sequence[KVCache | None], *,
    all_logits: bool = False, observer: Observer = NO_OBSERVER,
) -> np.ndarray:
    """The one pass every way to run the model uses: several sequences' new tokens at once.

    `token_ids[i]` are new tokens of the sequence whose keys and values live in `caches[i]` (None:
    no cache, attend within the pass only); each cache is extended by its tokens. Returns logits for
    the last new token of every sequence, (sequences, vocab) — what generation needs; inference
    engines skip the LM head for the other positions — or for every new token with all_logits=True.
    """
    if len(token_ids) != len(caches) or not token_ids:
        raise ValueError(f"one cache per sequence: got {len(token_ids)} token arrays and {len(caches)} caches")
    held = [id(c) for c in caches if c is not None]
    if len(set(held)) != len(held):
        raise ValueError("each sequence needs its own KV cache: the same cache was given twice")
    token_ids = [np.asarray(ids, dtype=np.int64).reshape(-1) for ids in token_ids]
    pasts = [cache.length if cache is not None else 0 for cache in caches]
    ends = np.cumsum([len(ids) for ids in token_ids])
    spans = [slice(int(end - len(ids)), int(end)) for ids, end in zip(token_ids, ends, strict=True)]
    positions = np.concatenate([np.arange(past, past + len(ids)) for ids, past in zip(token_ids, pasts, strict=True)])
    rotary = rope_angles(positions, config.head_dim, config.rope_theta)
    x = embed(weights.token_embedding, np.concatenate(token_ids))
    sequences = list(zip(spans, caches, strict=True))
    for index, layer in enumerate(weights.layers):
        x = transformer_block(x, layer, config, rotary, sequences, index, observer)
    for ids, cache in zip(token_ids, caches, strict=True):
        if cache is not None:
            cache.advance(len(ids))
    if not all_logits:
        x = x[[span.stop - 1 for span in spans]]
    return linear(rms_norm(x, weights.final_norm, config.rms_eps), weights.lm_head, observer=observer)  # LM head


# --- the three ways to run one sequence ------------------------------------------------------

def prefill(
    weights: Weights, config: ModelConfig, token_ids: np.ndarray, cache: KVCache, *, all_logits: bool = False,
    observer: Observer = NO_OBSERVER,
) -> np.ndarray:
    """Process the whole prompt in one batched pass, filling `cache`. Returns logits (1, vocab) for the
    last position, or (T, vocab) with all_logits=True."""
    return forward(weights, config, [token_ids], [cache], all_logits=all_logits, observer=observer)


def decode_step(
    weights: Weights, config: ModelConfig, token_id: int, cache: KVCache, *, observer: Observer = NO_OBSERVER
) -> np.ndarray:
    """Process one token: attend over the cache, append its K/V. Returns logits (vocab,)."""
    return forward(weights, config, [[token_id]], [cache], observer=observer)[0]


def forward_without_cache(
    weights: Weights, config: ModelConfig, token_ids: np.ndarray, *, observer: Observer = NO_OBSERVER
) -> np.ndarray:
    """Recompute every position from scratch (no KV cache). Returns logits (vocab,) of the last."""
    return forward(weights, config, [token_ids], [None], observer=observer)[0]


# --- many sequences in one pass: what a serving engine does ------------------------------------

def decode_batch(
    weights: Weights, config: ModelConfig, token_ids: Sequence[int], caches: Sequence[KVCache], *,
    observer: Observer = NO_OBSERVER,
) -> np.ndarray:
    """One new token for each of B sequences, each attending over its own cache, in one pass.

    Every linear layer multiplies a (B, d) matrix by its weights, so the weights are read once for
    all B tokens. Returns logits (B, vocab): row i is what decode_step(token_ids[i], caches[i]) gives.
    """
    return forward(weights, config, [[t] for t in token_ids], list(caches), observer=observer)


def mixed_step(
    weights: Weights, config: ModelConfig, decode_token_ids: Sequence[int], decode_caches: Sequence[KVCache],
    chunk_token_ids: np.ndarray, chunk_cache: KVCache, *, observer: Observer = NO_OBSERVER,
) -> tuple[np.ndarray, np.ndarray]:
    """Decode rows and a chunk of another request's prompt, in one pass (chunked prefill).

    The chunk's tokens join the decode rows in every matrix product; its attention runs over its
    own cache, which it extends. Returns the decode rows' logits (B, vocab) and the chunk's last
    position's logits (vocab,): the prompt's first answer token when this chunk was its last.
    """
    logits = forward(weights, config, [*([t] for t in decode_token_ids), chunk_token_ids],
                     [*decode_caches, chunk_cache], observer=observer)
    return logits[:-1], logits[-1]
