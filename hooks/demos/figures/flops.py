"""The FLOPs of a prefill, split into the part that grows linearly with prompt length and attention.

Used to draw the two parts beside the measured prefill time. The counts are the cost model's
(simulations/cost.py), for the model named in the trace.
"""

from __future__ import annotations

from typing import Any

from simulations.cost import ModelShape, prefill_cost


def prefill_flops_split(model: dict[str, Any], prompt_tokens: int) -> tuple[float, float]:
    """(linear, attention) FLOPs of prefilling `prompt_tokens` tokens; `model` is a trace's model summary.

    Linear: every block matrix multiplies every prompt token, and the LM head the last position
    only (prefill needs just the next token's logits). Attention: q·k and probs·v over the causal
    half of a T×T matrix.
    """
    cost = prefill_cost(ModelShape.from_summary(model), prompt_tokens)
    return float(cost.linear_flops + cost.lm_head_flops), float(cost.attention_flops)
