"""record(): run one prompt through the model and return everything it did, as JSON-ready data.

Schema "prefill-decode-trace/1" (JSON Schema in trace.schema.json, documented in README.md).
Step 0 is the prefill: it consumes the whole prompt and produces the first answer token. Each
decode step consumes the previous token and produces the next one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import kernels
from .errors import PromptError
from .generate import Step, generate
from .loader import LoadedModel, model_summary
from .machine import machine_info
from .model import KVCache, softmax
from .timing import summarize

SCHEMA = "prefill-decode-trace/1"
TOP_CANDIDATES = 5
KV_SLICE_DIMS = 16  # first dimensions of KV head 0 kept for the heatmap
TIMED_RUNS = 5  # generations timed: each step's start and end are their medians (a decode step, under 50 ms, needs 5)

Progress = Callable[[str, float | None], None]


def _rounded(values: np.ndarray, digits: int) -> list[float]:
    return [round(float(v), digits) for v in values]


def _top(model: LoadedModel, logits: np.ndarray) -> list[dict]:
    probs = softmax(logits.astype(np.float64))
    best = np.argsort(-probs)[:TOP_CANDIDATES]
    shown = [model.tokenizer.display([int(i)])[0] for i in best]
    return [{"id": int(i), "text": s["text"], "prob": round(float(probs[i]), 6)} for i, s in zip(best, shown, strict=True)]


def _step(step: Step, model: LoadedModel) -> dict:
    out = {
        "index": step.index, "phase": step.phase, "token_ids": step.token_ids,
        "start_ms": round(step.start_ms, 3), "end_ms": round(step.end_ms, 3),
        "flops": step.cost.flops, "bytes": step.cost.bytes_dict(),
        "kv_tokens": step.kv_tokens, "kv_bytes": step.kv_bytes, "top": _top(model, step.logits),
    }
    if step.attention is not None:
        out["attention"] = {"layers": list(range(model.config.n_layers)), "weights": _rounded(step.attention, 5)}
    return out


def prepare_prompt(model: LoadedModel, prompt: str, chat: bool, system_prompt: str | None) -> tuple[dict, list[int], dict]:
    """(the trace's `prompt`, its token ids, the system-prompt settings); raises PromptError for empty or
    too-long prompts. `prompt`: the reader's text, the text the model read, and its tokens as shown, each
    with its bytes and its role ("template", "system", or "user": the reader's own words)."""
    if not prompt or not prompt.strip():
        raise PromptError("the prompt is empty — give some text to send to the model")
    if chat:
        rendered = model.tokenizer.render_chat(prompt, system_prompt)
        text, spans = rendered.text, rendered.spans
        system = {"system_prompt": rendered.system_prompt, "system_prompt_is_default": rendered.system_prompt_is_default}
    else:
        text, spans = prompt, {"user": (0, len(prompt))}
        system = {"system_prompt": None, "system_prompt_is_default": False}
    ids = model.tokenizer.encode(text)
    limit = model.config.max_context
    if len(ids) >= limit:
        raise PromptError(
            f"the prompt is {len(ids)} tokens; the model's context holds {limit} tokens including the answer"
        )
    roles = model.tokenizer.roles(ids, text, spans)
    tokens = [{**shown, "role": role} for shown, role in zip(model.tokenizer.display(ids), roles, strict=True)]
    return {"text": prompt, "rendered": text, "tokens": tokens, "chars": len(prompt)}, ids, system


def _timing(runs: list[list[tuple[float, float]]]) -> dict:
    """Each run's TTFT and mean decode step, as series: their samples, median and spread (`timing.summarize`)."""
    def series(samples: list[float]) -> dict:
        s = summarize(samples)
        return {"value": s.median, "median": s.median, "spread": s.spread, "low": s.low, "high": s.high,
                "repeats": s.repeats, "samples": [round(v, 3) for v in samples]}
    out = {"runs": len(runs), "ttft_ms": series([run[0][1] for run in runs])}
    if len(runs[0]) > 1:
        out["decode_ms_per_token"] = series([float(np.mean([end - start for start, end in run[1:]])) for run in runs])
    return out


def record(model: LoadedModel, prompt: str, *, max_new_tokens: int = 64, chat: bool = True,
           system_prompt: str | None = None, temperature: float = 0.0, top_k: int | None = None, seed: int = 0,
           timed_runs: int = TIMED_RUNS, progress: Progress | None = None) -> dict:
    """Generate an answer to `prompt` and return the trace (see README.md for every field). The same tokens are
    generated `timed_runs` times in all: each step's times are their medians, and `timing` holds each run's TTFT
    and mean decode step as series with their spread."""
    if max_new_tokens < 1:
        raise PromptError("max_new_tokens must be at least 1")
    prompt_json, prompt_ids, system = prepare_prompt(model, prompt, chat, system_prompt)
    max_new_tokens = min(max_new_tokens, model.config.max_context - len(prompt_ids))
    tokenizer = model.tokenizer
    cache = KVCache.empty(model.config, len(prompt_ids) + max_new_tokens - 1)

    progress = progress or (lambda message, fraction: None)
    progress(f"prefill: {len(prompt_ids)} prompt tokens", 0.0)
    steps, generated = [], []
    for step in generate(model, prompt_ids, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
                         seed=seed, attention=True, cache=cache):
        steps.append(_step(step, model))
        generated.append(step.token)
        if len(steps) < max_new_tokens:
            progress(f"decode: token {len(steps) + 1}/{max_new_tokens}", len(steps) / max_new_tokens)

    timed = [[(s["start_ms"], s["end_ms"]) for s in steps]]  # each run's (start, end) per step
    for run in range(1, max(timed_runs, 1)):  # the same tokens again (greedy, or the same seed), timed only
        progress(f"timing: run {run + 1} of {timed_runs}", None)
        again = list(generate(model, prompt_ids, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
                              seed=seed))
        timed.append([(step.start_ms, step.end_ms) for step in again])
        for step_json, step in zip(steps, again, strict=True):
            step_json.setdefault("runs", [[step_json["start_ms"], step_json["end_ms"]]])
            step_json["runs"].append([step.start_ms, step.end_ms])
    for step_json in steps:  # per index, the median of ordered times is ordered: the steps stay in sequence
        runs = step_json.pop("runs", None)
        if runs:
            step_json["start_ms"] = round(float(np.median([r[0] for r in runs])), 3)
            step_json["end_ms"] = round(float(np.median([r[1] for r in runs])), 3)
    for step_json, shown in zip(steps, tokenizer.display(generated), strict=True):
        step_json["token"] = shown
    stop_reason = "eos" if generated[-1] in tokenizer.stop_ids else "max_new_tokens"
    answer_ids = generated[:-1] if stop_reason == "eos" else generated
    layer = model.config.n_layers // 2  # the K/V kept are the middle layer's: the first layers' are nearly positional
    n_prompt, dims = len(prompt_ids), min(KV_SLICE_DIMS, model.config.head_dim)
    return {
        "schema": SCHEMA,
        "model": model_summary(model),
        "machine": machine_info(kernels=kernels.describe()),
        "settings": {"max_new_tokens": max_new_tokens, "chat": chat, **system, "temperature": temperature,
                     "top_k": top_k, "seed": seed},
        "prompt": prompt_json,
        "steps": steps,
        "timing": _timing(timed),
        "kv_slice": {
            "layer": layer, "kv_head": 0, "dims": dims,
            "k": [_rounded(row, 4) for row in cache.k[layer, 0, :n_prompt, :dims]],
            "v": [_rounded(row, 4) for row in cache.v[layer, 0, :n_prompt, :dims]],
        },
        "answer": tokenizer.decode(answer_ids),
        "answer_tokens": len(answer_ids),
        "stop_reason": stop_reason,
    }
