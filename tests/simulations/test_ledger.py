"""The ledger: every quantity measured once, with its spread; the views every chapter reads agree with it; a
disturbed series is measured again, then stops the build with a message naming it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulations import ledger, views
from simulations.ledger import DisturbedMeasurement, Ledger
from simulations.loader import load_model
from simulations.plans import plan_for
from simulations.timing import summarize

# The tiny model at a few lengths: every kind of series, in seconds. Its timings are a fraction of a millisecond,
# which a busy machine can multiply; the tolerance's floor of 20 ms keeps that out of these tests, and the
# disturbances they make are hundreds of milliseconds.
PLAN = replace(plan_for("quick", tiny=True), prompt_lengths=(16, 32), contexts=(16, 32), formats=("q8_0",),
               format_prompt_lengths=(16,), format_context=32, batch_sizes=(1, 2), batch_context=32,
               chunk_sizes=(0, 16), two_users_prompt_tokens=32, two_users_chunk_tokens=16, accuracy_steps=4,
               rounds=3, fast_rounds=3, peak_repeats=1, stream_buffers=1, noise_floor_ms=20.0, remeasures=2,
               stop_when_disturbed=True)


@pytest.fixture(scope="module")
def model():
    return load_model("tiny")


@pytest.fixture(scope="module")
def measured(model):
    return ledger.measure(model, replace(PLAN, stop_when_disturbed=False))


def disturbing(target: str, *, extra_ms: float = 500.0, until: int | None = None) -> type[Ledger]:
    """A ledger whose series `target` is disturbed: every other sample gets `extra_ms` more, in the first `until`
    measurements of it (all of them when None)."""

    class Disturbed(Ledger):
        def _run(self, group) -> None:
            super()._run(group)
            series = group.series.get(target)
            if series is not None and len(series.samples) % 2 == 0 and (until is None or series.measured <= until):
                series.samples[-1] += extra_ms
    return Disturbed


def test_every_timing_is_the_median_of_its_repeats_with_its_spread(measured):
    for key, entry in measured["entries"].items():
        if entry.get("same_as") or key.startswith("two_users/") or entry["statistic"] == "best":
            continue  # B = 1 is the decode step's entry; a play is seconds long; a ceiling is its best run
        assert entry["repeats"] >= 3, key
        assert entry["value"] == summarize(entry["samples"]).median if entry["statistic"] == "median" else True
        assert entry["low"] <= entry["median"] <= entry["high"]
        assert entry["spread"] == pytest.approx(summarize(entry["samples"]).spread)


def test_a_quantity_several_chapters_print_has_one_value_in_every_view(measured):
    sweep, roofline = views.sweep(measured), views.roofline(measured, 32)
    batch, formats = views.batch(measured), views.formats(measured)
    at_32 = next(p for p in sweep["prompt_lengths"] if p["prompt_tokens"] == 32)
    f32 = next(r for r in formats["formats"] if r["format"] == "f32")
    decode = measured["entries"]["decode/f32/32"]["value"]
    assert at_32["decode_ms_per_token"] == roofline["decode"]["ms"] == f32["decode_ms_per_token"] == decode
    assert batch["batch_sizes"][0]["step_ms"] == decode  # B = 1 is the decode step at its context
    assert next(c for c in sweep["cache_vs_recompute"] if c["context"] == 32)["cached_ms_per_token"] == decode
    assert at_32["ttft_ms"] == roofline["prefill"]["ms"] == measured["entries"]["ttft/f32/32"]["value"]
    assert f32["ttft_ms"]["16"] == measured["entries"]["ttft/f32/16"]["value"]
    chunk = next(c for c in batch["chunked"] if c["chunk_tokens"] == 16)
    assert chunk["separate_ms"] == decode + measured["entries"]["ttft/f32/16"]["value"]
    assert roofline["machine"]["peak_gbps"] == batch["machine"]["bandwidth"] / 1e9 == measured["ceilings"]["read_gbps"]["value"]


def test_the_invariants_are_checked_on_the_ledger_by_name(measured):
    names = {inv["name"] for inv in measured["invariants"]}
    assert {"cached_no_slower_than_recompute@16", "decode_rises_with_context@f32/16-32",
            "ttft_rises_with_context@f32/16-32", "mixed_no_slower_than_separate@16",
            "within_ceilings@decode/f32/32"} <= names


def test_attention_is_timed_apart_from_the_rest_of_a_pass(measured):
    for phase, key in (("prefill", "ttft/f32/32"), ("decode", "decode/f32/32")):
        share = views.attention_share(measured, phase, "f32", 32)
        assert 0 < share < 1, (phase, share, measured["entries"][key]["value"])


def test_a_disturbed_series_is_measured_again_and_then_published(model):
    result = ledger.measure(model, PLAN, ledger_class=disturbing("decode/f32/16", until=1))
    entry = result["entries"]["decode/f32/16"]
    assert entry["measured"] == 2 and entry["spread"] <= PLAN.noise + PLAN.noise_floor_ms / entry["median"]
    assert result["disturbed"] == []


def test_a_series_that_stays_disturbed_stops_the_build_naming_it(model):
    with pytest.raises(DisturbedMeasurement) as stopped:
        ledger.measure(model, PLAN, ledger_class=disturbing("ttft/f32/32"))
    message = str(stopped.value)
    assert "ttft/f32/32: spread" in message and "noise margin of 10%" in message
    assert "measuring them again 2 times" in message and "build again when it is quiet" in message


def test_a_machine_busy_before_the_rounds_stops_the_build_before_measuring(model):
    timed: list[str] = []

    class Busy(Ledger):
        def probe_times(self, times: list[float]) -> list[float]:  # every other step displaced by a neighbour
            return [t + (300.0 if i % 2 else 0.0) for i, t in enumerate(times)]

        def _run(self, group) -> None:
            timed.append(group.name)
            super()._run(group)

    with pytest.raises(DisturbedMeasurement) as stopped:
        ledger.measure(model, PLAN, ledger_class=Busy)
    message = str(stopped.value)
    assert message.startswith("the machine is busy: 12 decode steps at 16 tokens, one after another: spread")
    assert "Nothing was measured or published" in message and "build again when it is quiet" in message
    assert timed == []  # stopped before the first round


def test_a_machine_that_became_busy_stops_the_build_instead_of_measuring_again(model):
    probes: list[int] = []

    class BusyLater(disturbing("ttft/f32/32")):
        def probe_times(self, times: list[float]) -> list[float]:  # quiet before the rounds, busy after them
            probes.append(len(times))
            return times if len(probes) == 1 else [t + (300.0 if i % 2 else 0.0) for i, t in enumerate(times)]

    with pytest.raises(DisturbedMeasurement) as stopped:
        ledger.measure(model, PLAN, ledger_class=BusyLater)
    message = str(stopped.value)
    assert "ttft/f32/32: spread" in message and "before measuring them again" in message
    assert "the machine is busy now, so measuring again could not help" in message
    assert len(probes) == 2  # the probe before the rounds, and the one that found the machine busy


def test_a_quiet_probe_lets_the_rounds_run(measured):
    assert not any("the machine is busy" in line or "one after another" in line for line in measured["disturbed"])


def test_a_broken_invariant_is_measured_again_then_stops_the_build(model):
    # the cached step made far slower than recomputing, steadily (no spread): physics broken each time
    class Impossible(Ledger):
        def _run(self, group) -> None:
            super()._run(group)
            if "decode/f32/16" in group.series:
                group.series["decode/f32/16"].samples[-1] += 300.0

    with pytest.raises(DisturbedMeasurement, match="invariant cached_no_slower_than_recompute@16 does not hold"):
        ledger.measure(model, PLAN, ledger_class=Impossible)


def test_a_draft_plan_records_the_disturbance_instead_of_stopping(model):
    result = ledger.measure(model, replace(PLAN, stop_when_disturbed=False, remeasures=1),
                            ledger_class=disturbing("ttft/f32/32"))
    assert any(line.startswith("ttft/f32/32: spread") for line in result["disturbed"])


def test_the_ledger_follows_its_published_schema(measured):
    import json
    from pathlib import Path

    from jsonschema import Draft202012Validator

    schema = json.loads((Path(ledger.__file__).with_name("ledger.schema.json")).read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(json.loads(json.dumps(measured, default=str)))


def test_the_read_ceiling_includes_a_buffer_the_size_of_the_weights_a_decode_step_streams(model, monkeypatch):
    read: list[int | None] = []
    monkeypatch.setattr(ledger, "read_gbps", lambda repeats, nbytes=None: read.append(nbytes) or 10.0)
    monkeypatch.setattr(ledger, "gemm_gflops", lambda repeats: 1.0)
    out = ledger.measure_ceilings(model, replace(PLAN, stream_buffers=2))
    assert read == [None, None, ledger.weights_stream_bytes(model)]  # two far beyond the cache, then the weights'
    assert len(out["read_gbps"]) == 3
    from simulations import cost
    assert ledger.weights_stream_bytes(model) == cost.decode_cost(model.config.shape, 0).bytes


def test_a_recording_wider_than_the_noise_is_recorded_again_then_stops_the_build(model, monkeypatch):
    from simulations import trace as trace_module

    made: list[int] = []

    def wide(*args, **kwargs):
        made.append(kwargs["timed_runs"])
        out = trace_module.record(*args, **kwargs)
        samples = [10.0, 10.0, 40.0, 40.0, 40.0]
        out["timing"]["ttft_ms"] = {"value": 40.0, "median": 40.0, "spread": 0.75, "low": 10.0, "high": 40.0,
                                    "repeats": 5, "samples": samples}
        return out
    monkeypatch.setattr(ledger, "record", wide)
    with pytest.raises(DisturbedMeasurement) as stopped:
        ledger.recording(model, "Hi", replace(PLAN, fast_rounds=5), max_new_tokens=3)
    assert made == [5, 5, 5]  # recorded, then again twice
    assert "recording of 'Hi', ttft_ms: spread 75% over 5 runs" in str(stopped.value)
    draft = ledger.recording(model, "Hi", replace(PLAN, stop_when_disturbed=False, remeasures=0), max_new_tokens=3)
    assert draft["disturbed"] and draft["disturbed"][0].startswith("recording of 'Hi', ttft_ms")


def test_a_quiet_recording_is_returned_as_recorded(model):
    out = ledger.recording(model, "Hi", replace(PLAN, fast_rounds=5), max_new_tokens=3)
    assert out["timing"]["runs"] == 5 and "disturbed" not in out
