"""Choosing the next token, and a plain generation loop (prefill once, then decode steps)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .loader import LoadedModel
from .model import KVCache, decode_step, prefill


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max()
    exp = np.exp(shifted)
    return exp / exp.sum()


def choose_token(
    logits: np.ndarray, temperature: float = 0.0, top_k: int | None = None, rng: np.random.Generator | None = None
) -> int:
    """Greedy (argmax) at temperature 0; otherwise sample from softmax(logits / T), optionally top-k."""
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / temperature
    if top_k is not None and top_k < scaled.shape[0]:
        cutoff = np.partition(scaled, -top_k)[-top_k]
        scaled = np.where(scaled >= cutoff, scaled, -np.inf)
    probs = softmax(scaled)
    rng = rng or np.random.default_rng(0)
    return int(rng.choice(probs.shape[0], p=probs))


@dataclass
class Generation:
    token_ids: list[int] = field(default_factory=list)  # generated tokens, stop token excluded
    stop_reason: str = "max_new_tokens"  # or "eos"


def generate(
    model: LoadedModel,
    prompt_ids: list[int],
    max_new_tokens: int = 64,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int = 0,
    on_token: Callable[[int], None] | None = None,
) -> Generation:
    """Prefill the prompt, then decode until the end-of-turn token or max_new_tokens."""
    config, weights = model.config, model.weights
    rng = np.random.default_rng(seed)
    cache = KVCache.empty(config, len(prompt_ids) + max_new_tokens)
    logits = prefill(weights, config, np.asarray(prompt_ids), cache)[-1]
    result = Generation()
    for step in range(max_new_tokens):
        token = choose_token(logits, temperature, top_k, rng)
        if token in model.tokenizer.stop_ids:
            result.stop_reason = "eos"
            break
        result.token_ids.append(token)
        if on_token:
            on_token(token)
        if step + 1 < max_new_tokens:
            logits = decode_step(weights, config, token, cache)
    return result
