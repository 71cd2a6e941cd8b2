"""Build-side demos: parse `demo` blocks, run (cached) simulations, build Plotly figures and demo JSON.

Nothing here is an MkDocs event; `hooks/demo_hook.py` wires these modules to MkDocs. Where things are:
`blocks.py` parses and checks a block; `measurements.py` asks `simulator.py` for traces, sweeps, the
roofline and projections through `cache.py`, and holds the demos' defaults; `builders/<kind>.py` turns
them into the demo's JSON (`demo.schema.json` is the contract with `docs/assets/pd/demos/<kind>.js`) and
its no-JavaScript fallback (`render.py`, templates in overrides/pd/); `figures/` builds the Plotly
figures; `readouts.py` and `formatting.py` derive and write numbers; figures in the prose: `figure_names.py` (the
names and what a figure is), `figure_refs.py` (finding `{{ }}`), `figure_resolver.py` and `batch_figures.py`
(each name's value), `inline_figures.py` (placing them in a page).
"""
