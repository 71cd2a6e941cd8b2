"""Figures in the prose: `{{ NAME }}` or `{{ NAME@ARG }}`, replaced at build time by a measured or
projected value with its unit, inside <span class="pd-figure" title="where it comes from">.

Names are listed in GLOBAL_NAMES and PAGE_NAMES (and in the comments of docs/zh/demo-strings.yml for
translators). `{{ … }}` inside code (fences or `backticks`) is left alone, so the syntax can be shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import escape
from mkdocs.exceptions import PluginError

from hooks.demos import formatting as fmt
from hooks.demos.blocks import iter_fences
from hooks.demos.readouts import cache_point, projection_rows, sweep_point

_REF = re.compile(r"(?P<code>(?P<ticks>`+).+?(?P=ticks))|\{\{(?P<body>.*?)\}\}", re.S)
_NAME = re.compile(r"^\s*(?P<name>[a-z_][a-z0-9_.]*)(?:@(?P<arg>[^\s{}]+))?\s*$")

GLOBAL_NAMES: dict[str, str] = {
    "machine.cpu": "", "machine.cores": "", "machine.date": "", "machine.peak_gflops": "",
    "machine.peak_gbps": "", "model.name": "", "model.params": "", "model.layers": "", "model.weight_mb": "",
    "sweep.ttft_ms": "N", "sweep.decode_ms": "N", "sweep.tps": "N", "sweep.ttft_growth": "",
    "sweep.tps_change_pct": "", "cache.cached_ms": "N", "cache.recompute_ms": "N", "cache.speedup": "N",
    "roofline.prefill.compute_util": "", "roofline.prefill.bandwidth_util": "",
    "roofline.decode.compute_util": "", "roofline.decode.bandwidth_util": "",
    "roofline.prefill.intensity": "", "roofline.decode.intensity": "",
    "roofline.prefill.gflops": "", "roofline.decode.gbps": "",
    "proj.ttft_ms": "MODEL/DEVICE/DTYPE/N", "proj.decode_ms": "MODEL/DEVICE/DTYPE/N",
    "proj.tps": "MODEL/DEVICE/DTYPE/N", "proj.kv_mb": "MODEL/DEVICE/DTYPE/N", "proj.kv_share": "MODEL/DEVICE/DTYPE/N",
}
PAGE_NAMES: dict[str, str] = {
    "conversation.prompt_tokens": "", "conversation.answer_tokens": "", "conversation.ttft_ms": "",
    "conversation.tps": "", "conversation.decode_ms": "",
    "prefill.prompt_tokens": "", "prefill.prompt_chars": "", "prefill.ttft_ms": "", "prefill.kv_bytes": "",
    "prefill.kv_bytes_per_token": "",
    "decode.cached_tokens": "", "decode.ms_per_token": "", "decode.answer_tokens": "",
}


@dataclass(frozen=True)
class Ref:
    """One figure reference: where it is in the text (offsets) and what it says."""

    start: int
    end: int
    body: str


def find_refs(markdown: str) -> list[Ref]:
    """Every `{{ … }}` outside fenced code and inline code, in order."""
    lines = markdown.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    refs = []
    cursor = 0
    for fence in [*iter_fences(lines), None]:
        stop = offsets[fence.start] if fence else len(markdown)
        for match in _REF.finditer(markdown, cursor, stop):
            if match.group("body") is not None:
                refs.append(Ref(match.start(), match.end(), match.group("body")))
        if fence:
            cursor = offsets[min(fence.end + 1, len(lines))]
    return refs


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@dataclass
class Figure:
    value: str
    source: str  # "measured" or "projected"


class FigureResolver:
    """Turns a name (and arg) into a formatted value, from the page's demos and the global measurements."""

    def __init__(self, lang: str, globals_: Callable[[], dict[str, Any]], page_readouts: dict[str, dict[str, Any]]):
        self.lang = lang
        self.globals = globals_
        self.page_readouts = page_readouts

    def resolve(self, name: str, arg: str | None) -> Figure:
        if name in PAGE_NAMES:
            return self._page(name, arg)
        if name not in GLOBAL_NAMES:
            raise LookupError(f"unknown figure name {name!r}")
        expects = GLOBAL_NAMES[name]
        if bool(expects) != (arg is not None):
            raise LookupError(f"{name} needs @{expects}" if expects else f"{name} takes no @argument")
        group = name.split(".", 1)[0]
        return getattr(self, f"_{group}")(name, arg, self.globals())

    def _page(self, name: str, arg: str | None) -> Figure:
        kind, key = name.split(".", 1)
        if arg is not None:
            raise LookupError(f"{name} takes no @argument")
        readouts = self.page_readouts.get(kind)
        if readouts is None:
            raise LookupError(f"{name} needs a `{kind}` demo block on this page, and there is none")
        lang = self.lang
        formatters = {
            "prompt_tokens": lambda r: fmt.count(r["prompt_tokens"], lang),
            "prompt_chars": lambda r: fmt.count(r["prompt_chars"], lang),
            "answer_tokens": lambda r: fmt.count(r["answer_tokens"], lang),
            "ttft_ms": lambda r: fmt.ms(r["ttft_ms"], lang),
            "tps": lambda r: fmt.tps(r["tps"], lang),
            "decode_ms": lambda r: fmt.ms(r["decode_ms_per_token"], lang),
            "ms_per_token": lambda r: fmt.ms(r["decode_ms_per_token"], lang),
            "kv_bytes": lambda r: fmt.nbytes(r["kv_bytes"], lang),
            "kv_bytes_per_token": lambda r: fmt.nbytes(r["kv_bytes_per_token"], lang),
            "cached_tokens": lambda r: fmt.count(r["cached_tokens"], lang),
        }
        return Figure(formatters[key](readouts), "measured")

    def _machine(self, name: str, arg: str | None, g: dict[str, Any]) -> Figure:
        key = name.split(".", 1)[1]
        if key in ("peak_gflops", "peak_gbps"):
            unit = "GFLOP/s" if key == "peak_gflops" else "GB/s"
            return Figure(fmt.with_unit(g["roofline"]()["machine"][key], unit, self.lang), "measured")
        value = g["machine"]()[key]
        return Figure(fmt.count(value, self.lang) if key == "cores" else str(value), "measured")

    def _model(self, name: str, arg: str | None, g: dict[str, Any]) -> Figure:
        model = g["model"]()
        key = name.split(".", 1)[1]
        values = {"name": lambda: model["name"], "params": lambda: fmt.params(model["params"], self.lang),
                  "layers": lambda: fmt.count(model["layers"], self.lang),
                  "weight_mb": lambda: fmt.megabytes(model["weight_bytes"], self.lang)}
        return Figure(values[key](), "measured")

    def _sweep(self, name: str, arg: str | None, g: dict[str, Any]) -> Figure:
        sweep = g["sweep"]()
        key = name.split(".", 1)[1]
        lengths = [p["prompt_tokens"] for p in sweep["prompt_lengths"]]
        if key == "ttft_growth":
            return Figure(fmt.times(sweep["prompt_lengths"][-1]["ttft_ms"] / sweep["prompt_lengths"][0]["ttft_ms"],
                                    self.lang), "measured")
        if key == "tps_change_pct":
            first, last = sweep["prompt_lengths"][0]["tps"], sweep["prompt_lengths"][-1]["tps"]
            return Figure(fmt.percent((last - first) / first, self.lang), "measured")
        point = sweep_point(sweep, _int_arg(arg, lengths))
        value = {"ttft_ms": lambda: fmt.ms(point["ttft_ms"], self.lang),
                 "decode_ms": lambda: fmt.ms(point["decode_ms_per_token"], self.lang),
                 "tps": lambda: fmt.tps(point["tps"], self.lang)}[key]()
        return Figure(value, "measured")

    def _cache(self, name: str, arg: str | None, g: dict[str, Any]) -> Figure:
        sweep = g["sweep"]()
        contexts = [p["context"] for p in sweep["cache_vs_recompute"]]
        point = cache_point(sweep, _int_arg(arg, contexts))
        key = name.split(".", 1)[1]
        value = {"cached_ms": lambda: fmt.ms(point["cached_ms_per_token"], self.lang),
                 "recompute_ms": lambda: fmt.ms(point["recompute_ms_per_token"], self.lang),
                 "speedup": lambda: fmt.times(point["recompute_ms_per_token"] / point["cached_ms_per_token"],
                                              self.lang)}[key]()
        return Figure(value, "measured")

    def _roofline(self, name: str, arg: str | None, g: dict[str, Any]) -> Figure:
        _, phase, key = name.split(".")
        values = g["roofline"]()[phase]
        value = {"compute_util": lambda: fmt.percent(values["compute_utilization"], self.lang),
                 "bandwidth_util": lambda: fmt.percent(values["bandwidth_utilization"], self.lang),
                 "intensity": lambda: fmt.with_unit(values["intensity"], "FLOP/byte", self.lang),
                 "gflops": lambda: fmt.with_unit(values["gflops"], "GFLOP/s", self.lang),
                 "gbps": lambda: fmt.with_unit(values["gbps"], "GB/s", self.lang)}[key]()
        return Figure(value, "measured")

    def _proj(self, name: str, arg: str | None, g: dict[str, Any]) -> Figure:
        projections = g["projections"]()
        ids = sorted({f"{r['model']}/{r['device']}/{r['dtype']}" for r in projections["projections"]})
        pid, _, length = (arg or "").rpartition("/")
        if pid not in ids:
            raise LookupError(f"unknown projection {pid!r} (known: {', '.join(ids)})")
        rows = projection_rows(projections, pid)
        row = next((r for r in rows if str(r["prompt_tokens"]) == length), None)
        if row is None:
            raise LookupError(f"no projection of {pid} at {length!r} tokens (known: "
                              f"{', '.join(str(r['prompt_tokens']) for r in rows)})")
        n = row["prompt_tokens"]
        kv_bytes = row["kv_bytes_per_token"] * n
        memory = projections.get("devices", {}).get(row["device"], {}).get("memory_bytes")
        key = name.split(".", 1)[1]
        if key == "kv_share" and not memory:
            raise LookupError(f"device {row['device']} has no memory size in the projections data")
        value = {"ttft_ms": lambda: fmt.ms(row["ttft_ms"], self.lang),
                 "decode_ms": lambda: fmt.ms(row["decode_ms_per_token"], self.lang),
                 "tps": lambda: fmt.tps(row["tps"], self.lang),
                 "kv_mb": lambda: fmt.megabytes(kv_bytes, self.lang),
                 "kv_share": lambda: fmt.percent(kv_bytes / memory, self.lang)}[key]()
        return Figure(value, "projected")


