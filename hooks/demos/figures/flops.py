"""Closed-form FLOPs of a prefill, split into the part linear in prompt length and the attention part.

Used to draw the two parts beside the measured prefill time. The counts follow the trace's model
fields (layers, heads, head dim, d_model, parameter count).
"""

from __future__ import annotations

from typing import Any


def prefill_flops_split(model: dict[str, Any], prompt_tokens: int) -> tuple[float, float]:
    """(linear, attention) FLOPs of prefilling `prompt_tokens` tokens.

    Linear: every weight matrix multiplies every token once (2 FLOPs per parameter per token; the
    embedding lookup is not a multiply but the tied LM head is, so the parameter count stands).
    Attention: QKᵀ and attention × V, 2 FLOPs per multiply-add, over the causal half of a T×T matrix.
    """
    t = prompt_tokens
    linear = 2.0 * model["params"] * t
    attention = 2.0 * 2.0 * model["layers"] * model["heads"] * model["head_dim"] * t * (t + 1) / 2
    return linear, attention

