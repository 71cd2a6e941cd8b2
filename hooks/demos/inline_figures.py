"""Figures in the prose: `{{ NAME }}` or `{{ NAME@ARG }}`, replaced at build time by a measured or
projected value with its unit, inside <span class="pd-figure" title="where it comes from">.

Every name resolves to one `Figure`: its raw number (what a checked claim's condition compares, see
hooks/claims/), the text `{{ }}` prints, and its source. The condition and the printed figure therefore
never disagree. Names are listed in GLOBAL_NAMES and PAGE_NAMES (and in the comment header of
docs/<lang>/demo-strings.yml for authors). `{{ … }}` inside code (fences or `backticks`) is left alone,
so the syntax can be shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from markupsafe import escape

from hooks.authoring import mistake
from hooks.demos import formatting as fmt
from hooks.demos.readouts import projection_rows
from hooks.markdown_blocks import iter_fences
from simulations import cost

_REF = re.compile(r"(?P<code>(?P<ticks>`+).+?(?P=ticks))|\{\{(?P<body>.*?)\}\}", re.S)
_NAME = re.compile(r"^\s*(?P<name>[a-z_][a-z0-9_.]*)(?:@(?P<arg>[^\s{}]+))?\s*$")

PID = "MODEL/DEVICE/DTYPE"
GLOBAL_NAMES: dict[str, str] = {
    "machine.cpu": "", "machine.cores": "", "machine.date": "", "machine.peak_gflops": "",
    "machine.peak_gbps": "", "machine.ridge": "", "machine.prefill_crossover_tokens": "",
    "model.name": "", "model.params": "", "model.layers": "", "model.weight_mb": "",
    "sweep.ttft_ms": "N", "sweep.decode_ms": "N", "sweep.tps": "N", "sweep.prefill_util": "N",
    "sweep.ttft_growth": "", "sweep.length_growth": "", "sweep.decode_growth": "", "sweep.decode_bytes_growth": "",
    "sweep.prefill_work_growth": "",
    "sweep.tps_change_pct": "", "sweep.tps_drop_pct": "",
    "cache.cached_ms": "N", "cache.recompute_ms": "N", "cache.speedup": "N",
    "roofline.prompt_tokens": "",
    "roofline.prefill.compute_util": "", "roofline.prefill.bandwidth_util": "",
    "roofline.decode.compute_util": "", "roofline.decode.bandwidth_util": "",
    "roofline.prefill.intensity": "", "roofline.decode.intensity": "",
    "roofline.prefill.gflops": "", "roofline.decode.gbps": "",
    "proj.ttft_ms": f"{PID}/N", "proj.decode_ms": f"{PID}/N", "proj.tps": f"{PID}/N", "proj.kv_mb": f"{PID}/N",
    "proj.kv_share": f"{PID}/N", "proj.tps_drop_pct": PID, "proj.prefill_crossover_tokens": PID,
    "proj.knee": PID, "proj.knee_at": f"{PID}/N", "proj.knee_limit": f"{PID}/N", "proj.ridge": PID, "proj.kv_users": f"{PID}/N",
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
    "pub.published_tps": "ID", "pub.bound_tps": "ID", "pub.fraction": "ID", "pub.source": "ID",
}
PAGE_NAMES: dict[str, str] = {
    "conversation.prompt_tokens": "", "conversation.answer_tokens": "", "conversation.ttft_ms": "",
    "conversation.tps": "", "conversation.decode_ms": "",
    "conversation.template_tokens": "", "conversation.system_tokens": "", "conversation.user_tokens": "",
    "prefill.prompt_tokens": "", "prefill.prompt_chars": "", "prefill.ttft_ms": "", "prefill.kv_bytes": "",
    "prefill.kv_bytes_per_token": "",
    "decode.cached_tokens": "", "decode.ms_per_token": "", "decode.answer_tokens": "",
}


def find_refs(markdown: str) -> list[re.Match[str]]:
    """Every `{{ … }}` outside fenced code and inline code, in order: its offsets and its "body"."""
    return [match for match in prose_matches(_REF, markdown) if match["body"] is not None]


def prose_matches(pattern: re.Pattern[str], markdown: str) -> list[re.Match[str]]:
    """Matches of `pattern` outside fenced code, in order. `pattern` must match inline code spans itself
    (as a group the caller ignores), so that what is inside backticks is skipped too."""
    lines = markdown.split("\n")
    offsets = [0, *accumulate(len(line) + 1 for line in lines)]  # where each line starts
    found = []
    cursor = 0
    for fence in [*iter_fences(lines), None]:
        stop = offsets[fence.start] if fence else len(markdown)
        found += pattern.finditer(markdown, cursor, stop)
        if fence:
            cursor = offsets[min(fence.end + 1, len(lines))]
    return found


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def parse_ref(body: str) -> tuple[str, str | None]:
    """`sweep.tps@512` → ("sweep.tps", "512"); a body that is not a figure name is a LookupError."""
    match = _NAME.match(body)
    if not match:
        raise LookupError(f"{{{{{body}}}}} is not a figure reference")
    return match.group("name"), match.group("arg")


@dataclass(frozen=True)
class Figure:
    """One figure: its raw number in base units (ms, tokens/s, bytes, FLOP/byte, GFLOP/s, GB/s; shares and
    percentages as fractions; "times" as plain ratios) or None for a text figure, the text `{{ }}` prints,
    and where it comes from ("measured", "projected" or "published": then `title` names the source)."""

    value: float | None
    text: str
    source: str
    title: str | None = None


class FigureResolver:
    """Turns a name (and arg) into a `Figure`, from the page's demos and the global measurements (a
    hooks.demos.measurements.Measurements: each result is computed, or read from the cache, on first use).

    `page_readouts` maps a demo kind to the readouts of the page's first demo of that kind; None means the
    text is not on a page (a demo block's note, a strings file), where page figures do not exist.
    """

    def __init__(self, lang: str, measurements: Any, page_readouts: Mapping[str, dict[str, Any]] | None):
        self.lang = lang
        self.m = measurements
        self.page_readouts = page_readouts

    def figure(self, body: str) -> Figure:
        """The figure a `{{ body }}` reference names."""
        name, arg = parse_ref(body)
        expects = GLOBAL_NAMES.get(name, PAGE_NAMES.get(name))
        if expects is None:
            raise LookupError(f"unknown figure name {name!r}")
        if bool(expects) != (arg is not None):
            raise LookupError(f"{name} needs @{expects}" if expects else f"{name} takes no @argument")
        if name in PAGE_NAMES:
            return self._page(name)
        group, key = name.split(".", 1)
        return getattr(self, f"_{group}")(key, arg)

    # -- formatting helpers: one place where a raw number becomes its text ------------------------
    def _number(self, value: float, show: Callable[[float, str], str], source: str = "measured") -> Figure:
        return Figure(float(value), show(value, self.lang), source)

    def _unit(self, value: float, unit: str) -> Figure:
        return Figure(float(value), fmt.with_unit(value, unit, self.lang), "measured")

    # -- names by group -----------------------------------------------------------------------------
    def _page(self, name: str) -> Figure:
        kind, key = name.split(".", 1)
        if self.page_readouts is None:
            raise LookupError(f"{name} is a figure of a page's {kind} demo: it can be used in a chapter's "
                              "prose, not in a demo block's note or a strings file")
        readouts = self.page_readouts.get(kind)
        if readouts is None:
            raise LookupError(f"{name} needs a `{kind}` demo block on this page, and there is none")
        # Each name is its readout's (the two decode paces aside); counts unless shown otherwise.
        field = {"decode_ms": "decode_ms_per_token", "ms_per_token": "decode_ms_per_token"}.get(key, key)
        show = {"ttft_ms": fmt.ms, "decode_ms": fmt.ms, "ms_per_token": fmt.ms, "tps": fmt.tps,
                "kv_bytes": fmt.nbytes, "kv_bytes_per_token": fmt.nbytes}.get(key, fmt.count)
        return self._number(readouts[field], show)

    def _machine(self, key: str, arg: str | None) -> Figure:
        if key in ("cpu", "cores", "date"):  # from the sweep's stamp: no roofline measured for these
            value = self.m.sweep()["machine"][key]
            return self._number(value, fmt.count) if key == "cores" else Figure(None, str(value), "measured")
        peaks = self.m.roofline()["machine"]
        if key in ("peak_gflops", "peak_gbps"):
            return self._unit(peaks[key], "GFLOP/s" if key == "peak_gflops" else "GB/s")
        ridge = peaks["peak_gflops"] / peaks["peak_gbps"]  # FLOP/byte where the two ceilings meet
        if key == "ridge":
            return self._unit(ridge, "FLOP/byte")
        simulator = self.m.simulator
        crossover = cost.first_compute_bound_prompt(lambda tokens: simulator.pass_cost(tokens, 0), ridge,
                                                    simulator.max_context)
        if crossover is None:
            raise LookupError(f"prefill never reaches this machine's ridge point ({ridge:.1f} FLOP/byte) within "
                              f"the model's context of {simulator.max_context} tokens")
        return self._number(crossover, fmt.count)

    def _model(self, key: str, arg: str | None) -> Figure:
        model = self.m.simulator.model_summary()
        if key == "name":
            return Figure(None, str(model["name"]), "measured")
        field, show = {"params": ("params", fmt.params), "layers": ("layers", fmt.count),
                       "weight_mb": ("weight_bytes", fmt.megabytes)}[key]
        return self._number(model[field], show)

    def _sweep(self, key: str, arg: str | None) -> Figure:
        points, cost = self.m.sweep()["prompt_lengths"], self.m.simulator.pass_cost
        first, last = points[0], points[-1]
        # Growth from the sweep's shortest prompt to its longest, of what each point measured or costs (the
        # bytes of a decode step: every weight, the whole KV cache, one new row).
        growth: dict[str, Callable[[dict[str, Any]], float]] = {
            "ttft_growth": lambda p: p["ttft_ms"], "length_growth": lambda p: p["prompt_tokens"],
            "decode_growth": lambda p: p["decode_ms_per_token"],
            "decode_bytes_growth": lambda p: cost(1, p["prompt_tokens"]).bytes,
            "prefill_work_growth": lambda p: cost(p["prompt_tokens"], 0).flops,
        }
        if key in growth:
            return self._number(growth[key](last) / growth[key](first), fmt.times)
        if key in ("tps_change_pct", "tps_drop_pct"):
            change = (last["tps"] - first["tps"]) / first["tps"]
            return self._number(change if key == "tps_change_pct" else -change, fmt.percent)
        point = _measured_at(points, "prompt_tokens", arg)
        if key == "prefill_util":
            seconds = point["ttft_ms"] / 1000
            peak = self.m.roofline()["machine"]["peak_gflops"] * 1e9
            return self._number(cost(point["prompt_tokens"], 0).flops / seconds / peak, fmt.percent)
        field, show = {"ttft_ms": ("ttft_ms", fmt.ms), "decode_ms": ("decode_ms_per_token", fmt.ms),
                       "tps": ("tps", fmt.tps)}[key]
        return self._number(point[field], show)

    def _cache(self, key: str, arg: str | None) -> Figure:
        point = _measured_at(self.m.sweep()["cache_vs_recompute"], "context", arg)
        cached, recompute = point["cached_ms_per_token"], point["recompute_ms_per_token"]
        value, show = {"cached_ms": (cached, fmt.ms), "recompute_ms": (recompute, fmt.ms),
                       "speedup": (recompute / cached, fmt.times)}[key]
        return self._number(value, show)

    def _roofline(self, key: str, arg: str | None) -> Figure:
        result = self.m.roofline()
        if key == "prompt_tokens":
            return self._number(result["prompt_tokens"], fmt.count)
        phase, key = key.split(".")
        values = result[phase]
        if key.endswith("_util"):  # compute_util → compute_utilization
            return self._number(values[f"{key}ization"], fmt.percent)
        return self._unit(values[key], {"intensity": "FLOP/byte", "gflops": "GFLOP/s", "gbps": "GB/s"}[key])

    def _batch(self, key: str, arg: str | None) -> Figure:
        from hooks.demos import batch_figures

        return batch_figures.figure(key, arg, self.m.batch(), self.lang)

    def _proj(self, key: str, arg: str | None) -> Figure:
        if key.startswith("knee") or key == "ridge":
            from hooks.demos import batch_figures

            return batch_figures.projected_knee(key, arg, self.m.batch(), self.lang)
        projections = self.m.projections()
        pid, length = arg, None
        if GLOBAL_NAMES[f"proj.{key}"] != PID:  # MODEL/DEVICE/DTYPE/N
            pid, _, length = (arg or "").rpartition("/")
        ids = sorted({row["id"] for row in projections["projections"]})
        if pid not in ids:
            raise LookupError(f"unknown projection {pid!r} (known: {', '.join(ids)})")
        rows = projection_rows(projections, pid)
        if key == "tps_drop_pct":
            first, last = rows[0]["tps"], rows[-1]["tps"]
            return self._number((first - last) / first, fmt.percent, "projected")
        if key == "prefill_crossover_tokens":
            if "prefill_crossover_tokens" not in rows[0]:
                raise LookupError(f"the projections data has no prefill_crossover_tokens for {pid} (the key "
                                  "comes from simulations.projections.project_one, which does not provide it yet)")
            return self._number(rows[0]["prefill_crossover_tokens"], fmt.count, "projected")
        row = next((r for r in rows if str(r["prompt_tokens"]) == length), None)
        if row is None:
            raise LookupError(f"no projection of {pid} at {length!r} tokens (known: "
                              f"{', '.join(str(r['prompt_tokens']) for r in rows)})")
        if key == "kv_users":  # how many users' caches of this length fit in the memory the weights leave
            memory = projections["devices"][row["device"]]["memory_bytes"]
            return self._number(max(0, int((memory - row["weight_bytes"]) // row["kv_bytes"])), fmt.count, "projected")
        value, show = {"ttft_ms": (row["ttft_ms"], fmt.ms), "decode_ms": (row["decode_ms_per_token"], fmt.ms),
                       "tps": (row["tps"], fmt.tps), "kv_mb": (row["kv_bytes"], fmt.megabytes),
                       "kv_share": (row["kv_share_of_memory"], fmt.percent)}[key]
        return self._number(value, show, "projected")

    def _pub(self, key: str, arg: str | None) -> Figure:
        rows = {row["id"]: row for row in self.m.projections().get("validation", [])}
        if arg not in rows:
            raise LookupError(f"no published measurement {arg!r} (known: {', '.join(sorted(rows)) or 'none'})")
        row = rows[arg]
        if key not in row:
            raise LookupError(f"the projections' validation rows have no {key!r} (simulations.projections.validate "
                              "gives published_tps, bound_tps, fraction and source)")
        if key == "bound_tps":
            return self._number(row["bound_tps"], fmt.tps, "projected")
        source = row["source"]
        cited = f"{source.get('title', '')} {source.get('url', '')}".strip()
        if key == "source":
            return Figure(None, str(source.get("title", "")), "published", cited)
        show = fmt.tps if key == "published_tps" else fmt.percent
        return Figure(float(row[key]), show(row[key], self.lang), "published", cited)


def _measured_at(points: list[dict[str, Any]], field: str, arg: str | None) -> dict[str, Any]:
    """The point whose `field` is the number `arg`; any other `arg` is an error listing the measured ones."""
    point = next((p for p in points if arg and arg.isdigit() and p[field] == int(arg)), None)
    if point is None:
        raise LookupError(f"@{arg} is not measured (measured: {', '.join(str(p[field]) for p in points)})")
    return point


def figure_error(error: LookupError) -> str:
    """The message of a bad figure reference: what is wrong, then every name that exists."""
    names = ", ".join(f"{name}@{arg}" if arg else name for name, arg in {**GLOBAL_NAMES, **PAGE_NAMES}.items())
    return f"{error.args[0]} — allowed: {names}"


def source_lines(markdown: str, source: str, refs: list[re.Match[str]]) -> Iterator[int]:
    """The line in the raw file of each reference of `markdown`: that of the source's next reference with
    the same text (claims may have dropped references of phrasings that were not printed)."""
    source_refs = iter(find_refs(source))
    for ref in refs:
        same = next((found for found in source_refs if found["body"] == ref["body"]), None)
        yield line_of(source, same.start()) if same else line_of(markdown, ref.start())


def replace_figures(markdown: str, source: str, src_path: str, resolver: FigureResolver,
                    titles: dict[str, Callable[[], str]]) -> str:
    """Replace every reference in `markdown`; errors name the line of the reference in `source` (the raw
    file: front matter and other hooks' additions do not shift the reported line)."""
    refs = find_refs(markdown)
    if not refs:
        return markdown
    pieces, position = [], 0
    for ref, line in zip(refs, source_lines(markdown, source, refs), strict=True):
        pieces.append(markdown[position:ref.start()])
        try:
            figure = resolver.figure(ref["body"])
        except LookupError as error:
            pieces.append(mistake(src_path, line, figure_error(error)))
        else:
            title = figure.title or titles[figure.source]()
            pieces.append(f'<span class="pd-figure" title="{escape(title)}">{escape(figure.text)}</span>')
        position = ref.end()
    pieces.append(markdown[position:])
    return "".join(pieces)
