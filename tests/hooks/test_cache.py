"""The simulation cache: prose edits never re-run a simulation; prompts, options, simulation code and
models do; a damaged cache file is reported and recomputed, never served."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.cache import ResultCache, cache_key, source_hash
from hooks.demos.measurements import Measurements
from simulations.plans import plan_for


def counting(result):
    calls = []

    def compute():
        calls.append(1)
        return result

    return compute, calls


def test_a_result_is_computed_once_then_served_from_memory_and_from_disk(tmp_path: Path):
    compute, calls = counting({"answer": 42})
    first = ResultCache(tmp_path, memo={})
    assert first.get_or_compute({"x": 1}, compute, label="x") == {"answer": 42}
    assert first.get_or_compute({"x": 1}, compute, label="x") == {"answer": 42}
    fresh_process = ResultCache(tmp_path, memo={})
    assert fresh_process.get_or_compute({"x": 1}, compute, label="x") == {"answer": 42}
    assert len(calls) == 1


def test_different_inputs_are_different_entries(tmp_path: Path):
    compute, calls = counting([1])
    cache = ResultCache(tmp_path, memo={})
    cache.get_or_compute({"x": 1}, compute, label="x")
    cache.get_or_compute({"x": 2}, compute, label="x")
    assert len(calls) == 2 and len(list(tmp_path.glob("*.json"))) == 2


def test_writes_leave_no_temporary_files(tmp_path: Path):
    ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, lambda: "v", label="x")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []


@pytest.mark.parametrize("damage", ["truncate", "garble", "empty", "not-json", "header-not-object"])
def test_a_damaged_cache_file_is_reported_and_recomputed(tmp_path: Path, caplog, damage):
    ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, lambda: {"v": list(range(50))}, label="x")
    path = next(tmp_path.glob("*.json"))
    data = path.read_bytes()
    damaged = {"truncate": data[: len(data) // 2], "garble": data[:-12] + b"9, 9, 9, 9]}",
               "empty": b"", "not-json": b"\x00\xff garbage", "header-not-object": b"[1]\n{}"}[damage]
    path.write_bytes(damaged)
    compute, calls = counting({"v": "fresh"})
    with caplog.at_level(logging.WARNING):
        result = ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, compute, label="x")
    assert result == {"v": "fresh"} and calls == [1]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and path.name in warnings[0] and "recomputed" in warnings[0]
    header, _, payload = path.read_bytes().partition(b"\n")
    assert json.loads(payload) == {"v": "fresh"}  # stored whole again


def test_after_a_damaged_file_is_recomputed_the_next_build_is_clean(tmp_path: Path, caplog):
    ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, lambda: 1, label="x")
    next(tmp_path.glob("*.json")).write_bytes(b"{truncated")
    ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, lambda: 2, label="x")
    caplog.clear()
    compute, calls = counting(3)
    with caplog.at_level(logging.WARNING):
        assert ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, compute, label="x") == 2
    assert caplog.records == [] and calls == []


def test_a_cold_computation_logs_progress_and_a_warm_one_logs_nothing(tmp_path: Path, caplog):
    with caplog.at_level(logging.INFO):
        ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, lambda: 1, label="the x sweep")
    assert any("Simulating: the x sweep" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        ResultCache(tmp_path, memo={}).get_or_compute({"x": 1}, lambda: 1, label="the x sweep")
    assert caplog.records == []


def test_the_simulation_code_hash_changes_with_the_code(tmp_path: Path):
    (tmp_path / "model.py").write_text("A = 1\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "devices.json").write_text("{}")
    before = source_hash(tmp_path)
    (tmp_path / "data" / "devices.json").write_text('{"h100": 1}')
    assert source_hash(tmp_path) != before


# --- through the demo builders: what an author's edit re-runs --------------------------------------

CHAPTER = """# Decode

Some prose.

