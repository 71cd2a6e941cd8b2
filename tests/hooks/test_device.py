"""The device demo's JSON: everything the browser's worker needs, taken from the build (shapes, the cost
model's FLOPs and bytes, the build machine's figures), and conditions it can evaluate without code."""

from __future__ import annotations

import json

import numpy as np
import pytest
import wasmtime

from hooks.demos import wasm
from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.builders.device import BOUND_MARGIN, CLAIMS, PLAN, PROMPT_TOKENS, smollm2_config, split_costs
from hooks.demos.strings import Strings
from simulations import model as M
from simulations.cost import pass_cost

OPERATORS = {"<", "<=", ">", ">=", "==", "!="}
# The figures a claim may name: the fields of the worker's result (device/result.js) and the build's.
RESULT_FIGURES = {"decode_intensity", "prefill_intensity", "ridge", "ttft_ms", "decode_ms_per_token", "software",
                  "decode_ridge_ratio", "prefill_ridge_ratio",
                  "peak_gflops", "peak_gbps", "build_ttft_ms", "build_decode_ms_per_token", "build_same_shapes"}


def device_data(measurements, strings: Strings) -> dict:
    block = parse_blocks("```demo\nkind: device\n```\n", "docs/zh/bottleneck.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    return BUILDERS["device"](block, measurements, strings).data


def test_device_demo_ships_smollm2_shapes_whatever_model_the_build_loads(measurements, strings: Strings):
    data = device_data(measurements, strings)
    json.dumps(data, allow_nan=False)
    assert data["kind"] == "device" and data["schema"] == "prefill-decode-demo/2"
    assert {k: data["model"][k] for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff",
                                          "vocab_size")} == {"n_layers": 30, "d_model": 576, "n_heads": 9,
                                                             "n_kv_heads": 3, "head_dim": 64, "d_ff": 1536,
                                                             "vocab_size": 49152}
    assert all(key.split(".")[0] in ("common", "device") for key in data["strings"])
    # The tests' plan carries the costs of its own, shorter prompt; the readers' modes use the workload's.
    test = data["plan"]["modes"]["test"]
    assert test["costs"]["prefill"] == split_costs(smollm2_config(), test["prompt_tokens"], 0)
    assert "costs" not in data["plan"]["modes"]["quick"] and "costs" not in PLAN["modes"]["test"]


def test_costs_are_the_build_cost_model_split_into_layers_and_the_rest():
    config = smollm2_config()
    for new, past in ((512, 0), (1, 512)):
        costs = split_costs(config, new, past)
        cost = pass_cost(config.shape, new, past)
        assert costs["total"]["flops"] == cost.flops
        assert costs["total"]["bytes"] == cost.weight_bytes + cost.kv_read_bytes + cost.kv_written_bytes
        for key in ("flops", "bytes"):
            rebuilt = costs["outside_layers"][key] + config.n_layers * costs["per_layer"][key]
            assert rebuilt == pytest.approx(costs["total"][key])
    prefill, decode = split_costs(config, 512, 0)["total"], split_costs(config, 1, 512)["total"]
    assert prefill["flops"] / prefill["bytes"] > 100 * decode["flops"] / decode["bytes"]


def test_build_side_is_the_build_machines_own_roofline_measurement(measurements, strings: Strings):
    build = device_data(measurements, strings)["build"]
    result = measurements.roofline()
    assert build["peak_gflops"] == pytest.approx(result["machine"]["peak_gflops"], rel=1e-3)
    assert build["ttft_ms"] == pytest.approx(result["prefill"]["ms"], rel=1e-3)
    assert build["decode_ms_per_token"] == pytest.approx(result["decode"]["ms"], rel=1e-3)
    assert build["same_shapes"] is False  # the tests' tiny model: the page says the two are not comparable


def test_every_claim_has_a_declarative_condition_over_known_figures_and_a_label(strings: Strings):
    for claim in CLAIMS:
        condition = claim["if"]
        for left, op, right in condition if isinstance(condition[0], list) else [condition]:
            assert op in OPERATORS
            assert left in RESULT_FIGURES
            assert right in RESULT_FIGURES or isinstance(right, bool | int | float)
        assert strings[claim["key"]]


def test_plan_fits_the_memory_promise_and_repeats_enough_for_a_spread():
    assert PLAN["memory_budget_bytes"] <= 150e6
    # The streaming buffer is read and dropped before the model is built: well beyond any cache, within reason.
    assert 256e6 <= PLAN["stream_bytes"] <= 512e6 and PLAN["low_memory_stream_bytes"] <= PLAN["low_memory_budget_bytes"]
    assert PLAN["modes"]["full"]["estimate_s"] <= 20 and PLAN["modes"]["quick"]["estimate_s"] < 20
    assert all(mode["repeats"] >= 3 and mode["decode_steps"] >= 3 for mode in PLAN["modes"].values())
    # The tests' plan measures less than the quick one: fewer layers and a shorter prompt. Of the plan-wide sizes it
    # shares only max_layers (a mode's own cap, as the quick mode's), so its ceilings are measured as for a reader.
    test, quick = PLAN["modes"]["test"], PLAN["modes"]["quick"]
    assert {key for key in test if key in PLAN} == {"max_layers"}
    assert test["prompt_tokens"] < PROMPT_TOKENS
    assert test["max_layers"] < quick["max_layers"]


# --- the WebAssembly kernels, run from Python by wasmtime against numpy ----------------------------

