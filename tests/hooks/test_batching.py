"""The batching chapter's build side: its figures in the prose, its demo's JSON and static fallback.

The batch measurement is the hand-made contract result of tests/hooks/conftest.py (`fake_batch`): a flat
step time up to B = 8, a knee at 16, a stall of 400 ms that chunking cuts to 30 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.render import render_demo
from simulations.plans import plan_for

REPO = Path(__file__).resolve().parents[2]
H100 = "llama-3.1-8b/h100-sxm/fp16"


def figure(measurements, name: str, lang: str = "en"):
    return FigureResolver(lang, measurements, None).figure(name)


def batching_block(measurements, body: str = "kind: batching\n"):
    limits = Limits(model_name="tiny", max_context=8192, count_prompt_tokens=len,
                    projection_ids=measurements.projection_ids())
    return validate(parse_blocks(f"```demo\n{body}```\n", "docs/en/batching.md")[0], limits)


def test_throughput_grows_with_the_batch_while_each_users_wait_is_the_step_time(measurements):
    assert figure(measurements, "batch.speedup@8").text == "8×"  # the step time is flat up to B = 8
    assert figure(measurements, "batch.speedup@64").value == pytest.approx(8.0)
    assert figure(measurements, "batch.ms_per_token@64").text == "160 ms"
    assert figure(measurements, "batch.step_growth@64").value == pytest.approx(8.0)
    assert figure(measurements, "batch.tps@1").text == "50 tok/s"


def test_the_knee_measured_beside_predicted_and_projected_for_a_gpu_as_a_bound(measurements):
    assert figure(measurements, "batch.knee_measured").text == "16"
    assert figure(measurements, "batch.knee_found").value == 1
    assert figure(measurements, "batch.knee_predicted").text == "32"  # every user's KV cache counted
    assert figure(measurements, "batch.knee_weights_only").text == "16"
    assert figure(measurements, "batch.floor_ratio@16").value == pytest.approx(40.0 / (1000 * (500e6 + 16 * 12e6) / 25e9), rel=1e-3)
    knee = figure(measurements, f"proj.knee@{H100}", "zh")
    assert knee.text == "295" and knee.source == "projected"


def test_a_knee_that_no_batch_reaches_reads_never_and_compares_as_beyond_any(measurements, monkeypatch):
    at_4096 = figure(measurements, f"proj.knee_at@{H100}/4096", "zh")
    assert at_4096.text == "不会出现" and at_4096.value == float("inf") and at_4096.source == "projected"
    assert figure(measurements, f"proj.knee_at@{H100}/4096").text == "never"
    assert figure(measurements, f"proj.knee_limit@{H100}/4096").value == 32.0
    result = measurements.batch()
    monkeypatch.setattr(measurements, "batch", lambda: {**result, "knee": {**result["knee"], "predicted_batch": None}})
    assert figure(measurements, "batch.knee_predicted").text == "never"
    assert figure(measurements, "batch.knee_predicted_found").value == 0


def test_no_knee_in_range_reads_above_the_largest_batch_and_compares_as_beyond_it(measurements, monkeypatch):
    result = measurements.batch()
    monkeypatch.setattr(measurements, "batch", lambda: {**result, "knee": {**result["knee"], "measured_batch": None}})
    assert figure(measurements, "batch.knee_measured", "zh").text == "64 以上"
    assert figure(measurements, "batch.knee_measured").text == "above 64"
    assert figure(measurements, "batch.knee_measured").value > 64 and figure(measurements, "batch.knee_found").value == 0


def test_the_kv_cache_per_user_and_how_many_users_weigh_as_much_as_the_weights(measurements):
    assert figure(measurements, "batch.kv_mb_per_user").text == "12 MB"
    assert figure(measurements, "batch.kv_users_to_match_weights").text == "42"  # 500 MB ÷ 12 MB
    users = figure(measurements, f"proj.kv_users@{H100}/4096")
    assert users.source == "projected" and users.value > 0


def test_the_two_users_stall_and_ttft_with_and_without_chunks(measurements):
    assert figure(measurements, "batch.stall_ms@unchunked").text == "400 ms"
    assert figure(measurements, "batch.stall_ms@chunked").text == "30 ms"
    assert figure(measurements, "batch.ttft_ms@chunked").text == "80 ms"
    assert figure(measurements, "batch.stall_reduction", "zh").text == "13.3 倍"
    # one mixed step at the two users' chunk size (256 tokens) against the same work as two passes
    assert figure(measurements, "batch.mixed_ms").text == "45.6 ms"
    assert figure(measurements, "batch.separate_ms").text == "63.6 ms"
    assert figure(measurements, "batch.decode_rows").text == "4"


@pytest.mark.parametrize("name, message", [
    ("batch.speedup@3", "measured: 1, 2, 4, 8, 16, 32, 64"),
    ("batch.stall_ms@sometimes", "@unchunked or @chunked"),
    ("batch.mixed_ms@512", "takes no @argument"),
    ("proj.knee@nobody/nothing/fp16", "known: llama-3.1-8b/h100-sxm/fp16"),
])
def test_an_unmeasured_argument_says_what_is_measured(measurements, name, message):
    with pytest.raises(LookupError, match=message):
        figure(measurements, name)


def test_the_tiny_model_measures_short_contexts_with_the_same_batch_sizes():
    tiny, real = plan_for("site", tiny=True), plan_for("site")
    assert tiny.batch_sizes == real.batch_sizes
    assert tiny.two_users_prompt_tokens < real.two_users_prompt_tokens == 2048


def test_the_batch_measurement_runs_once_and_is_then_read_from_the_cache(measurements, simulator):
    measurements.batch()
    measurements.batch()
    assert simulator.calls.count("ledger") == 1


def test_the_demo_json_carries_every_point_the_ceilings_and_the_two_users_clock(measurements, strings):
    demo = BUILDERS["batching"](batching_block(measurements), measurements, strings)
    batching = demo.data["batching"]
    assert [p["batch"] for p in batching["points"]] == [1, 2, 4, 8, 16, 32, 64]
    assert batching["machine"] == {"peak_gflops": 200.0, "peak_gbps": 25.0, "ridge": 8.0}
    assert batching["points"][0]["gflops"] == pytest.approx(2 * 125e6 / 0.02 / 1e9)
    users = batching["two_users"]
    assert [c["label"] for c in users["cases"]] == [strings["batching.case_unchunked"], strings["batching.case_chunked"]]
    assert users["ticks"] == sorted(users["ticks"]) and users["ticks"][0] == 0  # the clock starts at the first event
    assert users["arrival_ms"] == 20.0  # the streaming user's token 20 ms before the arrival comes first
    unchunked = users["cases"][0]
    assert unchunked["stall"] == {"from_ms": 0.0, "to_ms": 420.0}  # its longest wait, on the same clock
    assert "Llama-3.1-8B · NVIDIA H100 SXM · FP16" in batching["projected_knees"][0]["name"]
    assert batching["projected_knees"][0]["label"] == ("不会出现" if strings.lang == "zh" else "never")
    assert "Plotly" not in json.dumps(demo.data) and "updatemenus" not in json.dumps(demo.data)


def test_the_demo_json_follows_its_schema(measurements, strings):
    demo = BUILDERS["batching"](batching_block(measurements), measurements, strings)
    schema = json.loads((REPO / "hooks/demos/demo.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(demo.data, schema)


def test_the_fallback_shows_both_tables_from_the_same_data(measurements, strings):
    demo = BUILDERS["batching"](batching_block(measurements), measurements, strings)
    html = render_demo(REPO / "overrides/pd", "batching",
                       {**demo.context, "strings": strings, "kind": "batching", "lang": strings.lang, "trace_url": "",
                        "demo_id": "d"})
    assert html.count("<table") == 2 and strings["batching.case_chunked"] in html
    assert "400 ms" in html and "30 ms" in html  # the stalls
    assert "160 ms" in html  # each user's wait at B = 64
    import html as markup

    context = str(measurements.batch()["context_tokens"])
    label = strings.format("batching.knee_projected", name="Llama-3.1-8B · NVIDIA H100 SXM · FP16", context=context)
    assert label in markup.unescape(html)


def test_a_projection_without_a_knee_is_an_authoring_mistake_at_its_line(measurements, strings, monkeypatch):
    result = measurements.batch()
    monkeypatch.setattr(measurements, "batch", lambda: {**result, "projected_knees": []})
    block = batching_block(measurements, f"kind: batching\nprojections: [{H100}]\n")
    with pytest.raises(Exception, match=r"docs/en/batching.md:3: .*no projected knee"):
        BUILDERS["batching"](block, measurements, strings)


@pytest.fixture(scope="module")
def tiny_measurements(tmp_path_factory: pytest.TempPathFactory):
    """The tiny model's quick ledger, measured once for both languages (a minute of measuring under the tests'
    load; what differs between the languages is the builder's text, not the measurement)."""
    from hooks.demos.cache import ResultCache
    from hooks.demos.measurements import Measurements
    from hooks.demos.simulator import NumpySimulator

    return Measurements(NumpySimulator("tiny"), ResultCache(tmp_path_factory.mktemp("cache"), memo={}), "code-v1",
                        plan_for("quick", tiny=True))


def test_the_real_measurement_of_the_tiny_model_gives_a_demo_that_follows_the_schema(tiny_measurements, strings):
    """The contract end to end: the ledger measured on the tiny model, through the cache, the batching view,
    the builder and the prose figures."""
    m = tiny_measurements
    result = m.batch()
    assert result["schema"] == "prefill-decode-batch/2"
    peaks = m.roofline()["machine"]  # one set of ceilings for the whole site
    assert result["machine"]["ridge"] == pytest.approx(peaks["peak_gflops"] / peaks["peak_gbps"])
    demo = BUILDERS["batching"](batching_block(m), m, strings)
    schema = json.loads((REPO / "hooks/demos/demo.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(demo.data, schema)
    assert [p["batch"] for p in demo.data["batching"]["points"]] == list(plan_for("quick", tiny=True).batch_sizes)
    for name in ("batch.speedup@64", "batch.knee_measured", "batch.stall_ms@chunked", "batch.mixed_ms"):
        assert figure(m, name).text