def _int_arg(arg: str | None, allowed: list[int]) -> int:
    if arg is None or not arg.isdigit() or int(arg) not in allowed:
        raise LookupError(f"@{arg} is not measured (measured: {', '.join(map(str, allowed))})")
    return int(arg)


def allowed_names() -> str:
    def show(name: str, arg: str) -> str:
        return f"{name}@{arg}" if arg else name

    return ", ".join(show(n, a) for n, a in {**GLOBAL_NAMES, **PAGE_NAMES}.items())


def replace_figures(markdown: str, source: str, src_path: str, resolver: FigureResolver,
                    titles: dict[str, Callable[[], str]]) -> str:
    """Replace every reference in `markdown`; errors name the line of the k-th reference in `source`
    (the raw file: front matter and other hooks' additions do not shift the reported line)."""
    refs = find_refs(markdown)
    if not refs:
        return markdown
    source_refs = find_refs(source)
    pieces, cursor = [], 0
    for k, ref in enumerate(refs):
        line = line_of(source, source_refs[k].start) if k < len(source_refs) else line_of(markdown, ref.start)
        match = _NAME.match(ref.body)
        try:
            if not match:
                raise LookupError(f"{{{{{ref.body}}}}} is not a figure reference")
            figure = resolver.resolve(match.group("name"), match.group("arg"))
        except LookupError as error:
            raise PluginError(f"{src_path}:{line}: {error.args[0]} — allowed: {allowed_names()}") from None
        pieces.append(markdown[cursor:ref.start])
        pieces.append(f'<span class="pd-figure" title="{escape(titles[figure.source]())}">{escape(figure.value)}</span>')
        cursor = ref.end
    pieces.append(markdown[cursor:])
    return "".join(pieces)
