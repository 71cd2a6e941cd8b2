"""Time the model and count its FLOPs and bytes without touching the maths.

`counting()` temporarily wraps the primitives of `simulations.model` (embed, rms_norm, linear,
attention, KVCache.write) with functions that add up costs from the shapes of the arrays actually
passed, then restores them. `InstrumentedRun` uses it around prefill, decode steps and full
recomputes, and adds wall-clock times. The definitions, also in README.md:

- flops: 2 per multiply-add of every matrix product — the projections, the LM head, and
  attention's q·k and probs·v over the keys each query may see (causal). Element-wise work
  (norms, RoPE, softmax, SiLU, residual adds) is O(T·d) and left out.
- bytes.weights: every parameter array read once per pass (biases and norm vectors included),
  plus one embedding row per input token.
- bytes.kv_read: the K and V rows attention reads (all cached tokens, every layer).
- bytes.kv_written: the K and V rows appended to the cache.
Activations are not counted: they are small next to the weights and stay in the CPU caches.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from . import model as M
from .config import FLOAT32_BYTES, ModelConfig
from .loader import LoadedModel


@dataclass
class OpCounts:
    flops: int = 0
    weight_bytes: int = 0
    kv_read_bytes: int = 0
    kv_written_bytes: int = 0
    attention: list[np.ndarray] = field(default_factory=list)  # per layer, decode only, if captured

    def bytes_dict(self) -> dict[str, int]:
        total = self.weight_bytes + self.kv_read_bytes + self.kv_written_bytes
        return {"weights": self.weight_bytes, "kv_read": self.kv_read_bytes,
                "kv_written": self.kv_written_bytes, "total": total}


def causal_attention_flops(n_heads: int, head_dim: int, new_tokens: int, past_tokens: int) -> int:
    """q·k and probs·v: 2 products x 2 FLOPs x hd per (query, visible key) pair, every head."""
    visible_pairs = new_tokens * past_tokens + new_tokens * (new_tokens + 1) // 2
    return 4 * n_heads * head_dim * visible_pairs


@contextlib.contextmanager
def counting(capture_attention: bool = False) -> Iterator[OpCounts]:
    """Count the costs of every model primitive called inside the `with` block."""
    counts = OpCounts()
    original = {name: getattr(M, name) for name in ("embed", "rms_norm", "linear", "attention", "attention_scores")}
    original_write = M.KVCache.write

    def embed(table, token_ids):
        counts.weight_bytes += len(token_ids) * table.shape[1] * table.itemsize
        return original["embed"](table, token_ids)

    def rms_norm(x, weight, eps):
        counts.weight_bytes += weight.nbytes
        return original["rms_norm"](x, weight, eps)

    def linear(x, w, b=None):
        counts.flops += 2 * x.shape[0] * w.shape[0] * w.shape[1]
        counts.weight_bytes += w.nbytes + (b.nbytes if b is not None else 0)
        return original["linear"](x, w, b)

    def attention(q, k, v):
        tq, n_heads, head_dim = q.shape
        counts.flops += causal_attention_flops(n_heads, head_dim, tq, k.shape[1] - tq)
        counts.kv_read_bytes += k.nbytes + v.nbytes
        return original["attention"](q, k, v)

    def attention_scores(q, k, first_position):
        scores = original["attention_scores"](q, k, first_position)
        if capture_attention and q.shape[2] == 1:  # one query (decode): keep its weights per key
            probs = M.softmax(scores.astype(np.float32, copy=True))
            counts.attention.append(probs.reshape(-1, probs.shape[-1]).mean(axis=0))
        return scores

    def write(self, layer, k_new, v_new):
        counts.kv_written_bytes += k_new.nbytes + v_new.nbytes
        return original_write(self, layer, k_new, v_new)

    replacements = {"embed": embed, "rms_norm": rms_norm, "linear": linear, "attention": attention,
                    "attention_scores": attention_scores}
    try:
        for name, fn in replacements.items():
            setattr(M, name, fn)
        M.KVCache.write = write
        yield counts
    finally:
        for name, fn in original.items():
            setattr(M, name, fn)
        M.KVCache.write = original_write


def expected_counts(config: ModelConfig, new_tokens: int, past_tokens: int, cached: bool = True,
                    logits_rows: int = 1) -> dict[str, int]:
    """Closed-form FLOPs and bytes of one pass: the same definitions as `counting`, from the config."""
    c, f = config, FLOAT32_BYTES
    qkv = c.q_dim + 2 * c.kv_dim
    matrix_params = c.n_layers * (c.d_model * qkv + c.q_dim * c.d_model + 3 * c.d_model * c.d_ff)
    flops = (2 * new_tokens * matrix_params + 2 * logits_rows * c.vocab_size * c.d_model
             + c.n_layers * causal_attention_flops(c.n_heads, c.head_dim, new_tokens, past_tokens))
    vectors = c.n_layers * (2 * c.d_model + (qkv if c.qkv_bias else 0)) + c.d_model
    weights = f * (matrix_params + vectors + c.vocab_size * c.d_model + new_tokens * c.d_model)
    kv_row = 2 * c.n_layers * c.kv_dim * f  # K and V of one token, all layers
    return {"flops": flops, "weights": weights, "kv_read": kv_row * (past_tokens + new_tokens),
            "kv_written": kv_row * new_tokens if cached else 0}


@dataclass
class StepStats:
    phase: str  # "prefill", "decode" or "recompute"
    start_ms: float
    end_ms: float
    counts: OpCounts
    kv_tokens: int
    kv_bytes: int

    @property
    def ms(self) -> float:
        return self.end_ms - self.start_ms


class InstrumentedRun:
    """One generation's worth of model passes, each timed and counted. Times are ms from creation."""

    def __init__(self, model: LoadedModel, max_tokens: int, capture_attention: bool = False) -> None:
        self.model = model
        self.cache = M.KVCache.empty(model.config, max_tokens)
        self.capture_attention = capture_attention
        self.t0 = time.perf_counter()

    def _now_ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000.0

    def _run(self, phase: str, fn, *args) -> tuple[np.ndarray, StepStats]:
        with counting(self.capture_attention and phase == "decode") as counts:
            start = self._now_ms()
            logits = fn(*args)
            end = self._now_ms()
        stats = StepStats(phase, start, end, counts, self.cache.length, self.cache.nbytes)
        return logits, stats

    def prefill(self, token_ids) -> tuple[np.ndarray, StepStats]:
        """Logits (vocab,) of the last prompt position, and the step's costs."""
        w, c = self.model.weights, self.model.config
        logits, stats = self._run("prefill", M.prefill, w, c, np.asarray(token_ids), self.cache)
        return logits[-1], stats

    def decode(self, token_id: int) -> tuple[np.ndarray, StepStats]:
        w, c = self.model.weights, self.model.config
        return self._run("decode", M.decode_step, w, c, int(token_id), self.cache)

    def recompute(self, token_ids) -> tuple[np.ndarray, StepStats]:
        """The no-cache baseline: logits of the last position from the whole sequence."""
        w, c = self.model.weights, self.model.config
        return self._run("recompute", M.forward_without_cache, w, c, np.asarray(token_ids))
