"""Batching and chunked prefill, measured: how a server feeds many users from one read of the weights.

Decode is memory-bound: each step reads every weight to produce one token. A server therefore
decodes B users' next tokens in one pass (`model.decode_batch`): every linear layer multiplies a
B-row matrix by its weights, read once, while attention runs per user over that user's own KV
cache. Until the step turns compute-bound its time barely grows with B, so tokens per second grow
almost B-fold while each user's wait per token stays put. `measure` times this on the real model,
for several B, and places each step on this machine's roofline (FLOPs and bytes from `cost.py`).

The knee is the batch size where the step stops being memory-bound. Measured: the first B whose
step takes at least 1.5 times the B=1 step. Predicted: per token a weight costs 2 FLOPs (a
multiply-add) and is read once for the batch, so B tokens make 2B FLOPs per weight of
`bytes_per_weight` bytes, and the ridge point (peak FLOP/s / bandwidth) is reached at
B = ridge × bytes_per_weight / 2. The KV cache, read per user, is left out, so the prediction is a
bound; it is also given for the projected devices (their spec sheets' ridge, `projections.py`).

Chunked prefill: a long prompt is cut into chunks that ride along with other users' decode rows
in one pass (`model.mixed_step`) instead of one pass that makes everyone wait for the whole
prompt. `measure` times one mixed step against the same work as two passes, then plays two
users on a real clock: one streaming its answer while another arrives with a long prompt, once
prefilled whole, once in chunks.

Timings are medians of repeated steps. The users' caches are filled by prefilling a few distinct
prompts and copying them (each user still has a cache of its own, read by its own attention): a
step's time depends on how many bytes it reads, not on what they hold, and prefilling 64 prompts
one by one would cost a minute.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .cost import batch_cost, kv_bytes_per_token
from .loader import LoadedModel
from .model import KVCache, decode_batch, decode_step, mixed_step, prefill
from .roofline import median_seconds
from .sweep import PASSAGE

SCHEMA = "prefill-decode-batch/1"
KNEE_SLOWDOWN = 1.5  # the measured knee: the first batch whose step takes this many times the B=1 step
FLOAT32_BYTES = 4  # the numpy model's weights
FLOPS_PER_WEIGHT_PER_TOKEN = 2  # one multiply-add
DISTINCT_PROMPTS = 4  # prompts prefilled for real; the other users' caches copy them
STREAMED_BEFORE_ARRIVAL = 2  # the streaming user's tokens on the clock before the second user arrives
DECODE_STEPS_AFTER_FIRST_TOKEN = 3  # steps shown once both users stream

Progress = Callable[[str, float | None], None] | None


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    return 1000 * median_seconds(run, repeats)


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


def _rewind(caches: Sequence[KVCache], length: int) -> None:
    """Forget the tokens decoded after `length`: the next step overwrites their rows."""
    for cache in caches:
        cache.length = length


def _utilization(flops: float, nbytes: float, ms: float, machine: dict[str, float]) -> dict[str, float]:
    seconds = ms / 1000
    return {"compute_utilization": flops / seconds / machine["peak_flops"],
            "bandwidth_utilization": nbytes / seconds / machine["bandwidth"]}


def batched_decode_rows(model: LoadedModel, caches: list[KVCache], batch_sizes: Sequence[int], context: int,
                        repeats: int, machine: dict[str, float], report: Callable[[str, float], None]) -> list[dict]:
    """Median step time of decode_batch for each batch size, every user's cache at `context` tokens.

    The sizes are timed in rounds, one step of every size per round (the first round a warm-up), so
    that the machine's drift during the measurement (a shared machine's neighbours, the settling after
    the users' prefill) reaches every size alike and the ratios between sizes stay fair."""
    shape, weights, config = model.config.shape, model.weights, model.config

    def step(batch: int) -> None:  # the same step each time: every cache back at `context`
        _rewind(caches[:batch], context)
        decode_batch(weights, config, tokens[:batch], caches[:batch])

    tokens = [int(user_prompt(model, user, context)[-1]) for user in range(max(batch_sizes))]
    seconds: dict[int, list[float]] = {batch: [] for batch in batch_sizes}
    for round_index in range(repeats + 1):
        report(f"batched decode: B = {', '.join(map(str, batch_sizes))} at a {context}-token context, "
               f"round {round_index + 1} of {repeats + 1}", round_index / (repeats + 1))
        for batch in batch_sizes:
            start = time.perf_counter()
            step(batch)
            if round_index:
                seconds[batch].append(time.perf_counter() - start)
    _rewind(caches, context)
    rows = []
    for batch in batch_sizes:
        step_ms = 1000 * statistics.median(seconds[batch])
        cost = batch_cost(shape, [(1, context)] * batch)
        rows.append({
            "batch": batch,
            "step_ms": step_ms,
            "tokens_per_s": batch / step_ms * 1000,
            "ms_per_token": step_ms,  # each user waits one step per token
            "flops": cost.flops,
            "bytes": cost.bytes,
            "intensity": cost.intensity,
            "weight_bytes": cost.weight_bytes,
            "kv_bytes": cost.kv_read_bytes + cost.kv_written_bytes,
            **_utilization(cost.flops, cost.bytes, step_ms, machine),
        })
    return rows


