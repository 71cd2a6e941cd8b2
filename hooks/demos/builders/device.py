"""The `device` demo: what the reader's own device needs to measure prefill and decode, and the build's side.

The browser runs a transformer with SmolLM2-135M's exact layer shapes in a Web Worker, only when the reader
presses the button: the published model's real weights in their own formats when the site carries them
(`live`, hooks/demos/model_chunks.py), else seeded random weights in float32. Everything it must not re-derive travels in this JSON:
the shapes, the FLOPs and bytes of each phase from the build's cost model (split into one layer's share
and the share outside the layers, so the worker can scale by the layers it measures), the plan (memory and
time budgets), the build machine's own measured figures to compare with, and the conditions that choose
each sentence describing the reader's result (evaluated by a tiny interpreter in device/claims.js).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos import model_chunks
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source
from hooks.demos.figures.common import round_floats
from hooks.demos.measurements import REFERENCE_PROMPT_TOKENS, Measurements
from hooks.demos.strings import Strings
from simulations.config import ModelConfig
from simulations.cost import pass_cost
from simulations.projection_data import load_data

SHAPES_MODEL = "smollm2-135m"  # simulations/data/models.json: the article's model, shapes cited there
PROMPT_TOKENS = REFERENCE_PROMPT_TOKENS  # TTFT of a 512-token prompt, decode at that context (as the build's roofline)
ROPE_THETA = 100_000.0  # SmolLM2's; speed does not depend on it, the correctness check does
RMS_EPS = 1e-5
WEIGHT_SEED = 135  # the worker's weights: a counter-based hash of (seed, tensor, index), see device/weights.js

# What a run may use. Memory: the model (weights split among the workers, KV cache, activations) fits
# `memory_budget_bytes`; the streaming ceiling's buffer is allocated, read and dropped before it, so the
# peak is the larger of the two. Time: each mode's budget for the model phases; the worker measures as many
# layers as fit both (at least one) and says how many. Prefill is repeated at least three times, decode
# is timed step by step, so both are reported as a median and a range, as llama-bench does.
PLAN: dict[str, Any] = {
    "memory_budget_bytes": 144_000_000,
    "low_memory_budget_bytes": 64_000_000,  # navigator.deviceMemory ≤ 2 GB, or a small GPU buffer limit
    # The streaming ceiling reads a buffer well beyond any last-level cache (server CPUs reach 100 MB and
    # more); a browser that refuses that much gets half, and so on down to the least.
    "stream_bytes": 256_000_000,
    "low_memory_stream_bytes": 64_000_000,
    "least_stream_bytes": 32_000_000,
    "ceiling_repeats": 12,  # each ceiling: the best of this many runs of its microbenchmark (each ~10–30 ms)
    "head_rows": 8192,  # LM-head rows measured (of the vocabulary), scaled to the whole vocabulary
    "max_layers": 8,
    "silence_limit_s": 60,  # no word from the worker for this long: the run failed (the page says so)
    "modes": {
        "quick": {"decode_steps": 8, "repeats": 3, "gemm_cap_s": 0.3, "phase_budget_s": 3, "max_layers": 2,
                  "estimate_s": 8},
        "full": {"decode_steps": 16, "repeats": 5, "gemm_cap_s": 1.0, "phase_budget_s": 10, "estimate_s": 20},
        # The tests' plan (the page's `?pd-device-plan=test`; never offered to a reader): the same steps on one
        # layer and a 128-token prompt (its costs come with it, see `build`), so a test run takes seconds even
        # on SwiftShader's WebGPU (half a GFLOP/s). The ceilings are measured as in the quick run: with an eighth
        # of the LM-head rows, three repeats or a 32 MB streaming buffer (about twice a 16 MB last-level
        # cache), a loaded test machine's ceiling fell below what decode then reached (16.8 of 16.0 GB/s).
        # The full-size runs are benchmarks/bench_device.py's.
        "test": {"decode_steps": 4, "repeats": 3, "gemm_cap_s": 0.3, "phase_budget_s": 0.5, "max_layers": 1,
                 "estimate_s": 3, "prompt_tokens": 128},
    },
    # Correctness check before measuring: a small model of the same architecture, prefill vs decode.
    "check": {"n_layers": 2, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "d_ff": 128,
              "vocab_size": 96, "tokens": 12, "tolerance": 1e-3},
}

# When a phase is called memory-bound or compute-bound on the reader's device: its arithmetic intensity
# against the ridge point of the two ceilings measured there (ratio = intensity ÷ ridge). Within a factor
# of BOUND_MARGIN of the ridge neither ceiling clearly binds, and the page says "near the ridge".
BOUND_MARGIN = 2.0


def _verdicts(phase: str) -> list[dict[str, Any]]:
    ratio = f"{phase}_ridge_ratio"
    return [
        {"key": f"device.claim_{phase}_memory", "if": [ratio, "<", 1 / BOUND_MARGIN]},
        {"key": f"device.claim_{phase}_near", "if": [[ratio, ">=", 1 / BOUND_MARGIN], [ratio, "<=", BOUND_MARGIN]]},
        {"key": f"device.claim_{phase}_compute", "if": [ratio, ">", BOUND_MARGIN]},
    ]


# Sentences about the reader's result, chosen in the browser by declarative conditions over its figures:
# `[left, op, right]`, or a list of them that must all hold. Names a condition may use: the numeric and
# yes/no fields of the device result (device/result.js), and build_ttft_ms, build_decode_ms_per_token and
# build_same_shapes from the build's side (demos/device.js).
CLAIMS: list[dict[str, Any]] = [
    *_verdicts("decode"),
    *_verdicts("prefill"),
    # Compared with the build only when the build measured the same shapes (not so with PD_MODEL=tiny).
    {"key": "device.claim_faster_than_build", "if": [["ttft_ms", "<", "build_ttft_ms"],
                                                     ["build_same_shapes", "==", True]]},
    {"key": "device.claim_slower_than_build", "if": [["ttft_ms", ">=", "build_ttft_ms"],
                                                     ["build_same_shapes", "==", True]]},
    {"key": "device.claim_software", "if": ["software", "==", True]},
]


def smollm2_config() -> ModelConfig:
    """SmolLM2-135M's shapes as a ModelConfig, from the cited models data (whatever model the build loads)."""
    m = load_data("models")["models"][SHAPES_MODEL]
    return ModelConfig(name=m["name"], arch="llama", n_layers=m["layers"], d_model=m["d_model"], n_heads=m["heads"],
                       n_kv_heads=m["kv_heads"], head_dim=m["head_dim"], d_ff=m["d_ff"], vocab_size=m["vocab"],
                       rope_theta=ROPE_THETA, rms_eps=RMS_EPS, max_context=m["max_context"],
                       tied_embeddings=m["tied_embeddings"])


