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

from .generate import Request
from .loader import LoadedModel
from .model import KVCache, decode_batch, mixed_step, prefill
from .prompts import user_prompt

DISTINCT_PROMPTS = 4  # prompts prefilled for real; the other users' caches copy them
STREAMED_BEFORE_ARRIVAL = 2  # the streaming user's tokens on the clock before the second user arrives
DECODE_STEPS_AFTER_FIRST_TOKEN = 3  # steps shown once both users stream


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
    """The events of one two-users timeline (see `two_users`); chunk_tokens None prefills the prompt whole.

    Each user is a `generate.Request` (greedy): this loop only decides which passes run together, as a
    server's scheduler does, and hands each sequence its logits."""
    weights, config = model.weights, model.config
    chunks = [prompt] if chunk_tokens is None else [prompt[i:i + chunk_tokens] for i in range(0, len(prompt), chunk_tokens)]
    room = STREAMED_BEFORE_ARRIVAL + len(chunks) + DECODE_STEPS_AFTER_FIRST_TOKEN
    streaming = Request(model, user_prompt(model, 0, context)[-1:], max_new_tokens=room + 1, stop_at_eos=False,
                         cache=prefilled_caches(model, 1, context - 1, room + 1)[0])
    arriving = Request(model, prompt, max_new_tokens=DECODE_STEPS_AFTER_FIRST_TOKEN + 1, stop_at_eos=False)
    # Untimed: one pass of the first chunk's shape, so that no chunk on the clock pays a first call's costs
    # (BLAS's threads starting, pages of a new cache) that the whole prompt's single pass would not.
    mixed_step(weights, config, [0], [KVCache.empty(config, 1)], chunks[0], KVCache.empty(config, len(chunks[0])))
    started = time.perf_counter()
    clock = lambda: (time.perf_counter() - started) * 1000  # noqa: E731
    events: list[dict] = []

    def happened(user: str, what: str, at: float) -> None:
        events.append({"user": user, "t_ms": at, "what": what})

    for _ in range(STREAMED_BEFORE_ARRIVAL):  # the streaming user alone: its prompt's last token, then decode
        before = clock()
        streaming.take(streaming.run_alone(), before, clock())
        happened("streaming", "token", clock())
    arrival = clock()
    if chunk_tokens is None:  # the streaming user waits for the whole prompt
        arriving.take(arriving.run_alone(), arrival, clock())
        happened("arriving", "token", clock())
    else:  # each chunk rides along with the streaming user's decode row, in one pass
        for i, chunk in enumerate(chunks):
            before = clock()
            decode_logits, chunk_logits = mixed_step(weights, config, streaming.consumed, [streaming.cache], chunk,
                                                     arriving.cache)
            now = clock()
            streaming.take(decode_logits[0], before, now)
            happened("streaming", "token", now)
            if i == len(chunks) - 1:
                arriving.take(chunk_logits, arrival, now)
            happened("arriving", "token" if i == len(chunks) - 1 else "prefill", now)
    for _ in range(DECODE_STEPS_AFTER_FIRST_TOKEN):  # both decode together: one batched pass
        before = clock()
        logits = decode_batch(weights, config, [*streaming.consumed, *arriving.consumed],
                              [streaming.cache, arriving.cache])
        now = clock()
        streaming.take(logits[0], before, now)
        arriving.take(logits[1], before, now)
        happened("streaming", "token", now)
        happened("arriving", "token", now)
    return [{**event, "t_ms": event["t_ms"] - arrival} for event in events]