def measured_knee(rows: list[dict]) -> int | None:
    """The first batch whose step takes at least KNEE_SLOWDOWN times the B=1 step (None: none in range)."""
    base = next((row["step_ms"] for row in rows if row["batch"] == 1), None)
    if base is None:
        return None
    return next((row["batch"] for row in rows if row["step_ms"] >= KNEE_SLOWDOWN * base), None)


def predicted_knee(ridge: float, bytes_per_weight: float) -> float:
    """The batch at which 2·B FLOPs per weight read reach the ridge point (the KV cache left out: a bound)."""
    return ridge * bytes_per_weight / FLOPS_PER_WEIGHT_PER_TOKEN


def projected_knees() -> list[dict[str, Any]]:
    """The same prediction on the projected devices, from their spec sheets' ridge points (projected)."""
    from . import projection_data as sourced
    from . import projections

    devices = sourced.load_data("accelerators")["devices"]
    knees = []
    for model_id in sourced.default_models():
        for device_id, device in devices.items():
            for dtype in sourced.PROJECTION_DTYPES:
                peak_flops, bandwidth = projections.ceilings(device, dtype)
                ridge = peak_flops / bandwidth
                bytes_per_weight = sourced.bits_per_weight(model_id, dtype) / 8
                knees.append({"id": projections.projection_id(model_id, device_id, dtype), "model": model_id, "device": device_id,
                              "dtype": dtype, "bytes_per_weight": round(bytes_per_weight, 4),
                              "ridge": round(ridge, 1),
                              "predicted_batch": round(predicted_knee(ridge, bytes_per_weight), 1),
                              "projected": True})
    return knees


