"""Batching and chunked prefill, measured: how a server feeds many users from one read of the weights.

A decode step reads every weight to produce one token. A server therefore decodes B users' next tokens
in one pass (`model.decode_batch`): every linear layer multiplies a B-row matrix by its weights, read
once, while attention runs per user over that user's own KV cache. `measure` times such steps on the
real model for several B, and sets each beside its floor on this machine: the roofline's time for its
FLOPs and bytes (`cost.roofline_seconds`, the weights counted once per step and every user's KV cache).

The knee is the batch where a step stops costing about what one user's does. Measured: the first B whose
step takes at least KNEE_SLOWDOWN times the B=1 step. Predicted: the first B whose step's intensity
reaches this machine's ridge point (`cost.first_compute_bound_batch`), each user's KV cache counted;
the weights-only figure (ridge × bytes per weight ÷ 2) is given beside it, as the bound the KV cache
moves. No real kernel reaches both peaks at once, so a step slows before the predicted knee.

Chunked prefill: a long prompt is cut into chunks that ride along with other users' decode rows in one
pass (`model.mixed_step`) instead of one pass that makes everyone wait for the whole prompt. `measure`
times one mixed step against the same work as two passes, then plays two users on a real clock
(`serving.two_users`).

Timings are medians of repeated steps. The users' caches are filled by prefilling a few distinct
prompts and copying them (`serving.prefilled_caches`): a step's time depends on how many bytes it
reads, not on what they hold.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import kernels
from .cost import (
    FLOAT32_BYTES,
    batch_cost,
    batch_intensity_limit,
    first_compute_bound_batch,
    kv_bytes_per_token,
    roofline_seconds,
)
from .loader import LoadedModel
from .model import KVCache, decode_batch, mixed_step, prefill
from .plans import PLANS
from .projections import KNEE_CONTEXTS, projected_knees
from .prompts import user_prompt
from .roofline import measure_peaks, median_seconds
from .serving import (
    DECODE_STEPS_AFTER_FIRST_TOKEN,
    DISTINCT_PROMPTS,
    STREAMED_BEFORE_ARRIVAL,
    prefilled_caches,
    rewind,
    two_users,
)

SCHEMA = "prefill-decode-batch/2"
KNEE_SLOWDOWN = 1.5  # the measured knee: the first batch whose step takes this many times the B=1 step
FLOPS_PER_WEIGHT_PER_TOKEN = 2  # one multiply-add

Progress = Callable[[str, float | None], None] | None


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    return 1000 * median_seconds(run, repeats)


def _utilization(flops: float, nbytes: float, ms: float, machine: dict[str, float]) -> dict[str, float]:
    seconds = ms / 1000
    return {"compute_utilization": flops / seconds / machine["peak_flops"],
            "bandwidth_utilization": nbytes / seconds / machine["bandwidth"]}


def batched_decode_rows(model: LoadedModel, caches: list[KVCache], batch_sizes: Sequence[int], context: int,
                        repeats: int, machine: dict[str, float], report: Callable[[str, float], None],
                        one_user_ms: float | None = None) -> list[dict]:
    """Median step time of decode_batch for each batch size, every user's cache at `context` tokens.

    The sizes are timed in rounds, one step of every size per round (the first round a warm-up), so
    that the machine's drift during the measurement (a shared machine's neighbours, the settling after
    the users' prefill) reaches every size alike and the ratios between sizes stay fair."""
    shape, weights, config = model.config.shape, model.weights, model.config

    def step(batch: int) -> None:  # the same step each time: every cache back at `context`
        rewind(caches[:batch], context)
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
    rewind(caches, context)
    rows = []
    for batch in batch_sizes:
        step_ms = 1000 * statistics.median(seconds[batch])
        if batch == 1 and one_user_ms is not None:
            step_ms = one_user_ms  # the same step measured once for the whole site (`measure`)
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
            "floor_ms": 1000 * roofline_seconds(cost.flops, cost.bytes, machine["peak_flops"], machine["bandwidth"]),
            **_utilization(cost.flops, cost.bytes, step_ms, machine),
        })
    return rows


def measured_knee(rows: list[dict]) -> int | None:
    """The first batch whose step takes at least KNEE_SLOWDOWN times the B=1 step (None: none in range)."""
    base = next((row["step_ms"] for row in rows if row["batch"] == 1), None)
    if base is None:
        return None
    return next((row["batch"] for row in rows if row["step_ms"] >= KNEE_SLOWDOWN * base), None)


def weights_only_knee(ridge: float, bytes_per_weight: float) -> float:
    """The batch at which 2·B FLOPs per weight read reach the ridge point, the KV cache left out: where the
    knee would lie if the weights were all a step read (the KV cache moves it later)."""
    return ridge * bytes_per_weight / FLOPS_PER_WEIGHT_PER_TOKEN


