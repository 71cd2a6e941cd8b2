"""The batching chapter's figures in the prose (`{{ batch.… }}`, `{{ proj.knee@… }}`), from the batch
measurement (simulations/batch.py, schema "prefill-decode-batch/2").

Each name gives one `Figure` (raw number in base units, its text, its source), as every other figure
name does; hooks/demos/figure_resolver.py routes the names here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.figure_names import Figure

TWO_USERS_CASES = ("unchunked", "chunked")


def row_at(result: dict[str, Any], batch: int) -> dict[str, Any]:
    """The measured row of batch size `batch` (a LookupError naming the measured sizes if there is none)."""
    for row in result["batch_sizes"]:
        if row["batch"] == batch:
            return row
    raise LookupError(f"batch size {batch} is not measured (measured: {', '.join(str(r['batch']) for r in result['batch_sizes'])})")


def _int_arg(arg: str | None, allowed: list[int], what: str) -> int:
    if arg is None or not arg.isdigit() or int(arg) not in allowed:
        raise LookupError(f"@{arg} is not a measured {what} (measured: {', '.join(map(str, allowed))})")
    return int(arg)


def mixed_step(result: dict[str, Any]) -> dict[str, Any]:
    """The measured mixed step (decode rows plus one prompt chunk) at the chunk size the two users ran with."""
    size = result["two_users"]["chunk_tokens"]
    for step in result["chunked"]:
        if step["chunk_tokens"] == size:
            return step
    raise LookupError(f"the batch measurement has no mixed step at the two users' chunk size ({size} tokens; "
                      f"measured: {', '.join(str(c['chunk_tokens']) for c in result['chunked'])})")


def chunk_count(result: dict[str, Any]) -> int:
    """How many chunks (passes) the arriving user's prompt took in the chunked two-users timeline."""
    two = result["two_users"]
    return -(-two["prompt_tokens"] // two["chunk_tokens"])


def kv_users_to_match_weights(result: dict[str, Any]) -> float:
    """How many users' KV caches (at the measured context) weigh as much as the model's weights."""
    return result["batch_sizes"][0]["weight_bytes"] / result["kv_bytes_per_user"]


def knee_text(result: dict[str, Any], lang: str) -> str:
    """The measured knee as the prose shows it; above the largest batch measured when none was found."""
    knee = result["knee"]["measured_batch"]
    if knee is not None:
        return fmt.count(knee, lang)
    return fmt.number_word("numbers.above", lang, n=fmt.count(result["batch_sizes"][-1]["batch"], lang))


def never_text(lang: str) -> str:
    """A predicted turning point that no batch reaches, as the prose shows it."""
    return fmt.number_word("numbers.never", lang)


def batch_count(value: float | None, lang: str, source: str) -> Figure:
    """A predicted batch: +inf when none is ever compute-bound (every "knee > N" holds), its text "never"."""
    if value is None:
        return Figure(float("inf"), never_text(lang), source)
    return Figure(float(value), fmt.count(value, lang), source)


def figure(key: str, arg: str | None, result: dict[str, Any], lang: str) -> Figure:
    """The figure `batch.<key>[@arg]` of the batch measurement."""

    def number(value: float, show: Callable[[float, str], str], source: str = "measured") -> Figure:
        return Figure(float(value), show(value, lang), source)

    def unit(value: float, name: str) -> Figure:
        return Figure(float(value), fmt.with_unit(value, name, lang), "measured")

    rows, knee, two = result["batch_sizes"], result["knee"], result["two_users"]
    whole: dict[str, Callable[[], Figure]] = {
        "context_tokens": lambda: number(result["context_tokens"], fmt.count),
        "max_batch": lambda: number(rows[-1]["batch"], fmt.count),
        "bytes_per_weight": lambda: number(knee["bytes_per_weight"], fmt.count),
        "ridge": lambda: unit(result["machine"]["ridge"], "FLOP/byte"),
        # No knee in range: the value is +inf (every "knee > N" holds), the text says "above 64".
        "knee_measured": lambda: Figure(float(knee["measured_batch"]) if knee["measured_batch"] is not None
                                        else float("inf"), knee_text(result, lang), "measured"),
        "knee_found": lambda: number(0 if knee["measured_batch"] is None else 1, fmt.count),
        "knee_predicted": lambda: batch_count(knee["predicted_batch"], lang, "measured"),
        "knee_predicted_found": lambda: number(0 if knee["predicted_batch"] is None else 1, fmt.count),
        "knee_weights_only": lambda: number(knee["weights_only_batch"], fmt.count),
        "intensity_limit": lambda: unit(knee["intensity_limit"], "FLOP/byte"),
        "kv_mb_per_user": lambda: number(result["kv_bytes_per_user"], fmt.nbytes),  # a tiny model's is KB
        "weight_mb": lambda: number(rows[0]["weight_bytes"], fmt.nbytes),
        "kv_users_to_match_weights": lambda: number(kv_users_to_match_weights(result), fmt.count),
        "prompt_tokens": lambda: number(two["prompt_tokens"], fmt.count),
        "chunk_tokens": lambda: number(two["chunk_tokens"], fmt.count),
        "decode_rows": lambda: number(mixed_step(result)["decode_rows"], fmt.count),
        "mixed_ms": lambda: number(mixed_step(result)["step_ms"], fmt.ms),
        "separate_ms": lambda: number(mixed_step(result)["separate_ms"], fmt.ms),
        "stall_reduction": lambda: number(two["unchunked"]["stall_ms"] / two["chunked"]["stall_ms"], fmt.times),
        "chunk_count": lambda: number(chunk_count(result), fmt.count),
        # The cost model's share of the chunked TTFT: each chunk after the first reads every weight again.
        "chunk_weight_reads_ms": lambda: number((chunk_count(result) - 1) * rows[0]["weight_bytes"]
                                                / result["machine"]["bandwidth"] * 1000, fmt.ms),
    }
    if key in whole:
        return whole[key]()
    if key in ("stall_ms", "ttft_ms"):
        if arg not in TWO_USERS_CASES:
            raise LookupError(f"batch.{key} needs @unchunked or @chunked, not @{arg}")
        return number(two[arg][key], fmt.ms)
    row = row_at(result, _int_arg(arg, [r["batch"] for r in rows], "batch size"))
    first = rows[0]
    return {
        "step_ms": lambda: number(row["step_ms"], fmt.ms),
        "ms_per_token": lambda: number(row["ms_per_token"], fmt.ms),
        "tps": lambda: number(row["tokens_per_s"], fmt.tps),
        "speedup": lambda: number(row["tokens_per_s"] / first["tokens_per_s"], fmt.times),
        "step_growth": lambda: number(row["step_ms"] / first["step_ms"], fmt.times),
        "intensity": lambda: unit(row["intensity"], "FLOP/byte"),
        "compute_util": lambda: number(row["compute_utilization"], fmt.percent),
        "bandwidth_util": lambda: number(row["bandwidth_utilization"], fmt.percent),
        "floor_ms": lambda: number(row["floor_ms"], fmt.ms),
        "floor_ratio": lambda: number(row["step_ms"] / row["floor_ms"], fmt.times),
        "floor_growth": lambda: number(row["floor_ms"] / first["floor_ms"], fmt.times),
    }[key]()


def projected_knee(key: str, arg: str | None, result: dict[str, Any], lang: str) -> Figure:
    """`proj.knee@MODEL/DEVICE/DTYPE`: the batch at which decode would turn compute-bound on that device if the
    weights were all it read (spec ridge × bytes per weight ÷ 2); `proj.knee_at@…/N`: the same with every
    user's KV cache of N tokens counted (+inf, "never", when no batch reaches the ridge); `proj.knee_limit@…/N`:
    the FLOPs per byte a step approaches as users are added. Projected, from spec sheets."""
    knees = {row["id"]: row for row in result.get("projected_knees", [])}
    pid, context = (arg, None) if key in ("knee", "ridge") else (arg or "").rpartition("/")[::2]
    if pid not in knees:
        raise LookupError(f"no projected knee for {pid!r} (known: {', '.join(sorted(knees)) or 'none'})")
    if key == "knee":
        value = knees[pid]["weights_only_batch"]
        return Figure(float(value), fmt.count(value, lang), "projected")
    if key == "ridge":
        return Figure(float(knees[pid]["ridge"]), fmt.with_unit(knees[pid]["ridge"], "FLOP/byte", lang), "projected")
    at = {str(row["context"]): row for row in knees[pid]["by_context"]}
    if context not in at:
        raise LookupError(f"no projected knee for {pid} at {context!r} tokens (known: {', '.join(at)})")
    if key == "knee_limit":
        return Figure(float(at[context]["intensity_limit"]),
                      fmt.with_unit(at[context]["intensity_limit"], "FLOP/byte", lang), "projected")
    return batch_count(at[context]["predicted_batch"], lang, "projected")