def chunked_rows(model: LoadedModel, streaming: list[KVCache], context: int, chunk_sizes: Sequence[int],
                 repeats: int, report: Callable[[str, float], None]) -> list[dict]:
    """One mixed step (decode rows + a chunk of C prompt tokens) against a decode pass plus a chunk's prefill."""
    weights, config = model.weights, model.config
    tokens = [int(user_prompt(model, user, context)[-1]) for user in range(len(streaming))]
    longest = max(chunk_sizes)
    arriving = user_prompt(model, DISTINCT_PROMPTS, max(1, longest))
    chunk_cache = KVCache.empty(config, max(1, longest))

    def decode_only() -> None:
        _rewind(streaming, context)
        decode_batch(weights, config, tokens, streaming)

    decode_ms = _median_ms(decode_only, repeats)  # the same decode pass for every chunk size
    rows = []
    for i, chunk in enumerate(chunk_sizes):
        report(f"chunked prefill: {len(streaming)} decode row(s) + a {chunk}-token chunk", i / len(chunk_sizes))

        def chunk_only(chunk=chunk) -> None:
            _rewind([chunk_cache], 0)
            prefill(weights, config, arriving[:chunk], chunk_cache)

        def together(chunk=chunk) -> None:
            _rewind([chunk_cache], 0)
            _rewind(streaming, context)
            mixed_step(weights, config, tokens, streaming, arriving[:chunk], chunk_cache)

        if chunk == 0:  # nothing rides along: the step is the decode pass
            step_ms = separate_ms = decode_ms
        else:
            step_ms = _median_ms(together, repeats)
            separate_ms = decode_ms + _median_ms(chunk_only, repeats)
        rows.append({"decode_rows": len(streaming), "chunk_tokens": chunk, "step_ms": step_ms,
                     "separate_ms": separate_ms})
    _rewind(streaming, context)
    return rows


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
    streamed_before = []
    for _ in range(STREAMED_BEFORE_ARRIVAL):
        token = int(np.argmax(decode_step(weights, config, token, streaming)))
        streamed_before.append(time.perf_counter())
    arrival = time.perf_counter()
    events = [{"user": "streaming", "t_ms": (t - arrival) * 1000, "what": "token"} for t in streamed_before]

    def happened(user: str, what: str) -> None:
        events.append({"user": user, "t_ms": (time.perf_counter() - arrival) * 1000, "what": what})

    if chunk_tokens is None:  # the streaming user waits for the whole prompt
        new_token = int(np.argmax(prefill(weights, config, prompt, arriving)[-1]))
        happened("arriving", "token")
    else:  # each chunk rides along with the streaming user's decode row
        for i, chunk in enumerate(chunks):
            decode_logits, chunk_logits = mixed_step(weights, config, [token], [streaming], chunk, arriving)
            token = int(np.argmax(decode_logits[0]))
            happened("streaming", "token")
            happened("arriving", "token" if i == len(chunks) - 1 else "prefill")
            events[-1]["t_ms"] = events[-2]["t_ms"]  # one pass: one moment
        new_token = int(np.argmax(chunk_logits))
    for _ in range(DECODE_STEPS_AFTER_FIRST_TOKEN):
        logits = decode_batch(weights, config, [token, new_token], [streaming, arriving])
        token, new_token = (int(i) for i in np.argmax(logits, axis=-1))
        happened("streaming", "token")
        happened("arriving", "token")
        events[-1]["t_ms"] = events[-2]["t_ms"]
    return events


