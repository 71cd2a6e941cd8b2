"""The one generation loop: prefill the prompt, then decode one token at a time, yielding each step.

Recording (`trace.record`), the sweeps, the roofline and the tests all consume `generate`; a `Step`
says what one pass of the model did. A request's own logic (which tokens its next pass consumes, the token
chosen from the logits and fed back, when it stops) is `Request`: `generate` runs one request's passes
alone, and a server's scheduler (`serving.play_two_users`) runs several requests' passes together. The times wrap the model's pass only: choosing the token, and
whatever the consumer does with a step, fall between steps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .cost import PassCost, pass_cost
from .loader import LoadedModel, bytes_per_weight
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


class Request:
    """One request's side of generation: what its next pass must consume (`consumed`, into `cache`), and
    what to make of that pass's logits (the token chosen, fed back, the end-of-turn check), as a `Step`.

    `generate` drives one alone; a server's loop (`serving.two_users`) drives several, running their passes
    together (one batched pass, a prompt cut into chunks). Either way the logic of a sequence is here, once.
    The arguments are `generate`'s.
    """

    def __init__(self, model: LoadedModel, prompt_ids: Sequence[int] | np.ndarray, *, max_new_tokens: int,
                 temperature: float = 0.0, top_k: int | None = None, seed: int = 0, stop_at_eos: bool = True,
                 recompute: bool = False, attention: bool = False, cache: KVCache | None = None) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if recompute and cache is not None:
            raise ValueError("recompute=True runs without a KV cache: pass no cache")
        self.model, self.max_new_tokens, self.temperature, self.top_k = model, max_new_tokens, temperature, top_k
        self.stop_at_eos, self.recompute, self.attention = stop_at_eos, recompute, attention
        self.sequence = [int(t) for t in prompt_ids]
        if cache is None and not recompute:
            cache = KVCache.empty(model.config, len(self.sequence) + max_new_tokens - 1)  # the last token is never fed back
        self.cache = cache
        self.rng = np.random.default_rng(seed)
        self.consumed = self.sequence  # what the next pass consumes: the prompt, then the last token
        self.index = 0
        self.finished = False
        self.past = 0
        self.capture: AttentionCapture | None = None

    @property
    def phase(self) -> str:
        """What the next pass is: "prefill", "decode", or "recompute" (no KV cache: the whole sequence again)."""
        return "recompute" if self.recompute else "prefill" if self.index == 0 else "decode"

    def observer(self) -> Observer:
        """The observer for the next pass: one that keeps decode's attention weights when asked."""
        self.capture = AttentionCapture() if self.attention and self.phase == "decode" else None
        return self.capture or NO_OBSERVER

    def run_alone(self) -> np.ndarray:
        """The next pass, this sequence alone: its (vocab,) logits."""
        weights, config = self.model.weights, self.model.config
        self.past = self.cache.length if self.cache is not None else 0
        ids = np.asarray(self.consumed)
        if self.phase == "recompute":
            return forward_without_cache(weights, config, ids)
        if self.phase == "prefill":
            return prefill(weights, config, ids, self.cache)[-1]
        return decode_step(weights, config, self.consumed[0], self.cache, observer=self.observer())

    def take(self, logits: np.ndarray, start_ms: float, end_ms: float) -> Step:
        """Choose the next token from the pass's logits and feed it back; the pass as a `Step`."""
        token = choose_token(logits, self.temperature, self.top_k, self.rng)
        cache = self.cache
        step = Step(
            index=self.index, phase=self.phase, token_ids=list(self.consumed), logits=logits, token=token,
            kv_tokens=cache.length if cache is not None else 0, kv_bytes=cache.nbytes if cache is not None else 0,
            start_ms=start_ms, end_ms=end_ms,
            cost=pass_cost(self.model.config.shape, len(self.consumed), self.past, cached=not self.recompute,
                           bytes_per_weight=bytes_per_weight(self.model)),
            attention=self.capture.per_layer().mean(axis=0) if self.capture else None,
        )
        self.capture = None
        self.index += 1
        self.sequence = [*self.sequence, token]
        self.consumed = self.sequence if self.recompute else [token]
        self.finished = self.index >= self.max_new_tokens or (self.stop_at_eos and token in self.model.tokenizer.stop_ids)
        return step


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
    request = Request(model, prompt_ids, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
                        seed=seed, stop_at_eos=stop_at_eos, recompute=recompute, attention=attention, cache=cache)
    started = time.perf_counter()
    while not request.finished:
        start_ms = (time.perf_counter() - started) * 1000
        logits = request.run_alone()
        end_ms = (time.perf_counter() - started) * 1000
        yield request.take(logits, start_ms, end_ms)
