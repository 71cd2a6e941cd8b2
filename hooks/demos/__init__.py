"""Build-side demos: parse `demo` blocks, run (cached) simulations, build Plotly figures and demo JSON.

Nothing here is an MkDocs event; `hooks/demo_hook.py` wires these modules to MkDocs.
"""
