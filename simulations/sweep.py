"""Measured sweeps on the real model: how TTFT and decode speed change with prompt length, and what
the KV cache saves over recomputing every position.

Prompts of an exact length are built from a real English passage: its token ids are repeated and cut
to the length needed (see `prompt_of_length`). Repeated text costs the same as fresh text — every
matmul and attention score depends on how many tokens there are, not on which — so the timings are
those of any prompt of that length. Generation is greedy (argmax), so the cached and recomputed
paths can be compared token for token.

Every point is the median of repeated runs. Long prompts get fewer repeats (`repeats_for`) so the
whole sweep stays affordable on a 2-core machine.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import kernels
from .errors import PromptError
from .generate import Step, generate
from .loader import LoadedModel, model_summary
from .machine import machine_info
from .plans import PLANS
from .prompts import PASSAGE, prompt_of_length  # noqa: F401  (PASSAGE: re-exported)

Progress = Callable[[str, float | None], None] | None

PREFILL_TOKEN_BUDGET = 4096  # prompt tokens per sweep point across its repeats; caps long prompts' repeats
RECOMPUTE_TOKEN_BUDGET = 1024  # context tokens recomputed per cache-vs-recompute point


def repeats_for(n_tokens: int, repeats: int, budget: int = PREFILL_TOKEN_BUDGET) -> int:
    """Repeats for one point: `repeats`, fewer when that would exceed `budget` tokens, at least one."""
    return max(1, min(repeats, budget // n_tokens))


def timed_runs(model: LoadedModel, n_tokens: int, decode_steps: int, repeats: int) -> list[list[Step]]:
    """`repeats_for(n_tokens, repeats)` timed runs: an `n_tokens` prompt's prefill, then `decode_steps` steps."""
    prompt = prompt_of_length(model, n_tokens)
    return [list(generate(model, prompt, max_new_tokens=decode_steps + 1, stop_at_eos=False))
            for _ in range(repeats_for(n_tokens, repeats))]


def prompt_length_point(model: LoadedModel, n_tokens: int, decode_steps: int, repeats: int,
                        runs: list[list[Step]] | None = None) -> dict[str, Any]:
    """TTFT and decode speed at one prompt length, as medians over repeated runs (`runs`, timed here if None)."""
    runs = runs or timed_runs(model, n_tokens, decode_steps, repeats)
    ttft_ms = statistics.median(run[0].ms for run in runs)
    decode_ms = statistics.median(statistics.median(s.ms for s in run[1:]) for run in runs) if decode_steps else None
    return {
        "prompt_tokens": n_tokens,
        "ttft_ms": ttft_ms,
        "decode_ms_per_token": decode_ms,
        "tps": 1000 / decode_ms if decode_ms else None,
        "prefill_tokens_per_s": n_tokens / ttft_ms * 1000,
        "repeats": len(runs),
        "decode_steps": decode_steps,
        "ttft_ms_runs": [run[0].ms for run in runs],
        "kv_bytes": runs[0][0].kv_bytes,
    }