def split_costs(config: ModelConfig, new_tokens: int, past_tokens: int,
                bytes_per_weight: float = 4.0) -> dict[str, dict[str, float]]:
    """A phase's cost as `outside_layers + layers × per_layer` (embedding, final norm and LM head outside),
    each the FLOPs and bytes of the build's closed-form cost model (weights of `bytes_per_weight` bytes)."""
    def counts(of: ModelConfig) -> dict[str, float]:
        cost = pass_cost(of.shape, new_tokens, past_tokens, bytes_per_weight=bytes_per_weight)
        return {"flops": cost.flops, "bytes": cost.bytes}

    total, outside = counts(config), counts(dataclasses.replace(config, n_layers=0))
    per_layer = {key: (total[key] - outside[key]) / config.n_layers for key in total}
    return {"total": total, "outside_layers": outside, "per_layer": per_layer}


def phase_costs(config: ModelConfig, prompt_tokens: int,
                bytes_per_weight: float = 4.0) -> dict[str, dict[str, dict[str, float]]]:
    """Prefill of a `prompt_tokens` prompt and one decode step after it, split as the worker scales them."""
    return {"prefill": split_costs(config, prompt_tokens, 0, bytes_per_weight),
            "decode": split_costs(config, 1, prompt_tokens, bytes_per_weight)}


