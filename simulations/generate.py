"""The one generation loop: prefill the prompt, then decode one token at a time, yielding each step.

Recording (`trace.record`), the sweeps, the roofline and the tests all consume `generate`; a `Step`
says what one pass of the model did. The times wrap the model's pass only: choosing the token, and
whatever the consumer does with a step, fall between steps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .cost import PassCost, pass_cost
from .loader import LoadedModel
from .model import (
    NO_OBSERVER,
    KVCache,
    Observer,
    attention_weights,
    decode_step,
    forward_without_cache,
    prefill,
    softmax,
)


def choose_token(logits: np.ndarray, temperature: float, top_k: int | None, rng: np.random.Generator) -> int:
    """Greedy (argmax) at temperature 0; otherwise sample from softmax(logits / T), optionally top-k."""
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / temperature
    if top_k is not None and top_k < scaled.shape[0]:
        cutoff = np.partition(scaled, -top_k)[-top_k]
        scaled = np.where(scaled >= cutoff, scaled, -np.inf)
    probs = softmax(scaled)
    return int(rng.choice(probs.shape[0], p=probs))


class AttentionCapture(Observer):
    """Keeps a decode step's query and keys in every layer; the weights are computed after the pass.

    Keeping references costs nothing inside the timed pass. The keys are views of the KV cache,
    whose rows up to this step are never written again.
    """

    def __init__(self) -> None:
        self.queries_and_keys: list[tuple[np.ndarray, np.ndarray]] = []

    def attention(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
        self.queries_and_keys.append((q, k))

    def per_layer(self) -> np.ndarray:
        """(layers, Lk): the last query's weights over every key, averaged over the query heads."""
        return np.stack([attention_weights(q[-1:], k)[:, -1].mean(axis=0) for q, k in self.queries_and_keys])


@dataclass(frozen=True)
class Step:
    """What one pass of the model did."""

    index: int
    phase: str  # "prefill", "decode", or "recompute" (no KV cache: the whole sequence again)
    token_ids: list[int]  # what the pass consumed: the prompt, the previous token, or the whole sequence
    logits: np.ndarray  # (vocab,) float32: the next-token scores of the last position
    token: int  # the token chosen from them
    kv_tokens: int  # tokens in the KV cache after the pass (0 without a cache)
    kv_bytes: int  # bytes of K and V those tokens hold
    start_ms: float  # wall clock, from just before the first pass
    end_ms: float
    cost: PassCost  # FLOPs and bytes (cost.py)
    attention: np.ndarray | None = None  # decode, when asked: weights over all kv_tokens, mean of heads and layers

    @property
    def ms(self) -> float:
        return self.end_ms - self.start_ms


def generate(model: LoadedModel, prompt_ids: Sequence[int] | np.ndarray, *, max_new_tokens: int,
             temperature: float = 0.0, top_k: int | None = None, seed: int = 0, stop_at_eos: bool = True,
             recompute: bool = False, attention: bool = False, cache: KVCache | None = None) -> Iterator[Step]:
    """Prefill `prompt_ids`, then decode, one `Step` per pass, until an end-of-turn token or
    `max_new_tokens` tokens (each pass yields one; the end-of-turn step is yielded too).

    stop_at_eos=False keeps going past end-of-turn tokens (fixed-length timings).
    recompute=True is the baseline without a KV cache: every step recomputes the whole sequence
    (`forward_without_cache`). attention=True keeps each decode step's attention weights.
    `cache` receives the keys and values (one that fits is made when None): pass your own to read it.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    if recompute and cache is not None:
        raise ValueError("recompute=True runs without a KV cache: pass no cache")
    config, weights, shape = model.config, model.weights, model.config.shape
    sequence = [int(t) for t in prompt_ids]
    if cache is None and not recompute:
        cache = KVCache.empty(config, len(sequence) + max_new_tokens - 1)  # the last token is never fed back
    rng = np.random.default_rng(seed)
    consumed = sequence
    started = time.perf_counter()
    for index in range(max_new_tokens):
        past = cache.length if cache is not None else 0
        capture = AttentionCapture() if attention and index > 0 and not recompute else None
        start_ms = (time.perf_counter() - started) * 1000
        if recompute:
            phase, logits = "recompute", forward_without_cache(weights, config, np.asarray(consumed))
        elif index == 0:
            phase, logits = "prefill", prefill(weights, config, np.asarray(consumed), cache)[-1]
        else:
            phase = "decode"
            logits = decode_step(weights, config, consumed[0], cache, observer=capture or NO_OBSERVER)
        end_ms = (time.perf_counter() - started) * 1000
        token = choose_token(logits, temperature, top_k, rng)
        yield Step(
            index=index, phase=phase, token_ids=list(consumed), logits=logits, token=token,
            kv_tokens=cache.length if cache is not None else 0, kv_bytes=cache.nbytes if cache is not None else 0,
            start_ms=start_ms, end_ms=end_ms,
            cost=pass_cost(shape, len(consumed), past, cached=not recompute),
            attention=capture.per_layer().mean(axis=0) if capture else None,
        )
        if stop_at_eos and token in model.tokenizer.stop_ids:
            return
        sequence = [*sequence, token]
        consumed = sequence if recompute else [token]
