"""The figure names authors may write in `{{ NAME }}`, `{{ NAME@ARG }}` and in claims' conditions, and what
one figure is (`Figure`): the registry every other figure module reads.

The names are listed in GLOBAL_NAMES and PAGE_NAMES (with the @ARG each expects) and, for authors, in the
comment header of docs/<lang>/demo-strings.yml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"^\s*(?P<name>[a-z_][a-z0-9_.]*)(?:@(?P<arg>[^\s{}]+))?\s*$")

PID = "MODEL/DEVICE/DTYPE"
GLOBAL_NAMES: dict[str, str] = {
    "machine.cpu": "", "machine.vector": "", "machine.virtual_cores": "", "machine.cores": "", "machine.date": "", "machine.peak_gflops": "",
    "machine.peak_gbps": "", "machine.stream_mb": "", "machine.weights_stream_mb": "", "machine.cache_mb": "", "machine.ridge": "",
    "machine.prefill_crossover_tokens": "",
    "machine.prefill_crossover_formula": "",
    "model.name": "", "model.params": "", "model.layers": "", "model.weight_mb": "",
    "sweep.ttft_ms": "N", "sweep.decode_ms": "N", "sweep.tps": "N", "sweep.prefill_util": "N",
    "sweep.ttft_growth": "", "sweep.length_growth": "", "sweep.decode_growth": "", "sweep.decode_bytes_growth": "",
    "sweep.prefill_work_growth": "", "sweep.attention_share": "N", "sweep.decode_kv_share": "N",
    "sweep.tps_change_pct": "", "sweep.tps_drop_pct": "",
    "sweep.prefill_attention_time": "N", "sweep.decode_attention_time": "N", "sweep.decode_growth_from_attention": "",
    "cache.cached_ms": "N", "cache.recompute_ms": "N", "cache.speedup": "N",
    "roofline.prompt_tokens": "",
    "roofline.prefill.compute_util": "", "roofline.prefill.bandwidth_util": "",
    "roofline.decode.compute_util": "", "roofline.decode.bandwidth_util": "",
    "roofline.prefill.intensity": "", "roofline.decode.intensity": "",
    "roofline.prefill.gflops": "", "roofline.decode.gbps": "",
    "proj.ttft_ms": f"{PID}/N", "proj.decode_ms": f"{PID}/N", "proj.tps": f"{PID}/N", "proj.kv_mb": f"{PID}/N",
    "proj.kv_share": f"{PID}/N", "proj.tps_drop_pct": PID, "proj.prefill_crossover_tokens": PID,
    "proj.knee": PID, "proj.knee_at": f"{PID}/N", "proj.knee_limit": f"{PID}/N", "proj.ridge": PID,
    "proj.kv_users": f"{PID}/N",
    "proj.prefill_work_growth": PID, "proj.attention_share": f"{PID}/N", "proj.decode_kv_share": f"{PID}/N",
    "proj.ttft_worst_ms": f"{PID}/N", "proj.decode_worst_ms": f"{PID}/N",
    "batch.context_tokens": "", "batch.max_batch": "", "batch.bytes_per_weight": "", "batch.ridge": "",
    "batch.step_ms": "B", "batch.tps": "B", "batch.ms_per_token": "B", "batch.speedup": "B",
    "batch.step_growth": "B", "batch.intensity": "B", "batch.compute_util": "B", "batch.bandwidth_util": "B",
    "batch.knee_measured": "", "batch.knee_found": "", "batch.knee_predicted": "", "batch.knee_predicted_found": "",
    "batch.knee_weights_only": "", "batch.intensity_limit": "", "batch.floor_ms": "B", "batch.floor_ratio": "B",
    "batch.floor_growth": "B", "batch.chunk_count": "", "batch.chunk_weight_reads_ms": "",
    "batch.kv_mb_per_user": "", "batch.weight_mb": "", "batch.kv_users_to_match_weights": "",
    "batch.prompt_tokens": "", "batch.chunk_tokens": "", "batch.stall_ms": "unchunked|chunked",
    "batch.ttft_ms": "unchunked|chunked", "batch.stall_reduction": "", "batch.decode_rows": "",
    "batch.mixed_ms": "", "batch.separate_ms": "",
    "formats.context_tokens": "", "formats.prompt_tokens": "", "formats.accuracy_steps": "", "formats.four_bit": "",
    "formats.activation_digits": "",
    **{f"formats.{key}": "FORMAT" for key in (
        "name", "bits", "weight_mb", "step_mb", "byte_shrink", "decode_ms", "products_ms", "other_ms", "other_share",
        "tps", "decode_speedup", "decode_share",
        "ttft_ms", "prefill_ratio", "bandwidth_util", "compute_util", "decode_intensity", "top1", "kl",
        "cached_mb", "cached_us", "cached_read_us", "cached_vs_read", "dequantize_ms")},
    "pub.published_tps": "ID", "pub.bound_tps": "ID", "pub.fraction": "ID", "pub.source": "ID",
    "vocabulary.noise": "",
}
PAGE_NAMES: dict[str, str] = {
    "conversation.prompt_tokens": "", "conversation.answer_tokens": "", "conversation.ttft_ms": "",
    "conversation.tps": "", "conversation.decode_ms": "",
    "conversation.template_tokens": "", "conversation.system_tokens": "", "conversation.user_tokens": "",
    "prefill.prompt_tokens": "", "prefill.prompt_chars": "", "prefill.ttft_ms": "", "prefill.kv_bytes": "",
    "prefill.kv_bytes_per_token": "",
    "decode.cached_tokens": "", "decode.ms_per_token": "", "decode.answer_tokens": "",
}



@dataclass(frozen=True)
class Figure:
    """One figure: its raw number in base units (ms, tokens/s, bytes, FLOP/byte, GFLOP/s, GB/s; shares and
    percentages as fractions; "times" as plain ratios) or None for a text figure, the text `{{ }}` prints,
    and where it comes from ("measured", "projected" or "published": then `title` names the source)."""

    value: float | None
    text: str
    source: str
    title: str | None = None
    entry: str | None = None  # the ledger entry this figure is, number for number (simulations/ledger.py)



def parse_ref(body: str) -> tuple[str, str | None]:
    """`sweep.tps@512` → ("sweep.tps", "512"); a body that is not a figure name is a LookupError."""
    match = _NAME.match(body)
    if not match:
        raise LookupError(f"{{{{{body}}}}} is not a figure reference")
    return match.group("name"), match.group("arg")



def figure_error(error: LookupError) -> str:
    """The message of a bad figure reference: what is wrong, then every name that exists."""
    names = ", ".join(f"{name}@{arg}" if arg else name for name, arg in {**GLOBAL_NAMES, **PAGE_NAMES}.items())
    return f"{error.args[0]} — allowed: {names}"