def live_side(model: Any, config: ModelConfig) -> dict[str, Any] | None:
    """The published model (hooks/demos/model_chunks.py) when it has the shapes measured here: the worker then
    runs its real weights, in the file's own formats, and the costs count the bytes those formats hold."""
    live = model_chunks.live_model(model)
    if live is None or any(live.config.get(key) != getattr(config, key) for key in
                           ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size")):
        return None
    bytes_per_weight = sum(live.formats.values()) / config.shape.params
    return {"manifest": live.manifest_name, "model": live.name, "download_bytes": live.descriptor()["download_bytes"],
            "formats": live.formats, "bytes_per_weight": bytes_per_weight,
            "costs": phase_costs(config, PROMPT_TOKENS, bytes_per_weight)}


def shapes(config: Any) -> dict[str, Any]:
    return {"name": config.name, "n_layers": config.n_layers, "d_model": config.d_model, "n_heads": config.n_heads,
            "n_kv_heads": config.n_kv_heads, "head_dim": config.head_dim, "d_ff": config.d_ff,
            "vocab_size": config.vocab_size, "rope_theta": config.rope_theta, "rms_eps": config.rms_eps}


def same_shapes(summary: dict[str, Any], config: Any) -> bool:
    """Whether the build's model has the shapes the browser measures (not so with PD_MODEL=tiny)."""
    pairs = (("layers", "n_layers"), ("d_model", "d_model"), ("heads", "n_heads"), ("kv_heads", "n_kv_heads"),
             ("head_dim", "head_dim"), ("d_ff", "d_ff"), ("vocab_size", "vocab_size"))
    return all(summary.get(ours) == getattr(config, theirs) for ours, theirs in pairs)


def build_side(m: Measurements, config: Any) -> dict[str, Any]:
    """The build machine's peaks and its prefill and decode at 512 tokens, as its roofline measured them."""
    result = m.roofline()
    peaks, prefill, decode = result["machine"], result["prefill"], result["decode"]
    # What the page reads of each phase: its place on the roofline chart and its share of each ceiling.
    keep = ("intensity", "gflops", "compute_utilization", "bandwidth_utilization")
    return {"model": m.simulator.model_name, "same_shapes": same_shapes(m.simulator.model_summary(), config),
            "prompt_tokens": result["prompt_tokens"],
            "peak_gflops": peaks["peak_gflops"], "peak_gbps": peaks["peak_gbps"],
            "ttft_ms": prefill["ms"], "decode_ms_per_token": decode["ms"], "tps": 1000.0 / decode["ms"],
            "prefill": {k: prefill[k] for k in keep}, "decode": {k: decode[k] for k in keep}}


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    """The demo JSON: shapes, costs, plan, claims and the build's figures; the fallback lists the build's."""
    lang = strings.lang
    config = smollm2_config()
    build = round_floats(build_side(m, config))
    measured = measured_source(m.roofline()["machine"], build["model"], strings)
    # A mode with a prompt of its own (the tests') carries the costs of that prompt.
    plan = {**PLAN, "modes": {name: {**mode, "costs": phase_costs(config, mode["prompt_tokens"])}
                              if "prompt_tokens" in mode else mode for name, mode in PLAN["modes"].items()}}
    data = {**base(block, strings), "model": shapes(config),
            "workload": {"prompt_tokens": PROMPT_TOKENS, "weight_seed": WEIGHT_SEED},
            "costs": phase_costs(config, PROMPT_TOKENS),
            "plan": plan, "claims": CLAIMS, "verdict_margin": BOUND_MARGIN, "build": build}
    live = live_side(m.simulator.model, config)
    if live is not None:
        data["live"] = round_floats(live)
        data["strings"] = {**data["strings"], **strings.section("live")}
    rows = [(strings["device.peak_compute"], fmt.with_unit(build["peak_gflops"], "GFLOP/s", lang)),
            (strings["device.peak_bandwidth"], fmt.with_unit(build["peak_gbps"], "GB/s", lang)),
            (strings.format("device.ttft_at", tokens=fmt.count(PROMPT_TOKENS, lang)), fmt.ms(build["ttft_ms"], lang)),
            (strings["common.ms_per_token"], fmt.ms(build["decode_ms_per_token"], lang)),
            (strings["common.tps"], fmt.tps(build["tps"], lang)),
            (strings["device.prefill_compute_util"], fmt.percent(build["prefill"]["compute_utilization"], lang)),
            (strings["device.decode_bandwidth_util"], fmt.percent(build["decode"]["bandwidth_utilization"], lang))]
    caption = strings.format("device.build_caption", model=build["model"])
    return Demo(data, fallback(block, strings, measured=measured, rows=rows, build_caption=caption))