class Kernels:
    """One instance of a compiled variant, with float32 arrays in and out of its memory."""

    def __init__(self, variant: str) -> None:
        config = wasmtime.Config()
        config.wasm_relaxed_simd = True
        engine = wasmtime.Engine(config)
        self.store = wasmtime.Store(engine)
        instance = wasmtime.Instance(self.store, wasmtime.Module(engine, wasm.kernels(variant)), [])
        self.exports = instance.exports(self.store)
        self.memory = self.exports["memory"]
        self.memory.grow(self.store, 256)  # 16 MiB
        self.used = 1024

    def put(self, array: np.ndarray) -> int:
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        ptr, self.used = self.used, self.used + (len(data) + 15) // 16 * 16 + 16
        self.memory.write(self.store, data, ptr)
        return ptr

    def get(self, ptr: int, shape: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod(shape))
        return np.frombuffer(bytes(self.memory.read(self.store, ptr, ptr + 4 * count)), dtype=np.float32).reshape(shape)

    def __call__(self, name: str, *args):
        return self.exports[name](self.store, *args)


@pytest.fixture(params=wasm.VARIANTS)
def kernels(request) -> Kernels:
    return Kernels(request.param)


def test_both_variants_compile_from_the_text_source_and_differ_only_in_the_multiply_add():
    text = wasm.SOURCE.read_text(encoding="utf-8")
    relaxed, plain = wasm.expand(text, "relaxed"), wasm.expand(text, "simd")
    assert "(MADD" not in relaxed and "(MADD" not in plain
    assert relaxed.count("(f32x4.relaxed_madd") == text.count("(MADD") > 0 and "(f32x4.relaxed" not in plain
    assert wasm.kernels("relaxed") != wasm.kernels("simd")
    with pytest.raises(ValueError, match="allowed: relaxed, simd"):
        wasm.expand(text, "avx")


@pytest.mark.parametrize(("T", "N", "K"), [(1, 7, 16), (1, 96, 64), (4, 130, 64), (7, 65, 24), (12, 3, 8), (9, 200, 576)])
def test_matmul_kernel_matches_numpy_for_every_tile_and_leftover(kernels: Kernels, T: int, N: int, K: int):
    rng = np.random.default_rng(T * 1000 + N)
    x, w = rng.standard_normal((T, K), dtype=np.float32), rng.standard_normal((N, K), dtype=np.float32)
    residual = rng.standard_normal((T, N), dtype=np.float32)
    xp, wp, yp = kernels.put(x), kernels.put(w), kernels.put(residual)
    kernels("matmul", xp, wp, yp, T, N, K, 1)
    np.testing.assert_allclose(kernels.get(yp, (T, N)), residual + x @ w.T, rtol=1e-4, atol=1e-4)
    kernels("matmul", xp, wp, yp, T, N, K, 0)
    np.testing.assert_allclose(kernels.get(yp, (T, N)), x @ w.T, rtol=1e-4, atol=1e-4)


def test_stream_sum_reads_every_byte_once(kernels: Kernels):
    data = np.random.default_rng(1).standard_normal(32 * 300, dtype=np.float32)
    assert kernels("stream_sum", kernels.put(data), data.nbytes) == pytest.approx(float(data.sum(dtype=np.float64)), abs=1e-3)


@pytest.mark.parametrize(("rows", "past"), [(12, 0), (1, 11), (5, 7)])
def test_attention_kernel_matches_the_models_attention(kernels: Kernels, rows: int, past: int):
    heads, kv, hd, max_tokens = 4, 2, 16, 20
    rng = np.random.default_rng(rows + past)
    qkv = rng.standard_normal((rows, (heads + 2 * kv) * hd), dtype=np.float32) * 2
    k_cache = rng.standard_normal((kv, max_tokens, hd), dtype=np.float32)
    v_cache = rng.standard_normal((kv, max_tokens, hd), dtype=np.float32)
    # The new rows' keys and values are already in the cache at positions past…, as kvWrite leaves them.
    k_cache[:, past:past + rows] = qkv[:, heads * hd:(heads + kv) * hd].reshape(rows, kv, hd).transpose(1, 0, 2)
    v_cache[:, past:past + rows] = qkv[:, (heads + kv) * hd:].reshape(rows, kv, hd).transpose(1, 0, 2)
    pointers = [kernels.put(qkv), kernels.put(k_cache), kernels.put(v_cache), kernels.put(np.zeros((rows, heads * hd))),
                kernels.put(np.zeros(max_tokens + 4))]
    kernels("attention", *pointers, rows, past, heads, kv, hd, max_tokens, float(np.float32(1 / np.sqrt(hd))))
    keys = past + rows
    expected = M.attention(qkv[:, :heads * hd].reshape(rows, heads, hd), k_cache[:, :keys], v_cache[:, :keys])
    np.testing.assert_allclose(kernels.get(pointers[3], (rows, heads * hd)), expected, rtol=1e-4, atol=1e-5)


def test_each_phase_gets_exactly_one_verdict_whatever_its_intensity():
    for phase in ("prefill", "decode"):
        verdicts = [c for c in CLAIMS if c["key"].startswith(f"device.claim_{phase}_")]
        for ratio in (0.01, 1 / BOUND_MARGIN - 1e-9, 1 / BOUND_MARGIN, 1.0, BOUND_MARGIN, BOUND_MARGIN + 1e-9, 100.0):
            held = [c["key"] for c in verdicts if holds(c["if"], {f"{phase}_ridge_ratio": ratio})]
            assert len(held) == 1, (phase, ratio, held)


def holds(condition, values) -> bool:
    """device/claims.js's interpreter, for the verdicts' conditions."""
    if isinstance(condition[0], list):
        return all(holds(part, values) for part in condition)
    left, op, right = condition
    a, b = values.get(left, left), values.get(right, right) if isinstance(right, str) else right
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]
