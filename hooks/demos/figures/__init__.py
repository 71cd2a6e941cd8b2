"""Plotly figures for the demos, one module per demo kind; each builder takes results and strings."""
