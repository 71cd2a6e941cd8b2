"""Speed, size and quality figures against their targets, printed, never asserted (benchmarks/README.md).

Each script runs from the repository root as a module, a client of the installed packages (`simulations`,
`hooks`, and `harness`, which it shares with the tests): `.venv/bin/python -m benchmarks.bench_site --help`.
"""