def _rounded(value: Any) -> Any:
    """Floats to 4 significant digits, recursively: the page needs no more, and the JSON stays small."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def measure(
    model: LoadedModel,
    *,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
    context_tokens: int = 512,
    chunk_sizes: Sequence[int] = (0, 64, 128, 256, 512),
    two_users_prompt_tokens: int = 2048,
    two_users_chunk_tokens: int = 256,
    chunk_decode_rows: int = 1,
    repeats: int = 5,
    peaks: dict[str, Any] | None = None,
    progress: Progress = None,
) -> dict[str, Any]:
    """Batched decode, the knee, chunked prefill and the two-users timeline, measured on `model`.

    Returns the JSON-ready dict of schema prefill-decode-batch/1 (simulations/README.md). `peaks` are
    `roofline.measure_peaks()`'s result, measured here unless given.
    """
    from .roofline import measure_peaks

    _check_sizes(model, batch_sizes, context_tokens, chunk_sizes, two_users_prompt_tokens, two_users_chunk_tokens,
                 chunk_decode_rows, repeats)
    report = progress or (lambda message, fraction: None)
    if peaks is None:
        report("measuring this machine's peak FLOP/s and bandwidth", 0.0)
        peaks = measure_peaks()
    machine = {"peak_flops": peaks["peak_gflops"] * 1e9, "bandwidth": peaks["peak_gbps"] * 1e9}
    machine["ridge"] = machine["peak_flops"] / machine["bandwidth"]

    def stage(first: float, share: float) -> Callable[[str, float], None]:
        return lambda message, fraction: report(message, first + share * fraction)

    stage(0.0, 0.1)(f"prefilling {min(DISTINCT_PROMPTS, max(batch_sizes))} users' {context_tokens}-token prompts", 1)
    caches = prefilled_caches(model, max(max(batch_sizes), chunk_decode_rows), context_tokens, repeats + 2)
    rows = batched_decode_rows(model, caches, batch_sizes, context_tokens, repeats, machine, stage(0.1, 0.4))
    chunked = chunked_rows(model, caches[:chunk_decode_rows], context_tokens, chunk_sizes, max(1, repeats // 2),
                           stage(0.5, 0.25))
    del caches  # the two-users timeline needs the memory more
    timeline = two_users(model, context_tokens, two_users_prompt_tokens, two_users_chunk_tokens, stage(0.75, 0.25))
    report("batching measured", 1.0)
    return _rounded({
        "schema": SCHEMA,
        "model": model.name,
        "context_tokens": context_tokens,
        "machine": machine,
        "batch_sizes": rows,
        "kv_bytes_per_user": kv_bytes_per_token(model.config.shape) * context_tokens,
        "knee": {"measured_batch": measured_knee(rows),
                 "predicted_batch": predicted_knee(machine["ridge"], FLOAT32_BYTES),
                 "bytes_per_weight": FLOAT32_BYTES, "slowdown": KNEE_SLOWDOWN},
        "projected_knees": projected_knees(),
        "chunked": chunked,
        "two_users": timeline,
        "method": (
            f"Batched decode: B users, each with its own KV cache of {context_tokens} tokens, one token each per "
            "pass (every weight read once per pass, attention per user over its own cache); median of "
            f"{repeats} steps per B, timed in rounds of one step of every B after a warm-up round. FLOPs and bytes from simulations/cost.py (batch_cost); "
            "utilisation = achieved / this machine's measured peak (GEMM FLOP/s, copy or GEMV bytes/s). "
            f"Knee measured: first B whose step takes ≥ {KNEE_SLOWDOWN}× the B=1 step; predicted: ridge × bytes "
            "per weight ÷ 2 FLOPs per weight per token, the KV cache left out (a bound); projected knees use "
            "each device's spec-sheet ridge (projected, not measured). Chunked: one pass with the decode rows "
            "and a chunk of another prompt vs a decode pass plus the chunk's prefill pass, medians. Two users: "
            "played once on a wall clock, t = 0 when the second user arrives."
        ),
    })


def _check_sizes(model: LoadedModel, batch_sizes: Sequence[int], context: int, chunk_sizes: Sequence[int],
                 prompt_tokens: int, chunk_tokens: int, decode_rows: int, repeats: int) -> None:
    from .errors import PromptError

    problems = []
    if not batch_sizes or min(batch_sizes) < 1:
        problems.append(f"batch sizes must be at least 1, got {list(batch_sizes)}")
    if not chunk_sizes or min(chunk_sizes) < 0:
        problems.append(f"chunk sizes must be 0 or more, got {list(chunk_sizes)}")
    for name, value in (("context", context), ("two-users prompt", prompt_tokens), ("two-users chunk", chunk_tokens),
                        ("chunk decode rows", decode_rows), ("repeats", repeats)):
        if value < 1:
            problems.append(f"{name} must be at least 1, got {value}")
    longest = max(context + repeats + 2,
                  context + STREAMED_BEFORE_ARRIVAL + -(-prompt_tokens // chunk_tokens) + DECODE_STEPS_AFTER_FIRST_TOKEN,
                  prompt_tokens + DECODE_STEPS_AFTER_FIRST_TOKEN, max(chunk_sizes, default=0))
    if longest > model.config.max_context:
        problems.append(f"needs {longest} tokens of context, more than {model.name}'s "
                        f"{model.config.max_context} — allowed: a shorter context or prompt")
    if problems:
        raise PromptError("; ".join(problems))
