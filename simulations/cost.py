"""What one pass of the model costs: FLOPs and bytes, as closed forms of its shape and token counts.

Stated once, in the spirit of nanoGPT's `estimate_mfu`, for every count in the project: the trace's
steps, the roofline, the prefill chart's split into linear and attention work, and (at fp16 or
quantised widths) the projections onto other hardware. The formulas, and what they leave out, are in
simulations/README.md ("What is counted"); tests/simulations/test_cost.py runs real passes with a
counting observer and checks that the shapes the model multiplies give exactly these numbers.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FLOAT32_BYTES = 4  # the numpy model's weights and KV cache; projections pass their own widths


@dataclass(frozen=True)
class ModelShape:
    """The sizes a pass's cost depends on, whichever model they describe.

    `ModelConfig.shape` gives the numpy model's; `from_models_json` reads an entry of
    simulations/data/models.json; `from_summary` reads a trace's `model` summary.
    """

    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    vocab: int
    tied_embeddings: bool = True  # the LM head is the embedding table (held once, read by both)
    qkv_bias: bool = False  # Qwen2 adds biases to the Q, K and V projections

    @classmethod
    def from_models_json(cls, entry: Mapping[str, Any]) -> ModelShape:
        """An entry of simulations/data/models.json (its shapes come from each model's config.json)."""
        keys = ("layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "vocab", "tied_embeddings")
        return cls(**{key: entry[key] for key in keys}, qkv_bias=bool(entry.get("qkv_bias", False)))

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> ModelShape:
        """A trace's `model` summary (`loader.model_summary`), as the hooks receive it."""
        keys = ("layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "tied_embeddings", "qkv_bias")
        return cls(**{key: summary[key] for key in keys}, vocab=summary["vocab_size"])

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def block_matrix_params(self) -> int:
        """One block's matrices: Q, K, V and O, and the SwiGLU MLP's gate, up and down."""
        d = self.d_model
        return d * (self.q_dim + 2 * self.kv_dim) + self.q_dim * d + 3 * d * self.d_ff

    @property
    def block_vector_params(self) -> int:
        """One block's vectors: two norms, and the Q/K/V biases where the architecture has them."""
        return 2 * self.d_model + (self.q_dim + 2 * self.kv_dim if self.qkv_bias else 0)

    @property
    def params(self) -> int:
        """Every parameter, a tied embedding/LM-head matrix counted once."""
        table = self.vocab * self.d_model
        blocks = self.layers * (self.block_matrix_params + self.block_vector_params)
        return blocks + self.d_model + table + (0 if self.tied_embeddings else table)  # + final norm


def weight_bytes(shape: ModelShape, bytes_per_weight: float = FLOAT32_BYTES) -> float:
    """Bytes of every parameter held in memory."""
    return shape.params * bytes_per_weight


def kv_bytes_per_token(shape: ModelShape, bytes_per_value: float = FLOAT32_BYTES) -> float:
    """K and V of one token, every layer: what the KV cache grows by per token."""
    return 2 * shape.layers * shape.kv_dim * bytes_per_value


def causal_pairs(new_tokens: int, past_tokens: int) -> int:
    """(query, key) pairs a causal pass computes: each new token sees the past and itself."""
    return new_tokens * past_tokens + new_tokens * (new_tokens + 1) // 2


@dataclass(frozen=True)
class PassCost:
    """FLOPs and bytes of one pass; `bytes_dict()` is the trace's `bytes` field."""

    linear_flops: int
    attention_flops: int
    lm_head_flops: int
    weight_bytes: float
    kv_read_bytes: float
    kv_written_bytes: float

    @property
    def flops(self) -> int:
        return self.linear_flops + self.attention_flops + self.lm_head_flops

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_read_bytes + self.kv_written_bytes

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved: where the pass sits on a roofline."""
        return self.flops / self.bytes

    def bytes_dict(self) -> dict[str, float]:
        return {"weights": self.weight_bytes, "kv_read": self.kv_read_bytes,
                "kv_written": self.kv_written_bytes, "total": self.bytes}


def pass_cost(shape: ModelShape, new_tokens: int, past_tokens: int = 0, *, logits_rows: int = 1,
              **options: float) -> PassCost:
    """FLOPs and bytes of a pass over `new_tokens` after `past_tokens` cached ones (README.md): the
    one-sequence case of `batch_cost`, whose options (`cached`, the byte widths) it takes."""
    return batch_cost(shape, [(new_tokens, past_tokens)], logits_rows=logits_rows, **options)


def batch_cost(shape: ModelShape, sequences: Sequence[tuple[int, int]], *, logits_rows: int | None = None,
               cached: bool = True, bytes_per_weight: float = FLOAT32_BYTES,
               bytes_per_kv_value: float = FLOAT32_BYTES) -> PassCost:
    """FLOPs and bytes of one pass over several sequences, each `(new_tokens, past_tokens)`.

    A batched decode step is B sequences of (1, context); a chunked-prefill step adds (C, done so
    far) for the prompt being cut. The weights are read once for the whole pass (that is what
    batching buys); each sequence's attention reads its own cache. `logits_rows` defaults to one
    row per sequence (its last position). `cached=False` is a pass without a KV cache
    (`forward_without_cache`): it writes no K/V rows.
    """
    d = shape.d_model
    new = sum(n for n, _ in sequences)
    rows = len(sequences) if logits_rows is None else logits_rows
    params_read = shape.layers * (shape.block_matrix_params + shape.block_vector_params) + d  # + final norm
    params_read += shape.vocab * d + new * d  # the LM head, and the new tokens' embedding rows
    kv_row = kv_bytes_per_token(shape, bytes_per_kv_value)
    return PassCost(
        linear_flops=2 * new * shape.layers * shape.block_matrix_params,
        attention_flops=4 * shape.layers * shape.heads * shape.head_dim * sum(causal_pairs(n, p) for n, p in sequences),
        lm_head_flops=2 * rows * shape.vocab * d,
        weight_bytes=params_read * bytes_per_weight,
        kv_read_bytes=kv_row * sum(p + n for n, p in sequences),
        kv_written_bytes=kv_row * new if cached else 0,
    )


def prefill_cost(shape: ModelShape, prompt_tokens: int, **widths: float) -> PassCost:
    """The prompt in one pass; only its last position goes through the LM head."""
    return pass_cost(shape, prompt_tokens, 0, **widths)


def decode_cost(shape: ModelShape, context: int, **widths: float) -> PassCost:
    """One new token with `context` tokens already in the KV cache."""
    return pass_cost(shape, 1, context, **widths)


def first_compute_bound_prompt(prefill: Callable[[int], PassCost], ridge: float, longest: int) -> int | None:
    """The shortest prompt (1..longest tokens) whose prefill reaches `ridge` FLOP/byte, the ridge point of a
    roofline (peak FLOP/s ÷ bandwidth), where it turns compute-bound; None if none does.

    Per extra prompt token the FLOPs grow by 2 per weight (plus attention) while the bytes grow only by one
    token's KV cache, so the intensity only rises with the prompt: a bisection finds the first length.
    """
    lengths = range(1, longest + 1)
    first = bisect.bisect_left(lengths, True, key=lambda tokens: prefill(tokens).intensity >= ridge)
    return lengths[first] if first < len(lengths) else None


def roofline_seconds(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> float:
    """A pass's floor on a machine: the slower of computing `flops` at peak and moving `nbytes` at full
    bandwidth. No real kernel beats it; one that reached both ceilings at once would take exactly this."""
    return max(flops / peak_flops, nbytes / bandwidth)


def decode_batch_cost(shape: ModelShape, users: int, context: int, **widths: float) -> PassCost:
    """One decode step for `users` users, each with `context` tokens in its own KV cache."""
    return batch_cost(shape, [(1, context)] * users, **widths)


def batch_intensity_limit(shape: ModelShape, context: int, **widths: float) -> float:
    """The intensity a decode step approaches as users are added: one user's FLOPs ÷ the bytes of its own
    KV cache. The weights are read once however many users share them, so they fade from the ratio."""
    one, two = decode_batch_cost(shape, 1, context, **widths), decode_batch_cost(shape, 2, context, **widths)
    return (two.flops - one.flops) / (two.bytes - one.bytes)


def first_compute_bound_batch(shape: ModelShape, context: int, ridge: float, **widths: float) -> int | None:
    """The smallest number of users whose decode step reaches `ridge` FLOP/byte (the knee the roofline
    predicts), each user's KV cache of `context` tokens counted; None if no batch ever does.

    Each user adds 2 FLOPs per weight but also its own KV cache's bytes, so the intensity rises with the
    batch towards `batch_intensity_limit`: the KV cache moves the knee to a larger batch than the weights
    alone would (ridge × bytes per weight ÷ 2), and beyond some context length the step never turns
    compute-bound. FLOPs and bytes are linear in the batch (flops = B·f, bytes = shared + B·k), so the
    crossing B ≥ ridge·shared ÷ (f − ridge·k) is solved directly, then checked against the cost model.
    """
    one, two = decode_batch_cost(shape, 1, context, **widths), decode_batch_cost(shape, 2, context, **widths)
    per_user_flops, per_user_bytes = two.flops - one.flops, two.bytes - one.bytes
    shared_bytes = one.bytes - per_user_bytes
    if per_user_flops <= ridge * per_user_bytes:
        return None
    users = max(1, math.ceil(ridge * shared_bytes / (per_user_flops - ridge * per_user_bytes)))
    while users > 1 and decode_batch_cost(shape, users - 1, context, **widths).intensity >= ridge:
        users -= 1  # floating-point rounding in the division above: step back to the first that reaches it
    while decode_batch_cost(shape, users, context, **widths).intensity < ridge:
        users += 1
    return users