```demo
kind: decode
prompt: {prompt}
max_new_tokens: 4
note: {note}
```
"""


def build_chapter(measurements: Measurements, zh, prompt: str = "Hi there", note: str = "A note") -> dict:
    block = parse_blocks(CHAPTER.format(prompt=prompt, note=note), "docs/zh/decode.md")[0]
    limits = Limits("tiny", 8192, lambda text: len(text), frozenset())
    return BUILDERS["decode"](validate(block, limits), measurements, zh).data


def fresh(measurements: Measurements, code_hash: str | None = None) -> Measurements:
    """The same disk cache seen by a new process (empty memo), optionally with other simulation code."""
    cache = ResultCache(measurements.cache.directory, memo={})
    return Measurements(measurements.simulator, cache, code_hash or measurements.code_hash, measurements.plan)


def test_a_prose_or_note_edit_runs_no_simulation(measurements, simulator, zh):
    build_chapter(measurements, zh)
    ran = len(simulator.calls)
    build_chapter(fresh(measurements), zh, note="An edited note")
    assert len(simulator.calls) == ran


def test_a_prompt_edit_records_again_but_reuses_the_ledger(measurements, simulator, zh):
    build_chapter(measurements, zh)
    simulator.calls.clear()
    build_chapter(fresh(measurements), zh, prompt="Hello again")
    assert simulator.calls == ["record:Hello again"]


def test_a_simulation_code_change_runs_everything_again(measurements, simulator, zh):
    build_chapter(measurements, zh)
    simulator.calls.clear()
    build_chapter(fresh(measurements, code_hash="code-v2"), zh)
    assert simulator.calls == ["record:Hi there", "ledger"]


def test_the_quick_and_site_ledgers_are_cached_separately(measurements, simulator):
    measurements.sweep()
    site = Measurements(simulator, measurements.cache, measurements.code_hash, plan_for("site", tiny=True))
    site.sweep()
    measurements.roofline(), measurements.batch(), measurements.formats()
    assert simulator.calls == ["ledger", "ledger"]


def test_a_damaged_input_under_a_cached_derived_result_is_still_reported_and_recomputed(tmp_path: Path, caplog):
    memo: dict = {}
    cache = ResultCache(tmp_path, memo=memo)

    def derive():
        with cache.recording() as used:
            value = cache.get_or_compute({"what": "trace"}, lambda: {"tokens": 3}, label="trace")
        return {"demo": value["tokens"], "depends_on": used}

    def sound(entry):
        return not any([cache.damaged(key) for key in entry["depends_on"]])

    cache.get_or_compute({"what": "demo"}, derive, label="demo", valid=sound)
    trace_file = cache.path_for(cache_key({"what": "trace"}))
    trace_file.write_bytes(trace_file.read_bytes()[:-5])
    fresh = ResultCache(tmp_path, memo={})
    with caplog.at_level(logging.WARNING):
        fresh.get_or_compute({"what": "demo"}, derive, label="demo", valid=sound)
    assert any(trace_file.name in r.getMessage() for r in caplog.records)
    assert not ResultCache(tmp_path, memo={}).damaged(cache_key({"what": "trace"}))


def test_a_disturbed_measurement_stops_the_build_with_its_message_and_is_not_measured_again(tmp_path: Path):
    from hooks.demos.measurements import MeasurementsDisturbed
    from simulations.ledger import DisturbedMeasurement
    from tests.hooks.conftest import QUICK, CountingSimulator

    class Busy(CountingSimulator):
        def ledger(self, **_):
            self.calls.append("ledger")
            raise DisturbedMeasurement("decode/f32/64: spread 40% over 5 repeats … build again when it is quiet")

    simulator = Busy()
    m = Measurements(simulator, ResultCache(tmp_path / "cache", memo={}), "code-disturbed", QUICK)
    for _ in range(2):
        with pytest.raises(MeasurementsDisturbed, match="decode/f32/64: spread 40%.*build again when it is quiet"):
            m.sweep()
    assert simulator.calls == ["ledger"]  # `mkdocs serve` keeps the message until it is restarted
