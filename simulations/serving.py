"""What a server holds and plays: each user's prompt and KV cache, and two users sharing the model on a clock.

`prefilled_caches` gives every user a cache of its own, neighbouring slots of one block, as a serving
engine's paged cache keeps them; `two_users` plays one user streaming its answer while another arrives
with a long prompt, prefilled whole or in chunks riding along with the streaming user's decode rows
(chunked prefill). `batch.py` times steps of these; the batching chapter shows both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .generate import choose_token
from .loader import LoadedModel
from .model import KVCache, decode_batch, decode_step, mixed_step, prefill
from .sweep import PASSAGE

DISTINCT_PROMPTS = 4  # prompts prefilled for real; the other users' caches copy them
STREAMED_BEFORE_ARRIVAL = 2  # the streaming user's tokens on the clock before the second user arrives
DECODE_STEPS_AFTER_FIRST_TOKEN = 3  # steps shown once both users stream


def user_prompt(model: LoadedModel, user: int, n_tokens: int) -> np.ndarray:
    """User `user`'s prompt of exactly `n_tokens` tokens: the sweep's passage, starting `user` words in,
    so every user's prompt differs while all have the same length."""
    words = PASSAGE.split()
    text = " ".join(words[user % len(words):] + words[: user % len(words)])
    ids = np.asarray(model.tokenizer.encode(text), dtype=np.int64)
    return np.tile(ids, -(-n_tokens // len(ids)))[:n_tokens]


def prefilled_caches(model: LoadedModel, users: int, context: int, spare: int) -> list[KVCache]:
    """`users` caches holding `context` tokens each, with room for `spare` more, as a server keeps them:
    neighbouring slots of one block (`KVCache.batch`), so a batch's attention is one product per step.

    DISTINCT_PROMPTS prompts are prefilled; user i's cache is a copy of prompt i mod DISTINCT_PROMPTS's.
    """
    config, weights = model.config, model.weights
    caches = KVCache.batch(config, users, context + spare)
    for user, cache in enumerate(caches):
        if user < DISTINCT_PROMPTS:
            prefill(weights, config, user_prompt(model, user, context), cache)
        else:
            source = caches[user % DISTINCT_PROMPTS]
            cache.k[:, :, :context] = source.k[:, :, :context]
            cache.v[:, :, :context] = source.v[:, :, :context]
            cache.length = context
    return caches


def rewind(caches: Sequence[KVCache], length: int) -> None:
    """Forget the tokens decoded after `length`: the next step overwrites their rows."""
    for cache in caches:
        cache.length = length


def two_users(model: LoadedModel, context: int, prompt_tokens: int, chunk_tokens: int,
              report: Callable[[str, float], None]) -> dict[str, Any]:
    """One user streams its answer; another arrives (t = 0) with a `prompt_tokens`-token prompt.

    Played for real, twice, on a wall clock: "unchunked" prefills the whole prompt in one pass
    before the next decode step; "chunked" cuts it into `chunk_tokens`-token chunks, each riding
    along with the streaming user's decode row. Once the new user has its first token, both decode
    together. Each event is a pass's end: "token" when it gave the user a token, "prefill" when it
    only processed part of the arriving user's prompt. The streaming user's tokens before the
    arrival have negative times.
    """
    prompt = user_prompt(model, DISTINCT_PROMPTS + 1, prompt_tokens)
    result: dict[str, Any] = {"prompt_tokens": prompt_tokens, "chunk_tokens": chunk_tokens}
    for index, mode in enumerate(("unchunked", "chunked")):
        report(f"two users, {mode}: a {prompt_tokens}-token prompt arrives while another user streams", index / 2)
        events = play_two_users(model, context, prompt, chunk_tokens if mode == "chunked" else None)
        streamed = [e["t_ms"] for e in events if e["user"] == "streaming"]
        result[mode] = {
            "stall_ms": max(b - a for a, b in zip(streamed, streamed[1:], strict=False)),
            "ttft_ms": next(e["t_ms"] for e in events if e["user"] == "arriving" and e["what"] == "token"),
            "events": events,
        }
    return result


def play_two_users(model: LoadedModel, context: int, prompt: np.ndarray, chunk_tokens: int | None) -> list[dict]:
    """The events of one two-users timeline (see `two_users`); chunk_tokens None prefills the prompt whole."""
    weights, config = model.weights, model.config
    chunks = [prompt] if chunk_tokens is None else [prompt[i:i + chunk_tokens] for i in range(0, len(prompt), chunk_tokens)]
    streaming = prefilled_caches(model, 1, context, STREAMED_BEFORE_ARRIVAL + len(chunks)
                                 + DECODE_STEPS_AFTER_FIRST_TOKEN)[0]
    arriving = KVCache.empty(config, len(prompt) + DECODE_STEPS_AFTER_FIRST_TOKEN)
    token = int(user_prompt(model, 0, context)[-1])
    # Untimed: one pass of the first chunk's shape, so that no chunk on the clock pays a first call's costs
    # (BLAS's threads starting, pages of a new cache) that the whole prompt's single pass would not.
    mixed_step(weights, config, [token], [KVCache.empty(config, 1)], chunks[0], KVCache.empty(config, len(chunks[0])))
    streamed_before = []
    for _ in range(STREAMED_BEFORE_ARRIVAL):
        token = greedy(decode_step(weights, config, token, streaming))
        streamed_before.append(time.perf_counter())
    arrival = time.perf_counter()
    events = [{"user": "streaming", "t_ms": (t - arrival) * 1000, "what": "token"} for t in streamed_before]

    def happened(user: str, what: str) -> None:
        events.append({"user": user, "t_ms": (time.perf_counter() - arrival) * 1000, "what": what})

    if chunk_tokens is None:  # the streaming user waits for the whole prompt
        new_token = greedy(prefill(weights, config, prompt, arriving)[-1])
        happened("arriving", "token")
    else:  # each chunk rides along with the streaming user's decode row
        for i, chunk in enumerate(chunks):
            decode_logits, chunk_logits = mixed_step(weights, config, [token], [streaming], chunk, arriving)
            token = greedy(decode_logits[0])
            happened("streaming", "token")
            happened("arriving", "token" if i == len(chunks) - 1 else "prefill")
            events[-1]["t_ms"] = events[-2]["t_ms"]  # one pass: one moment
        new_token = greedy(chunk_logits)
    for _ in range(DECODE_STEPS_AFTER_FIRST_TOKEN):
        logits = decode_batch(weights, config, [token, new_token], [streaming, arriving])
        token, new_token = greedy(logits[0]), greedy(logits[1])
        happened("streaming", "token")
        happened("arriving", "token")
        events[-1]["t_ms"] = events[-2]["t_ms"]
    return events




def greedy(logits: np.ndarray) -> int:
    """The next token as `generate` chooses it at temperature 0."""
    return choose_token(logits, 0.0, None, np.random.default_rng(0))
