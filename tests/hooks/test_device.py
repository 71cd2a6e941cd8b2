"""The device demo's JSON: everything the browser's worker needs, taken from the build (shapes, the cost
model's FLOPs and bytes, the build machine's figures), and conditions it can evaluate without code."""

from __future__ import annotations

import json

import pytest

from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.builders.device import CLAIMS, PLAN, smollm2_config, split_costs
from hooks.demos.strings import Strings
from simulations.cost import pass_cost

OPERATORS = {"<", "<=", ">", ">=", "==", "!="}
# The figures a claim may name: the fields of the worker's result (device/result.js) and the build's.
RESULT_FIGURES = {"decode_intensity", "prefill_intensity", "ridge", "ttft_ms", "decode_ms_per_token", "software",
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


def test_plan_fits_the_memory_promise():
    assert PLAN["memory_budget_bytes"] <= 150e6 and PLAN["stream_bytes"] < PLAN["memory_budget_bytes"]
    assert PLAN["modes"]["full"]["estimate_s"] <= 20 and PLAN["modes"]["quick"]["estimate_s"] < 20