def chunked_rows(model: LoadedModel, streaming: list[KVCache], context: int, chunk_sizes: Sequence[int],
                 repeats: int, report: Callable[[str, float], None]) -> list[dict]:
    """One mixed step (decode rows + a chunk of C prompt tokens) against a decode pass plus a chunk's prefill."""
    weights, config = model.weights, model.config
    tokens = [int(user_prompt(model, user, context)[-1]) for user in range(len(streaming))]
    longest = max(chunk_sizes)
    arriving = user_prompt(model, DISTINCT_PROMPTS, max(1, longest))
    chunk_cache = KVCache.empty(config, max(1, longest))

    def decode_only() -> None:
        rewind(streaming, context)
        decode_batch(weights, config, tokens, streaming)

    decode_ms = _median_ms(decode_only, repeats)  # the same decode pass for every chunk size
    rows = []
    for i, chunk in enumerate(chunk_sizes):
        report(f"chunked prefill: {len(streaming)} decode row(s) + a {chunk}-token chunk", i / len(chunk_sizes))

        def chunk_only(chunk=chunk) -> None:
            rewind([chunk_cache], 0)
            prefill(weights, config, arriving[:chunk], chunk_cache)

        def together(chunk=chunk) -> None:
            rewind([chunk_cache], 0)
            rewind(streaming, context)
            mixed_step(weights, config, tokens, streaming, arriving[:chunk], chunk_cache)

        if chunk == 0:  # nothing rides along: the step is the decode pass
            step_ms = separate_ms = decode_ms
        else:
            step_ms = _median_ms(together, repeats)
            separate_ms = decode_ms + _median_ms(chunk_only, repeats)
        rows.append({"decode_rows": len(streaming), "chunk_tokens": chunk, "step_ms": step_ms,
                     "separate_ms": separate_ms})
    rewind(streaming, context)
    return rows


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
    batch_sizes: Sequence[int] = PLANS["site"].batch_sizes,
    context_tokens: int = PLANS["site"].batch_context,
    chunk_sizes: Sequence[int] = PLANS["site"].chunk_sizes,
    two_users_prompt_tokens: int = PLANS["site"].two_users_prompt_tokens,
    two_users_chunk_tokens: int = PLANS["site"].two_users_chunk_tokens,
    chunk_decode_rows: int = 1,
    repeats: int = 5,
    peaks: dict[str, Any] | None = None,
    one_user_ms: float | None = None,
    progress: Progress = None,
) -> dict[str, Any]:
    """Batched decode, the knee, chunked prefill and the two-users timeline, measured on `model`.

    `one_user_ms`: one user's decode step at `context_tokens`, measured already (the sweep's, which the
    decode chapters quote): the B = 1 row takes it, so the site has one figure for one measurement.

    Returns the JSON-ready dict of schema prefill-decode-batch/2 (simulations/README.md). `peaks` are
    `roofline.measure_peaks()`'s result, measured here unless given.
    """
    _check_sizes(model, batch_sizes, context_tokens, chunk_sizes, two_users_prompt_tokens, two_users_chunk_tokens,
                 chunk_decode_rows, repeats)
    report = progress or (lambda message, fraction: None)
    if peaks is None:
        report("measuring this machine's peak FLOP/s and bandwidth", 0.0)
        peaks = measure_peaks()
    machine = {"peak_flops": peaks["peak_gflops"] * 1e9, "bandwidth": peaks["peak_gbps"] * 1e9}
    machine["ridge"] = machine["peak_flops"] / machine["bandwidth"]
    shape = model.config.shape

    def stage(first: float, share: float) -> Callable[[str, float], None]:
        return lambda message, fraction: report(message, first + share * fraction)

    stage(0.0, 0.1)(f"prefilling {min(DISTINCT_PROMPTS, max(batch_sizes))} users' {context_tokens}-token prompts", 1)
    caches = prefilled_caches(model, max(max(batch_sizes), chunk_decode_rows), context_tokens, repeats + 2)
    rows = batched_decode_rows(model, caches, batch_sizes, context_tokens, repeats, machine, stage(0.1, 0.4),
                               one_user_ms)
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
        "kernels": kernels.describe(),
        "knee": {"measured_batch": measured_knee(rows),
                 "predicted_batch": first_compute_bound_batch(shape, context_tokens, machine["ridge"]),
                 "weights_only_batch": weights_only_knee(machine["ridge"], FLOAT32_BYTES),
                 "intensity_limit": batch_intensity_limit(shape, context_tokens),
                 "bytes_per_weight": FLOAT32_BYTES, "slowdown": KNEE_SLOWDOWN},
        "projected_knees": projected_knees(tuple(sorted({context_tokens, *KNEE_CONTEXTS}))),
        "chunked": chunked,
        "two_users": timeline,
        "method": (
            f"Batched decode: B users, each with its own KV cache of {context_tokens} tokens, one token each per "
            "pass (every weight read once per pass, attention per user over its own cache); median of "
            f"{repeats} steps per B, timed in rounds of one step of every B after a warm-up round; path: "
            f"{kernels.describe()}. FLOPs and bytes from simulations/cost.py (batch_cost); floor = the larger "
            "of bytes ÷ measured bandwidth and FLOPs ÷ measured GEMM peak; utilisation = achieved / measured "
            f"peak. Knee measured: first B whose step takes ≥ {KNEE_SLOWDOWN}× the B=1 step; predicted: the "
            "first B whose step's FLOPs per byte reach the ridge point, every user's KV cache counted "
            "(cost.first_compute_bound_batch; none when even unlimited users stay below it); projected knees "
            "use each device's spec-sheet ridge (projected, not measured). Chunked: one pass with the decode rows "
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
