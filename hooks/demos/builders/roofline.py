"""The `roofline` demo (bottleneck chapter): the build machine's roofline with prefill and decode on it,
and each phase's share of the compute and bandwidth ceilings, measured here or projected for a device."""

from __future__ import annotations

from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source, projected_source
from hooks.demos.figures import roofline as roofline_figures
from hooks.demos.measurements import Measurements
from hooks.demos.readouts import projection_at, projection_label
from hooks.demos.strings import Strings
from simulations.projections import roofline_seconds
from simulations.roofline import phase_point

PHASES = ("prefill", "decode")
SHOWN = ("compute_utilization", "bandwidth_utilization")  # what the meters and bars show of each phase


def projected_phases(row: dict[str, Any], device: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A projection placed on its device's roofline as a measured phase is on this machine's: the time
    is the roofline's own (the limiting ceiling is 100%), the FLOPs and bytes the cost model's."""
    peak, bandwidth = device["peak_flops"][row["dtype"]], device["bandwidth"]
    peaks = {"peak_gflops": peak / 1e9, "peak_gbps": bandwidth / 1e9}
    return {phase: phase_point(1000 * roofline_seconds(row[f"{phase}_flops"], row[f"{phase}_bytes"], peak, bandwidth),
                               row[f"{phase}_flops"], row[f"{phase}_bytes"], peaks) for phase in PHASES}


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    result = m.roofline()
    peaks = result["machine"]
    projections = m.projections()
    chosen = [row for pid in block.options.get("projections", [])
              if (row := projection_at(projections, pid, result["prompt_tokens"]))]
    measured = measured_source(peaks, m.simulator.model_name, strings)
    projected = projected_source(chosen, strings)
    phases = {"measured": {phase: result[phase] for phase in PHASES},
              **{row["id"]: projected_phases(row, projections["devices"][row["device"]]) for row in chosen}}
    labels = {"measured": strings["common.measured_label"],
              **{row["id"]: projection_label(projections, row["id"]) for row in chosen}}
    # The picker marks a projection as one; the chart's legend and the table name it plainly.
    picked = {source_id: f"{label} ({strings['common.projected_label']})" if source_id != "measured" else label
              for source_id, label in labels.items()}
    # The hardware picker's choices: name, each phase's utilisation, and the utilisation chart's frame that draws it.
    sources = [{"id": source_id, "label": picked[source_id], "frame": frame,
                **{phase: {key: by_phase[phase][key] for key in SHOWN} for phase in PHASES}}
               for frame, (source_id, by_phase) in enumerate(phases.items())]
    # The chart's note points to the sources under the demo: the spec sheets' titles on one line would be
    # thousands of pixels wide, wider than any chart.
    note = f"{measured} · {strings['common.projected_sources_below']}" if projected else measured
    bars = [{**source, "label": labels[source["id"]]} for source in sources]
    # The roofline chart draws prompt length i in frame i (the player steps through them).
    lengths = [{"prompt_tokens": point["prompt_tokens"], "frame": frame} for frame, point in enumerate(result["points"])]
    data = {**base(block, strings), "sources": sources, "prompt_lengths": lengths,
            "figures": {"roofline": roofline_figures.roofline(peaks, result["points"], strings, measured),
                        "utilization": roofline_figures.utilization(bars, strings, note)}}
    rows = [(strings["roofline.peak_compute"], fmt.with_unit(peaks["peak_gflops"], "GFLOP/s", lang)),
            (strings["roofline.peak_bandwidth"], fmt.with_unit(peaks["peak_gbps"], "GB/s", lang))]
    table = {"headers": [strings["timeline.source"], strings["common.phase"], strings["roofline.axis_intensity"],
                         strings["roofline.cat_compute"], strings["roofline.cat_bandwidth"]],
             "rows": [[labels[source_id], strings[f"common.phase_{phase}"],
                       fmt.number(by_phase[phase]["intensity"], lang),
                       fmt.percent(by_phase[phase]["compute_utilization"], lang),
                       fmt.percent(by_phase[phase]["bandwidth_utilization"], lang)]
                      for source_id, by_phase in phases.items() for phase in PHASES]}
    return Demo(data, fallback(block, strings, measured=measured, projected=projected, rows=rows, table=table))
