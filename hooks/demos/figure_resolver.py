"""Each figure name resolved to one `Figure`: its raw number (what a checked claim's condition compares,
see hooks/claims/), the text `{{ }}` prints, and its source; the condition and the printed figure
therefore never disagree. The numbers are derived here from the measurements (sweep, roofline, cache,
projections); the batching chapter's come from hooks/demos/batch_figures.py, the weight formats' from
hooks/demos/format_figures.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from hooks.demos import batch_figures, format_figures
from hooks.demos import formatting as fmt
from hooks.demos.figure_names import GLOBAL_NAMES, PAGE_NAMES, PID, Figure, parse_ref
from hooks.demos.readouts import projection_rows
from hooks.language.vocabulary import load_vocabulary
from simulations import cost
from simulations.projection_data import load_data
from simulations.projections import phase_cost


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
        """The figure a `{{ body }}` reference names. One that is a ledger entry is checked against it, and
        against every other figure that printed the same entry in this language (`Measurements.printed`)."""
        found = self._figure(body)
        if found.entry is not None and hasattr(self.m, "check_printed"):
            self.m.check_printed(self.lang, body.strip(), found)
        return found

    def _figure(self, body: str) -> Figure:
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
        timed = {"ttft_ms": "ttft", "decode_ms_per_token": "decode_step"}.get(field)  # the recording's ledger entries
        entry = f"{readouts['entry']}/{timed}" if timed and readouts.get("entry") else None
        return replace(self._number(readouts[field], show), entry=entry)

    def _machine(self, key: str, arg: str | None) -> Figure:
        if key == "virtual_cores":  # 1 when the cores are a hypervisor's virtual CPUs, else 0
            return self._number(1 if self.m.sweep()["machine"].get("virtual") else 0, fmt.count)
        if key in ("cpu", "vector", "cores", "date"):  # from the sweep's stamp: no roofline measured for these
            value = self.m.sweep()["machine"].get(key, "?")
            return self._number(value, fmt.count) if key == "cores" else Figure(None, str(value), "measured")
        peaks = self.m.roofline()["machine"]
        if key in ("peak_gflops", "peak_gbps"):
            return replace(self._unit(peaks[key], "GFLOP/s" if key == "peak_gflops" else "GB/s"),
                           entry=f"ceiling/{'gemm_gflops' if key == 'peak_gflops' else 'read_gbps'}")
        buffers = {"stream_mb": "stream_bytes", "weights_stream_mb": "weights_stream_bytes",
                   "cache_mb": "last_level_cache_bytes"}
        if key in buffers:  # the bandwidth's buffers (far beyond the cache; the weights' size); the cache (0: none)
            return self._number(peaks.get(buffers[key]) or 0, fmt.megabytes)
        ridge = peaks["peak_gflops"] / peaks["peak_gbps"]  # FLOP/byte where the two ceilings meet
        if key == "ridge":
            return self._unit(ridge, "FLOP/byte")
        if key == "prefill_crossover_formula":  # P* ≈ ridge × bytes per weight ÷ 2, the model in float32
            return self._number(math.ceil(ridge * cost.FLOAT32_BYTES / 2), fmt.count)
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
        if key == "decode_growth_from_attention":  # measured: attention's part of a step's growth, first to last
            grown = last["decode_ms_per_token"] - first["decode_ms_per_token"]
            return self._number((last["decode_attention_ms"] - first["decode_attention_ms"]) / grown if grown > 0 else 0,
                                fmt.percent)
        if key in ("tps_change_pct", "tps_drop_pct"):
            change = (last["tps"] - first["tps"]) / first["tps"]
            return self._number(change if key == "tps_change_pct" else -change, fmt.percent)
        point = _measured_at(points, "prompt_tokens", arg)
        if key == "attention_share":  # of a prefill's FLOPs, by the cost model
            counted = cost(point["prompt_tokens"], 0)
            return self._number(counted.attention_flops / counted.flops, fmt.percent)
        if key in ("prefill_attention_time", "decode_attention_time"):  # measured: the share of the phase's time
            phase = key.split("_")[0]
            total = point["ttft_ms"] if phase == "prefill" else point["decode_ms_per_token"]
            return self._number(point[f"{phase}_attention_ms"] / total, fmt.percent)
        if key == "decode_kv_share":  # of the bytes a decode step reads after N tokens, by the cost model
            counted = cost(1, point["prompt_tokens"])
            return self._number(counted.kv_read_bytes / counted.bytes, fmt.percent)
        if key == "prefill_util":
            seconds = point["ttft_ms"] / 1000
            peak = self.m.roofline()["machine"]["peak_gflops"] * 1e9
            return self._number(cost(point["prompt_tokens"], 0).flops / seconds / peak, fmt.percent)
        field, show = {"ttft_ms": ("ttft_ms", fmt.ms), "decode_ms": ("decode_ms_per_token", fmt.ms),
                       "tps": ("tps", fmt.tps)}[key]
        entry = {"ttft_ms": "ttft", "decode_ms": "decode"}.get(key)
        return replace(self._number(point[field], show), entry=entry and f"{entry}/f32/{point['prompt_tokens']}")

    def _cache(self, key: str, arg: str | None) -> Figure:
        point = _measured_at(self.m.sweep()["cache_vs_recompute"], "context", arg)
        cached, recompute = point["cached_ms_per_token"], point["recompute_ms_per_token"]
        value, show = {"cached_ms": (cached, fmt.ms), "recompute_ms": (recompute, fmt.ms),
                       "speedup": (recompute / cached, fmt.times)}[key]
        entry = {"cached_ms": "decode", "recompute_ms": "recompute"}.get(key)
        return replace(self._number(value, show), entry=entry and f"{entry}/f32/{point['context']}")

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
        result = self.m.batch()
        found = batch_figures.figure(key, arg, result, self.lang)
        context = result["context_tokens"]
        entry = {"step_ms": f"batch/f32/{context}/{arg}", "ms_per_token": f"batch/f32/{context}/{arg}",
                 "stall_ms": f"two_users/{arg}/stall_ms", "ttft_ms": f"two_users/{arg}/ttft_ms",
                 "mixed_ms": f"mixed/f32/{context}/{result['two_users']['chunk_tokens']}"}.get(key)
        return replace(found, entry=entry)

    def _formats(self, key: str, arg: str | None) -> Figure:
        result = self.m.formats()
        found = format_figures.figure(key, arg, result, self.lang)
        if key not in ("ttft_ms", "decode_ms", "products_ms"):
            return found
        name = format_figures.format_row(result, arg)["format"]
        entry = {"ttft_ms": f"ttft/{name}/{format_figures.reference_tokens(result)}",
                 "decode_ms": f"decode/{name}/{result['context_tokens']}", "products_ms": f"products/{name}"}[key]
        return replace(found, entry=entry)

    def _proj(self, key: str, arg: str | None) -> Figure:
        if key.startswith("knee") or key == "ridge":
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
        if key == "prefill_work_growth":  # by the cost model, from the shortest projected prompt to the longest
            return self._number(rows[-1]["prefill_flops"] / rows[0]["prefill_flops"], fmt.times, "projected")
        if key == "prefill_crossover_tokens":
            if "prefill_crossover_tokens" not in rows[0]:
                raise LookupError(f"the projections data has no prefill_crossover_tokens for {pid} (the key "
                                  "comes from simulations.projections.project_one, which does not provide it yet)")
            return self._number(rows[0]["prefill_crossover_tokens"], fmt.count, "projected")
        row = next((r for r in rows if str(r["prompt_tokens"]) == length), None)
        if row is None:
            raise LookupError(f"no projection of {pid} at {length!r} tokens (known: "
                              f"{', '.join(str(r['prompt_tokens']) for r in rows)})")
        if key in ("attention_share", "decode_kv_share"):  # by the cost model, at this length
            model = load_data("models")["models"][row["model"]]
            if key == "attention_share":  # of a prefill's FLOPs
                counted = phase_cost(model, row["bits_per_weight"], "prefill", row["prompt_tokens"])
                return self._number(counted.attention_flops / counted.flops, fmt.percent, "projected")
            counted = phase_cost(model, row["bits_per_weight"], "decode", row["prompt_tokens"])  # of a step's bytes
            return self._number(counted.kv_read_bytes / counted.bytes, fmt.percent, "projected")
        if key == "kv_users":  # how many users' caches of this length fit in the memory the weights leave
            memory = projections["devices"][row["device"]]["memory_bytes"]
            return self._number(max(0, int((memory - row["weight_bytes"]) // row["kv_bytes"])), fmt.count, "projected")
        value, show = {"ttft_ms": (row["ttft_ms"], fmt.ms), "decode_ms": (row["decode_ms_per_token"], fmt.ms),
                       # the pessimistic end of an uncertain device's figures (the bound itself otherwise)
                       "ttft_worst_ms": (row["ttft_ms_range"][1], fmt.ms),
                       "decode_worst_ms": (row["decode_ms_range"][1], fmt.ms),
                       "tps": (row["tps"], fmt.tps), "kv_mb": (row["kv_bytes"], fmt.megabytes),
                       "kv_share": (row["kv_share_of_memory"], fmt.percent)}[key]
        return self._number(value, show, "projected")

    def _vocabulary(self, key: str, arg: str | None) -> Figure:
        """The measurement noise the qualitative words are judged by (docs/vocabulary.yml's `noise:`), so a
        sentence that states it prints the very threshold its claims use."""
        vocabulary = load_vocabulary()
        if vocabulary.noise is None:
            raise LookupError(f"vocabulary.noise: {vocabulary.path} sets no `noise:`")
        means = (vocabulary.noise_means or {}).get(self.lang)
        return Figure(vocabulary.noise, fmt.percent(vocabulary.noise, self.lang), "vocabulary",
                      means or vocabulary.path)

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

