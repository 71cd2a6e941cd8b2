"""The sourced data behind the projections, read and cited: models, precisions and accelerators.

`simulations/data/models.json` and `accelerators.json` hold every figure with the id of its source;
this module reads them (the device ceilings, the bits per weight of a precision), names each source for
the page, and checks what a caller or a published row asks for. The arithmetic is `projections.py`'s.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

PROJECTION_DTYPES = ("fp16", "q8_0", "q4_0", "q4_k_m")


@cache
def load_data(name: str) -> dict[str, Any]:
    """One of the sourced data files in simulations/data/ ('accelerators' or 'models')."""
    text = resources.files("simulations").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def value(entry: Any, *, pessimistic: bool = False) -> float:
    """The number of a sourced field ({"value": x, "source": ...}) or a plain number.

    `pessimistic` takes the field's `low` end where the data gives one (an uncertain figure).
    """
    if isinstance(entry, dict):
        if pessimistic and "low" in entry:
            return value(entry["low"])
        return float(entry["value"])
    return float(entry)


# --- precisions ------------------------------------------------------------------------------------


def precision_of(dtype: str) -> str:
    """The canonical precision of a name or alias ('q4' → 'q4_0'); unknown names list the allowed ones."""
    models = load_data("models")
    canonical = models["precision_aliases"].get(dtype, dtype)
    if canonical not in models["precisions"]:
        allowed = [*models["precisions"], *models["precision_aliases"]]
        raise ValueError(f"unknown precision {dtype!r} — allowed: {', '.join(allowed)}")
    return canonical


def nominal_bits_per_weight(dtype: str) -> float:
    return value(load_data("models")["precisions"][precision_of(dtype)]["bits_per_weight"])


def bits_per_weight(model_id: str, dtype: str) -> float:
    """Bits per weight of this model in this precision: a real GGUF file's if known, else the format's."""
    file = load_data("models")["gguf_files"].get(f"{model_id}/{precision_of(dtype)}")
    if file is None:
        return nominal_bits_per_weight(dtype)
    return file["size_gib"] * 2**30 * 8 / (file["params_billion"] * 1e9)


# --- device ceilings -------------------------------------------------------------------------------


def device_peak_flops(device: dict[str, Any], dtype: str, *, pessimistic: bool = False) -> float:
    """The device's int8 rate for quantised weights where it has one, else its fp16 rate (PROJECTIONS.md)."""
    quantized = load_data("models")["precisions"][precision_of(dtype)]["quantized"]
    rate = "int8" if quantized and "int8" in device["peak_flops"] else "fp16"
    return value(device["peak_flops"][rate], pessimistic=pessimistic)


def device_bandwidth(device: dict[str, Any], *, pessimistic: bool = False) -> float:
    return value(device["bandwidth_bytes_per_s"], pessimistic=pessimistic)


def is_uncertain(device: dict[str, Any]) -> bool:
    """True when a figure of the device is known only as a range (the data gives a `low` end)."""
    entries = [device["bandwidth_bytes_per_s"], *device["peak_flops"].values()]
    return any(isinstance(entry, dict) and "low" in entry for entry in entries)


# --- sources ---------------------------------------------------------------------------------------


def source_ids(entry: Any) -> set[str]:
    """Every 'source' id named anywhere inside a data entry."""
    if isinstance(entry, dict):
        own = {entry["source"]} if isinstance(entry.get("source"), str) else set()
        return own.union(*map(source_ids, entry.values()))
    return set().union(*map(source_ids, entry)) if isinstance(entry, list) else set()


def cite(source_id: str, sources: dict[str, Any]) -> dict[str, str]:
    """A source as the output carries it: id, title, URL (and a short name for link texts, if the data has one)."""
    cited = {"id": source_id, "title": sources[source_id]["title"], "url": sources[source_id]["url"]}
    if "short" in sources[source_id]:
        cited["short"] = sources[source_id]["short"]
    return cited


def _cited(entry: Any, data_file: str) -> list[dict[str, str]]:
    """Every source named inside `entry` (of models.json or accelerators.json), cited, in id order."""
    return [cite(s, load_data(data_file)["sources"]) for s in sorted(source_ids(entry))]


def device_sources(device_id: str) -> list[dict[str, str]]:
    return _cited(load_data("accelerators")["devices"][device_id], "accelerators")


def model_sources(model_id: str) -> list[dict[str, str]]:
    return _cited(load_data("models")["models"][model_id], "models")


def precision_sources(model_id: str, dtype: str) -> list[dict[str, str]]:
    """Where this model's bits per weight in this precision come from (its GGUF file, else the format)."""
    data, canonical = load_data("models"), precision_of(dtype)
    return _cited(data["gguf_files"].get(f"{model_id}/{canonical}", data["precisions"][canonical]), "models")


# --- what may be asked for -------------------------------------------------------------------------


def default_models() -> list[str]:
    """The article's models: every entry of models.json not marked validation-only."""
    models = load_data("models")["models"]
    return [model_id for model_id, m in models.items() if not m.get("validation_only")]


def projection_dtypes() -> tuple[str, ...]:
    """Every precision, then every alias (so ids such as llama-3.1-8b/rtx-4090/q4 keep resolving)."""
    return (*PROJECTION_DTYPES, *load_data("models")["precision_aliases"])


def check_known(ids: list[str], known: dict[str, Any], what: str) -> None:
    """Fail, naming the allowed ones, if any of `ids` is not a key of `known` (a model or device id)."""
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(map(repr, unknown))} — allowed: {', '.join(known)}")


def check_published(result: dict[str, Any]) -> None:
    """A published row must name a known model, device and precision, and a phase the test implies."""
    where = f"simulations/data/accelerators.json: published result {result.get('id', '?')!r}"
    try:
        check_known([result.get("model")], load_data("models")["models"], "model")
        check_known([result.get("device")], load_data("accelerators")["devices"], "device")
        precision_of(result.get("precision", ""))
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if result.get("phase") not in ("prefill", "decode"):
        raise ValueError(f"{where}: phase {result.get('phase')!r} — allowed: prefill, decode")
