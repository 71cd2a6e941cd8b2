"""The `batching` demo: batched decode on this machine's roofline, and two users with and without
chunked prefill, from the batch measurement (simulations/batch.py, schema "prefill-decode-batch/2").

The JSON's `batching` object (schema: hooks/demos/demo.schema.json, `$defs/batching_view`) carries every point, ceiling,
label and the two users' recorded clock as the browser draws them; the static fallback renders two
tables from the same data.
"""

from __future__ import annotations

from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.batch_figures import batch_count, knee_text, kv_users_to_match_weights
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source, projected_source
from hooks.demos.measurements import Measurements
from hooks.demos.readouts import projection_at, projection_label
from hooks.demos.strings import Strings

CASES = ("unchunked", "chunked")
CLOCK_DECIMALS = 3  # recorded times keep their order exactly


def points(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One point per measured batch size: its place on the roofline and what each user and the server see."""
    return [{"batch": row["batch"], "step_ms": row["step_ms"], "tokens_per_s": row["tokens_per_s"],
             "ms_per_token": row["ms_per_token"], "intensity": row["intensity"],
             "gflops": row["flops"] / (row["step_ms"] / 1000) / 1e9,
             "compute_utilization": row["compute_utilization"],
             "bandwidth_utilization": row["bandwidth_utilization"],
             "weight_bytes": row["weight_bytes"], "kv_bytes": row["kv_bytes"]}
            for row in result["batch_sizes"]]


def longest_gap(times: list[float]) -> dict[str, float] | None:
    """The longest wait between two consecutive times (the streaming user's stall), or None for < 2 times."""
    if len(times) < 2:
        return None
    start, end = max(zip(times, times[1:], strict=False), key=lambda pair: pair[1] - pair[0])
    return {"from_ms": start, "to_ms": end}


def two_users(result: dict[str, Any], strings: Strings) -> dict[str, Any]:
    """Both cases on one recorded clock: each event's time since the first event of either case (`at_ms`,
    what the player runs on), the arrival at `arrival_ms`, the stall to highlight, and the player's ticks."""
    recorded = result["two_users"]
    start = min([0.0, *(e["t_ms"] for case in CASES for e in recorded[case]["events"])])
    cases, ticks = [], set()
    for case in CASES:
        events = sorted(recorded[case]["events"], key=lambda e: e["t_ms"])
        shown = [{"user": e["user"], "what": e["what"], "at_ms": round(e["t_ms"] - start, CLOCK_DECIMALS)}
                 for e in events]
        ticks.update(e["at_ms"] for e in shown)
        streaming = [e["at_ms"] for e in shown if e["user"] == "streaming" and e["what"] == "token"]
        cases.append({"id": case, "label": strings[f"batching.case_{case}"],
                      "stall_ms": recorded[case]["stall_ms"], "ttft_ms": recorded[case]["ttft_ms"],
                      "stall": longest_gap(streaming), "events": shown})
    ordered = sorted(ticks)
    return {"prompt_tokens": recorded["prompt_tokens"], "chunk_tokens": recorded["chunk_tokens"],
            "arrival_ms": round(-start, CLOCK_DECIMALS), "duration_ms": ordered[-1] if ordered else 0.0,
            "ticks": ordered, "users": {"streaming": strings["batching.user_streaming"],
                                        "arriving": strings["batching.user_arriving"]},
            "cases": cases}


def projected_knees(result: dict[str, Any], m: Measurements, block: DemoBlock,
                    strings: Strings) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The projected knees the block asks for (all of them by default), labelled, and their spec rows."""
    projections = m.projections()
    knees = {row["id"]: row for row in result.get("projected_knees", [])}
    wanted = block.options.get("projections") or list(knees)
    missing = [pid for pid in wanted if pid not in knees]
    if missing:
        raise block.fail("projections", f"the batch measurement has no projected knee for {', '.join(missing)}",
                         ", ".join(sorted(knees)) or "none (simulations.batch projected no device)")
    rows = [row for pid in wanted if (row := projection_at(projections, pid, 4096))]
    context = result["context_tokens"]
    labelled = []
    for pid in wanted:
        at = next((row for row in knees[pid]["by_context"] if row["context"] == context), None)
        if at is None:
            raise block.fail("projections", f"the batch measurement projects no knee at its own context ({context} "
                             "tokens)", ", ".join(str(row["context"]) for row in knees[pid]["by_context"]))
        labelled.append({"name": strings.format("batching.knee_projected", name=projection_label(projections, pid),
                                                context=fmt.count(context, strings.lang)),
                         "label": batch_count(at["predicted_batch"], strings.lang, "projected").text})
    return labelled, rows


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    """The batching demo's JSON and its static fallback (two tables: the batch sizes, the two users)."""
    lang = strings.lang
    result = m.batch()
    knees, spec_rows = projected_knees(result, m, block, strings)
    # The batch measurement ran with the roofline's peaks: its machine line is the roofline's.
    measured = measured_source(m.roofline()["machine"], m.simulator.model_name, strings)
    projected = projected_source(spec_rows, strings)
    machine = result["machine"]
    batching = {
        "machine": {"peak_gflops": machine["peak_flops"] / 1e9, "peak_gbps": machine["bandwidth"] / 1e9,
                    "ridge": machine["ridge"]},
        "points": points(result),
        "knee": {"label": knee_text(result, lang),
                 "predicted": batch_count(result["knee"]["predicted_batch"], lang, "measured").text},
        "projected_knees": knees,
        "two_users": two_users(result, strings),
    }
    data = {**base(block, strings), "batching": batching}
    rows = [(strings["batching.context"], fmt.count(result["context_tokens"], lang)),
            (strings["batching.kv_per_user"], fmt.nbytes(result["kv_bytes_per_user"], lang)),
            (strings["batching.users_to_match_weights"], fmt.count(kv_users_to_match_weights(result), lang)),
            (strings["batching.knee_measured"], batching["knee"]["label"]),
            (strings["batching.knee_predicted"], batching["knee"]["predicted"]),
            *[(k["name"], k["label"]) for k in knees]]
    table = {"headers": [strings["batching.axis_batch"], strings["batching.step_ms"], strings["batching.throughput"],
                         strings["batching.per_user"], strings["batching.intensity"],
                         strings["batching.compute_util"], strings["batching.bandwidth_util"]],
             "rows": [[fmt.count(p["batch"], lang), fmt.ms(p["step_ms"], lang), fmt.tps(p["tokens_per_s"], lang),
                       fmt.ms(p["ms_per_token"], lang), fmt.number(p["intensity"], lang),
                       fmt.percent(p["compute_utilization"], lang), fmt.percent(p["bandwidth_utilization"], lang)]
                      for p in batching["points"]]}
    users = batching["two_users"]
    users_table = {"caption": strings.format("batching.users_caption", prompt=fmt.count(users["prompt_tokens"], lang),
                                             chunk=fmt.count(users["chunk_tokens"], lang)),
                   "headers": [strings["batching.case"], strings["batching.stall"], strings["batching.ttft"]],
                   "rows": [[c["label"], fmt.ms(c["stall_ms"], lang), fmt.ms(c["ttft_ms"], lang)]
                            for c in users["cases"]]}
    return Demo(data, fallback(block, strings, measured=measured, projected=projected, rows=rows, table=table,
                               users_table=users_table))