def cache_vs_recompute_point(model: LoadedModel, context: int, decode_steps: int,
                             cached_runs: list[list[Step]] | None = None) -> dict[str, Any]:
    """Decode ms/token at `context` with the KV cache and by recomputing everything, plus their tokens.
    `cached_runs`: runs at this prompt length already timed (the sweep's own), so that one context has one
    cached figure wherever it is quoted (`prompt_length_point`'s median of the runs' medians)."""
    cached_runs = cached_runs or timed_runs(model, context, decode_steps, 1)
    cached = cached_runs[0]
    # The cached run's step i consumes token i and yields token i+1; recompute the same steps from
    # the prompt plus the prefill's first token, without a KV cache (the whole sequence each time).
    n_recompute = max(1, min(decode_steps, RECOMPUTE_TOKEN_BUDGET // context))
    recomputed = list(generate(model, [*cached[0].token_ids, cached[0].token], max_new_tokens=n_recompute,
                               stop_at_eos=False, recompute=True))
    cached_ms = statistics.median(statistics.median(step.ms for step in run[1:]) for run in cached_runs)
    recompute_ms = statistics.median(step.ms for step in recomputed)
    cached_tokens, recomputed_tokens = [step.token for step in cached[1:]], [step.token for step in recomputed]
    return {
        "context": context,
        "cached_ms_per_token": cached_ms,
        "recompute_ms_per_token": recompute_ms,
        "speedup": recompute_ms / cached_ms,
        "cached_steps": decode_steps,
        "recompute_steps": n_recompute,
        "cached_tokens": cached_tokens,
        "recompute_tokens": recomputed_tokens,
        "identical_tokens": cached_tokens[:n_recompute] == recomputed_tokens,
    }


def check_lengths(model: LoadedModel, lengths: Sequence[int], decode_steps: int, what: str) -> None:
    """Fail, naming the allowed range, if a prompt of any of `lengths` plus its decode steps overflows the context."""
    too_long = [n for n in lengths if n + decode_steps + 1 > model.config.max_context]
    if too_long:
        raise PromptError(
            f"{what} {too_long} plus {decode_steps} decode steps exceed {model.name}'s context of "
            f"{model.config.max_context} tokens — allowed: up to {model.config.max_context - decode_steps - 1}"
        )


def sweep(model: LoadedModel, prompt_lengths: Sequence[int] = PLANS["site"].prompt_lengths, decode_steps: int = 16,
          repeats: int = 3, contexts: Sequence[int] = PLANS["site"].contexts,
          progress: Progress = None) -> dict[str, Any]:
    """Prompt-length sweep (TTFT, decode ms/token, TPS) and cache-vs-recompute, measured on `model`."""
    check_lengths(model, prompt_lengths, decode_steps, "prompt lengths")
    check_lengths(model, contexts, decode_steps, "contexts")
    report = progress or (lambda message, fraction: None)
    total = len(prompt_lengths) + len(contexts)
    started = time.perf_counter()
    # Untimed warm-up: start BLAS threads and fill the caches before the first timing.
    timed_runs(model, min(64, model.config.max_context - 3), 2, 1)

    points, runs_at = [], {}
    for i, n in enumerate(prompt_lengths):
        report(f"prompt of {n} tokens: prefill + {decode_steps} decode steps", i / total)
        runs_at[n] = timed_runs(model, n, decode_steps, repeats)
        points.append(prompt_length_point(model, n, decode_steps, repeats, runs_at[n]))
    comparisons = []
    for j, context in enumerate(contexts):
        report(f"context {context}: KV cache vs recompute", (len(prompt_lengths) + j) / total)
        # A context that is also a prompt length reuses that point's runs: one measurement, one number.
        reused = runs_at.get(context) if decode_steps else None
        comparisons.append(cache_vs_recompute_point(model, context, decode_steps, reused))
    report("sweep done", 1.0)

    return {
        "prompt_lengths": points,
        "cache_vs_recompute": comparisons,
        "identical_tokens": all(c["identical_tokens"] for c in comparisons),
        "machine": machine_info(kernels=kernels.describe()),
        "model": model_summary(model),
        "settings": {"decode_steps": decode_steps, "repeats": repeats, "sampling": "greedy"},
        "method": (
            "Prompts of exact length: the token ids of a fixed English passage, repeated and cut. "
            "TTFT = wall time of prefill (prompt -> first token's logits). decode_ms_per_token = median "
            f"of {decode_steps} greedy decode steps with the KV cache after that prefill; tps = 1000 / it. "
            f"Each point is the median over repeats (fewer for long prompts: at most {PREFILL_TOKEN_BUDGET} "
            "prompt tokens per point). Recompute = forward_without_cache over the whole sequence per new "
            f"token, for as many tokens as fit {RECOMPUTE_TOKEN_BUDGET} context tokens (at least one)."
        ),
        "seconds": time.perf_counter() - started,
    }
