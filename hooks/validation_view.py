"""The generated tables of the appendix page: published llama.cpp measurements beside their roofline bounds,
the summary per device class, the prompt length where prefill turns compute-bound, and the Neural Engine's
range. Each is a template context built from simulations/projections.py, with every label taken from the
language's demo-strings.yml (section `validation`) — no Python edit to translate, no number typed by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.strings import Strings
from simulations import projection_data
from simulations import projections as pj

CROSSOVER_MODEL = "llama-3.1-8b"  # the article's large model
NEURAL_ENGINE = "apple-ane-m3-max"
NEURAL_ENGINE_MODEL, NEURAL_ENGINE_PROMPT_TOKENS = "llama-3.1-8b", 4096
CLASS_KEYS = {"datacenter GPU": "class_datacenter", "consumer GPU": "class_consumer", "Apple GPU": "class_apple",
              "NPU": "class_npu"}


def model_label(name: str) -> str:
    """Model names as prose writes them: 'Llama-3.1-8B' → 'Llama 3.1 8B'."""
    return name.replace("-", " ")


def _precision_label(strings: Strings, row: dict[str, Any], lang: str) -> str:
    return strings.format("validation.precision_bits", name=row["precision_name"],
                          bits=fmt.number(row["bits_per_weight"], lang, 2))


def _note(strings: Strings, row: dict[str, Any]) -> str:
    """A published row's note in this language: `validation_notes.<row id>` of the strings file (the id with
    each "." written "_"), else the data file's own (English) note."""
    return strings.values.get(f"validation_notes.{row['id'].replace('.', '_')}", row["note"])


def table_context(strings: Strings, lang: str) -> dict[str, Any]:
    """Every published row, grouped as the summary is: device class, then device (in the data file's order),
    model (smallest first), precision (widest first), prefill before decode. Columns: what was measured,
    the three numbers, then where it comes from (so the numbers stay in view on a laptop's screen)."""
    class_order = {device_class: i for i, device_class in enumerate(pj.DEVICE_CLASSES)}
    device_order = {device_id: i for i, device_id in enumerate(projection_data.load_data("accelerators")["devices"])}
    models = projection_data.load_data("models")["models"]
    rows = sorted(pj.validate(), key=lambda r: (class_order[r["device_class"]], device_order[r["device"]],
                                                 projection_data.value(models[r["model"]]["params"]), -r["bits_per_weight"],
                                                 r["phase"] != "prefill"))
    return {
        "part": "table",
        "caption": strings["validation.caption_table"],
        "footnote": strings["validation.bits_note"],
        "headers": [strings[f"validation.col_{key}"] for key in
                    ("model", "precision", "device", "test", "published", "bound", "fraction", "software", "source")],
        "rows": [
            {
                "id": row["id"],
                "source_title": row["source"]["title"],
                "source_url": row["source"]["url"],
                "source_label": row["source"].get("short", strings["validation.source_link"]),
                "note": _note(strings, row),
                "software": row["software"],
                "model": model_label(row["model_name"]),
                "precision": _precision_label(strings, row, lang),
                "device": row["device_name"],
                "test": strings.format(f"validation.test_{row['phase']}", test=row["test"],
                                       context=fmt.count(row["context_tokens"], lang)),
                "published": fmt.number(row["published_tps"], lang),
                "bound": fmt.number(row["bound_tps"], lang),
                "fraction": fmt.percent(row["fraction"], lang),
            }
            for row in rows
        ],
    }


def summary_context(strings: Strings, lang: str) -> dict[str, Any]:
    """Min / median / max of published ÷ bound per device class and phase (a class without rows says so)."""

    def share(value: float | None) -> str:
        return fmt.percent(value, lang) if value is not None else "—"

    summary = pj.validation_summary(pj.validate())
    left_out = sum(s["left_out"] for s in summary)
    return {
        "part": "summary",
        "caption": strings["validation.caption_summary"],
        "footnote": strings.format("validation.left_out", n=fmt.count(left_out, lang)) if left_out else "",
        "headers": [strings[f"validation.col_{key}"] for key in ("class", "phase", "rows", "min", "median", "max")],
        "rows": [
            {
                "class": strings[f"validation.{CLASS_KEYS[s['device_class']]}"],
                "phase": strings[f"validation.phase_{s['phase']}"],
                "rows": fmt.count(s["rows"], lang),
                "cells": [share(s["min"]), share(s["median"]), share(s["max"])] if s["rows"] else [],
                "empty": strings["validation.no_rows"],
            }
            for s in summary
        ],
    }


def crossover_context(strings: Strings, lang: str) -> dict[str, Any]:
    """For the article's large model, the shortest prompt whose prefill is compute-bound, per device and precision."""
    models = projection_data.load_data("models")
    devices = projection_data.load_data("accelerators")["devices"]

    def tokens(device_id: str, dtype: str) -> str:
        runs = devices[device_id].get("precisions")  # a device that runs only some formats (the Neural Engine)
        if runs is not None and projection_data.precision_of(dtype) not in runs:
            return strings["validation.not_run"]
        found = pj.prefill_crossover_tokens(CROSSOVER_MODEL, device_id, dtype)
        return fmt.count(found, lang) if found is not None else strings["validation.never"]

    return {
        "part": "crossover",
        "caption": strings.format("validation.caption_crossover",
                                  model=model_label(models["models"][CROSSOVER_MODEL]["name"])),
        "headers": [strings["validation.col_device"],
                    *(models["precisions"][dtype]["name"] for dtype in projection_data.PROJECTION_DTYPES)],
        "rows": [{"device": device["name"], "cells": [tokens(device_id, dtype) for dtype in projection_data.PROJECTION_DTYPES]}
                 for device_id, device in devices.items()],
    }


def neural_engine_context(strings: Strings, lang: str) -> dict[str, Any]:
    """The Neural Engine's figures and projection from its best to its pessimistic end, as the data states them."""
    device = projection_data.load_data("accelerators")["devices"][NEURAL_ENGINE]
    model = projection_data.load_data("models")["models"][NEURAL_ENGINE_MODEL]
    row = pj.project_one(NEURAL_ENGINE_MODEL, NEURAL_ENGINE, "fp16", NEURAL_ENGINE_PROMPT_TOKENS)

    def pair(format_one: Callable[[float], str], best: float, worst: float) -> list[str]:
        return [format_one(best), format_one(worst)]

    def tflops(flops: float) -> str:
        return fmt.with_unit(flops / 1e12, "TFLOP/s", lang)

    def gigabytes_per_s(bandwidth: float) -> str:
        return fmt.with_unit(bandwidth / 1e9, "GB/s", lang)

    def milliseconds(value: float) -> str:
        return fmt.ms(value, lang)

    return {
        "part": "ane",
        "caption": strings.format("validation.caption_ane", device=device["name"],
                                  model=model_label(model["name"]),
                                  tokens=fmt.count(NEURAL_ENGINE_PROMPT_TOKENS, lang)),
        "headers": [strings["validation.col_quantity"], strings["validation.col_best"],
                    strings["validation.col_worst"]],
        "rows": [
            {"label": strings["validation.ane_peak"],
             "cells": pair(tflops, projection_data.device_peak_flops(device, "fp16"),
                           projection_data.device_peak_flops(device, "fp16", pessimistic=True))},
            {"label": strings["validation.ane_bandwidth"],
             "cells": pair(gigabytes_per_s, projection_data.device_bandwidth(device),
                           projection_data.device_bandwidth(device, pessimistic=True))},
            {"label": strings["validation.ane_ttft"], "cells": pair(milliseconds, *row["ttft_ms_range"])},
            {"label": strings["validation.ane_decode"], "cells": pair(milliseconds, *row["decode_ms_range"])},
        ],
    }


PARTS: dict[str, Callable[[Strings, str], dict[str, Any]]] = {
    "<!-- pd:validation-table -->": table_context,
    "<!-- pd:validation-summary -->": summary_context,
    "<!-- pd:prefill-crossover -->": crossover_context,
    "<!-- pd:ane-range -->": neural_engine_context,
}
