"""Decode at the physical limit: the real model's steps against their roofline floor (issue 23's figures).

    .venv/bin/python -m benchmarks.bench_batch [--json PATH] [--runs N] [--repeats N]
    .venv/bin/python -m benchmarks.bench_batch --profile    # where a step's (B = 1, 4, 16) and a prefill's time goes

One process, the model already fetched (`python -m simulations fetch`; never downloads). The floor of a
step is the cost model's roofline time on this machine's measured peaks (`cost.roofline_seconds`: the
larger of bytes ÷ bandwidth and FLOPs ÷ GEMM peak, the weights counted once per step and every user's
KV cache). Every ratio below is measured within one run; `--runs` repeats the decode figures in
interleaved rounds and prints the median and the spread (min–max) of each. Nothing is asserted: the
machine is shared and noisy (`uptime`).

1. Peaks: GEMM and a read-only stream over a buffer ≥ 8× the last-level cache (`roofline.measure_peaks`),
   measured before every decode round and once more at the end; the ceilings are the best of them (a burst
   of a neighbour's load during one measurement would lower every floor and flatter every ratio).
2. Batched decode at B = 1..64, each user's cache at 512 tokens (`batch.batched_decode_rows`, the sizes
   timed in interleaved rounds), and one user at 128 and 4096 tokens: step ÷ floor, the one-user share
   of the bandwidth, the time growth ÷ the bytes growth. B = 1 at 512 tokens is one user's step as the site
   measures it and the batching chapter shows it (`sweep.prompt_length_point`: consecutive steps after a
   prefill); the B = 1 step timed between the other sizes is printed beside it.
3. Prefill at 64..2048 tokens (the site's TTFT), in interleaved rounds: its share of the GEMM peak at each
   length, the median of the rounds, and whether it ever falls as the prompt grows.
4. `batch.measure` with its default sizes, as a cold build's hook calls it (its wall time), then through
   the build's result cache twice (a warm build: the second call's time).
5. The kernels' cold compile (a fresh numba cache, in a child process), and the kernel against BLAS for all
   the model's matrices at 32 to 1024 rows (a batch's, a prompt's), which `model.linear`'s choice rests on.
6. The memory the shares rest on (printed, not a target): the read stream's buffer read an eighth at a time,
   and a plain read of the one-user step's own weight copies, matrix by matrix, beside its products. On a
   host whose memory is not equally fast everywhere, the stream's ceiling depends on where its buffer lands.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import check, machine_line, spread, table, write_json
from hooks.demos.cache import ResultCache
from simulations import kernels
from simulations.batch import batched_decode_rows
from simulations.batch import measure as measure_batching
from simulations.cli import StderrProgress
from simulations.cost import batch_cost, prefill_cost, roofline_seconds
from simulations.formats import step_matrices, step_products
from simulations.generate import generate
from simulations.loader import load_model
from simulations.machine import machine_info
from simulations.model import decode_batch, linear
from simulations.plans import PLANS
from simulations.roofline import best_ceilings, best_seconds, measure_peaks, median_seconds, stream_bytes
from simulations.serving import prefilled_caches
from simulations.sweep import prompt_length_point, prompt_of_length

REPO = Path(__file__).resolve().parents[1]
BATCHES = PLANS["site"].batch_sizes  # the site's: what the batching chapter prints
CONTEXT = PLANS["site"].batch_context
LONG_CONTEXTS = (128, 4096)
PREFILL_LENGTHS = (64, 128, 256, 512, 1024, 2048)
CROSSOVER_ROWS = (32, 64, 128, 256, 1024)  # a batch's rows, then a prompt's (in the kernel's 64-row pieces)
COMPILE_SCRIPT = """
import sys, time, numpy as np
started = time.perf_counter()
from simulations import kernels
kernels.configure()
x, w = np.ones((3, 576), np.float32), np.ones((960, 576), np.float32)
kernels.rows_times_weight(x, w)
kernels.rows_times_weight(x, np.load(sys.argv[1], mmap_mode='c').view(np.ndarray))
kv = np.ones((2, 1, 3, 8, 64), np.float32)
kernels.one_token_attention(np.ones((1, 9, 64), np.float32), kv, kv, 0, 0, np.array([8]))
kernels.read_everything(np.ones(1024, np.float32))
kernels.rms_norm(x, np.ones(576, np.float32), 1e-5)
kernels.rms_norm(np.ones((64, 576), np.float32), np.ones(576, np.float32), 1e-5)  # a prompt's rows, on every core
fused = np.ones((64, 960), np.float32)  # queries and keys are views into the fused QKV product, as the model's
kernels.rope(fused[:, :768].reshape(64, 12, 64), np.ones((64, 1, 32), np.float32), np.ones((64, 1, 32), np.float32), False)
kernels.silu_gate(np.ones((3, 16), np.float32), np.empty((3, 8), np.float32))
kernels.silu_gate(np.ones((64, 16), np.float32), np.empty((64, 8), np.float32))  # a prompt's rows, on every core
cache = np.ones((3, 80, 64), np.float32)
kernels.prompt_attention(fused[:, :576].reshape(64, 9, 64), cache[:, :64], cache[:, :64])
print(time.perf_counter() - started)
"""


# The kernels a profile times (`simulations.kernels.timed`), by the part of a step each is.
PARTS = {"rows_times_weight": "products", "one_token_attention": "attention", "prompt_attention": "attention"}


def with_floor(row: dict[str, Any], machine: dict[str, float]) -> dict[str, Any]:
    """A measured step's floor and shares on the run's best ceilings (`roofline.best_ceilings`)."""
    seconds = row["step_ms"] / 1000
    return {**row, "floor_ms": roofline_seconds(row["flops"], row["bytes"], machine["peak_flops"],
                                                machine["bandwidth"]) * 1000,
            "bandwidth_utilization": row["bytes"] / seconds / machine["bandwidth"],
            "compute_utilization": row["flops"] / seconds / machine["peak_flops"]}


def decode_rounds(model: Any, peaks: list[dict[str, Any]], runs: int, repeats: int) -> dict[str, Any]:
    """`runs` interleaved rounds of the batched steps at CONTEXT and of one user at each LONG_CONTEXTS, the
    ceilings measured again before each round (appended to `peaks`)."""
    quiet = lambda message, fraction: None  # noqa: E731
    batch_caches = prefilled_caches(model, max(BATCHES), CONTEXT, repeats + 2)
    long_caches = {c: prefilled_caches(model, 1, c, repeats + 2) for c in LONG_CONTEXTS}
    raw = []
    for _ in range(runs):
        peaks.append(measure_peaks())
        machine = machine_of(peaks[-1])  # provisional: every row gets its floor again from the best ceilings
        # One user at CONTEXT as the site measures it (the decode chapters' step, which the batching chapter's
        # B = 1 takes): a prompt's prefill, then consecutive greedy steps, their median. The B = 1 step timed
        # between the other sizes runs right after B = 64's step, which reads 64 users' caches (1.5 GB): it is
        # printed beside it, not used.
        one_user_ms = prompt_length_point(model, CONTEXT, repeats, 1)["decode_ms_per_token"]
        rows = batched_decode_rows(model, batch_caches, BATCHES, CONTEXT, repeats, machine, quiet)
        between_ms = rows[0]["step_ms"]
        rows[0] = {**rows[0], "step_ms": one_user_ms, "between_sizes_ms": between_ms}
        ones = {c: batched_decode_rows(model, long_caches[c], [1], c, repeats, machine, quiet)[0] for c in LONG_CONTEXTS}
        raw.append((rows, ones))
    return raw


def machine_of(peaks: dict[str, Any]) -> dict[str, float]:
    return {"peak_flops": peaks["peak_gflops"] * 1e9, "bandwidth": peaks["peak_gbps"] * 1e9}


def decode_figures(raw: list, machine: dict[str, float]) -> dict[str, Any]:
    """The decode rounds' figures, every step against its floor on the run's best ceilings."""
    per_run = []
    for rows, ones in raw:
        rows = [with_floor(row, machine) for row in rows]
        short, long = ones[LONG_CONTEXTS[0]], ones[LONG_CONTEXTS[1]]
        per_run.append({
            "rows": rows,
            "growth": (long["step_ms"] / short["step_ms"]) / (long["bytes"] / short["bytes"]),
            "long_ms": [short["step_ms"], long["step_ms"]],
        })
    return {"runs": per_run,
            "floor_ratio": {b: spread([run["rows"][i]["step_ms"] / run["rows"][i]["floor_ms"] for run in per_run])
                            for i, b in enumerate(BATCHES)},
            "step_ms": {b: spread([run["rows"][i]["step_ms"] for run in per_run]) for i, b in enumerate(BATCHES)},
            "one_user_bandwidth": spread([run["rows"][0]["bandwidth_utilization"] for run in per_run]),
            "growth": spread([run["growth"] for run in per_run])}


def prefill_times_ms(model: Any, rounds: int) -> dict[int, list[float]]:
    """Each length's prefill (its TTFT, as the site measures it: `generate`'s first step), once a round in
    `rounds` interleaved rounds, after one round that is not counted (it makes the kernels' copies and first
    touches the memory). The rounds alternate the lengths' order, so that neither end is always timed first."""
    prompts = {n: prompt_of_length(model, n) for n in PREFILL_LENGTHS}
    times: dict[int, list[float]] = {n: [] for n in PREFILL_LENGTHS}
    for round_ in range(rounds + 1):
        for n in PREFILL_LENGTHS if round_ % 2 else PREFILL_LENGTHS[::-1]:
            ms = next(iter(generate(model, prompts[n], max_new_tokens=1, stop_at_eos=False))).ms
            if round_:
                times[n].append(ms)
    return times


def prefill_shares(model: Any, times_ms: dict[int, list[float]], machine: dict[str, float]) -> list[dict[str, Any]]:
    def share(n: int, ms: float) -> float:
        return prefill_cost(model.config.shape, n).flops / (ms / 1000) / machine["peak_flops"]

    return [{"tokens": n, "ms": statistics.median(ms), "share": share(n, statistics.median(ms)),
             "share_min": share(n, max(ms)), "share_max": share(n, min(ms)), "rounds": [share(n, t) for t in ms]}
            for n, ms in times_ms.items()]


def fewest_rounds_that_show_a_fall(rounds: int, significance: float = 0.05) -> int:
    """In how many of `rounds` paired rounds a longer prompt's share must be below the shorter one's for the fall
    to be more than the host's noise: the one-sided sign test's critical count (7 of 7 rounds for 7)."""
    for count in range(rounds + 1):
        if sum(math.comb(rounds, k) for k in range(count, rounds + 1)) / 2**rounds < significance:
            return count
    return rounds + 1  # too few rounds to show any fall


def measure_cold_and_warm(model: Any, peaks: dict[str, Any]) -> dict[str, float]:
    started = time.perf_counter()
    measure_batching(model, peaks=peaks)
    cold = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        cache = ResultCache(Path(folder), memo={})
        parts = {"what": "batch", "bench": True}
        cache.get_or_compute(parts, lambda: measure_batching(model, peaks=peaks, batch_sizes=(1, 2)), label="batch")
        started = time.perf_counter()
        ResultCache(Path(folder), memo={}).get_or_compute(parts, lambda: measure_batching(model, peaks=peaks), label="batch")
        warm = time.perf_counter() - started
    return {"cold_s": cold, "warm_s": warm}


def cold_compile_seconds() -> float:
    with tempfile.TemporaryDirectory() as folder:
        weights = Path(folder) / "w.npy"
        np.save(weights, np.ones((960, 576), np.float32))
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(folder) / "numba")}
        done = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, str(weights)], env=env, capture_output=True,
                              text=True, check=True, cwd=REPO)
        return float(done.stdout.strip().splitlines()[-1])


def memory_placement(model: Any, repeats: int = 3) -> dict[str, Any]:
    """What the memory gives where the figures read it: the read stream's buffer (`roofline.stream_bytes`) an
    eighth at a time, each piece's best of `repeats` reads; and the one-user step's float32 weight copies (the
    kernels' `weight_tiles` of `formats.step_matrices`) read plainly, one matrix after another in a step's order,
    beside the step's products on them (`formats.step_products`; best of `repeats` passes each, GB/s)."""
    def best_gbps(run: Any, nbytes: int) -> float:  # best_seconds runs a first pass untimed, as for every ceiling
        return nbytes / best_seconds(run, repeats) / 1e9

    buffer = np.ones(stream_bytes() // 4, dtype=np.float32)
    eighths = [best_gbps(lambda part=part: kernels.read_everything(part), part.nbytes)
               for part in np.array_split(buffer, 8)]
    del buffer
    copies = [kernels.weight_tiles(w).reshape(-1) for w in step_matrices(model.weights)]
    nbytes = sum(c.nbytes for c in copies)

    def plain() -> None:
        for copy in copies:
            kernels.read_everything(copy)

    return {"stream_eighths_gbps": eighths, "copies_plain_gbps": best_gbps(plain, nbytes),
            "copies_products_gbps": best_gbps(step_products(model), nbytes)}


def crossover(model: Any, repeats: int) -> list[dict[str, Any]]:
    """A step's matrix products (every layer's and the LM head) at each of CROSSOVER_ROWS rows: the kernel
    against the numpy path of `model.linear` (BLAS, split into row blocks on the cores where it splits)."""
    def numpy_path(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        with kernels.use("numpy"):
            return linear(x, w)

    matrices = [np.asarray(w) for w in step_matrices(model.weights)]
    rows = []
    for b in CROSSOVER_ROWS:
        x = {w.shape[1]: np.random.default_rng(b).standard_normal((b, w.shape[1]), dtype=np.float32) for w in matrices}
        kernel = median_seconds(lambda x=x: [kernels.rows_times_weight(x[w.shape[1]], w) for w in matrices], repeats)
        blas = median_seconds(lambda x=x: [numpy_path(x[w.shape[1]], w) for w in matrices], repeats)
        rows.append({"rows": b, "kernel_ms": 1000 * kernel, "blas_ms": 1000 * blas, "kernel_faster": kernel < blas})
    return rows


def checks(decode: dict[str, Any], prefill: list[dict[str, Any]], build: dict[str, float],
           compile_s: float) -> list[dict[str, Any]]:
    out = []

    def add(name: str, figure: dict[str, float] | float, sense: str, target: float, note: str = "") -> None:
        out.append(check(name, figure, sense, target, note, spread="runs"))

    add("one user at 512: share of the bandwidth", decode["one_user_bandwidth"], ">=", 0.75)
    for b in BATCHES:
        add(f"step ÷ floor, B = {b}", decode["floor_ratio"][b], "<=", 2.0 if b <= 16 else 3.0)
    add("decode time growth ÷ bytes growth 128→4096", decode["growth"], "<=", 1.15, "every run")
    shares = [p["share"] for p in prefill]
    add("prefill share of GEMM peak at 2048", shares[-1], ">=", 0.6, "median of the rounds")
    # Never falls. The rounds are interleaved, so each round compares the lengths under the same host: a step falls
    # when the longer prompt's share is below the shorter one's in more rounds than chance would give a flat pair
    # (the sign test). The medians alone called a flat pair a fall or not by the noise: 0.812 -> 0.808, each length
    # spread over 0.03 between rounds, "fell" in one run and not in the next.
    steps = [(f"{a['tokens']}→{b['tokens']}", sum(y < x for x, y in zip(a["rounds"], b["rounds"], strict=True)), y / x)
             for a, b in zip(prefill, prefill[1:], strict=False) for x, y in [(a["share"], b["share"])]]
    needed = fewest_rounds_that_show_a_fall(len(prefill[0]["rounds"]))
    most = max(steps, key=lambda step: step[1])
    falls = [name for name, lower, _ in steps if lower >= needed]
    smallest = min(steps, key=lambda step: step[2])
    out.append(check("prefill share: rounds a step fell, most", most[1], "<=", needed - 1,
                     ("never falls" if not falls else f"falls at {', '.join(falls)}")
                     + f" (a fall: lower in {needed} of {len(prefill[0]['rounds'])} rounds); most at {most[0]}; medians'"
                     f" smallest step {smallest[2]:.3f} at {smallest[0]}"))
    add("batching measurement, cold build (s)", build["cold_s"], "<=", 60.0)
    add("batching measurement, warm build (s)", build["warm_s"], "<=", 0.5, "read from the result cache")
    add("kernels' cold compile (s)", compile_s, "<=", 15.0)
    return out


def where_the_time_goes(model: Any, batches: tuple[int, ...] = (1, 4, 16), steps: int = 5) -> list[dict[str, Any]]:
    """Each batch size's step split into the kernels' matrix products, their attention and the rest (norms,
    RoPE, the MLP gate, residuals, Python), every kernel call wrapped in a timer; caches at CONTEXT tokens. The
    products and the attention each with the rate at which they read their bytes (the cost model's weights, and
    every user's cache), for the read stream beside them."""
    rows = []
    spent: dict[str, float] = {}
    with kernels.timed(spent, ("rows_times_weight", "one_token_attention")):
        for batch in batches:
            caches = prefilled_caches(model, batch, CONTEXT, steps + 2)
            decode_batch(model.weights, model.config, [42] * batch, caches)  # warm-up
            spent.clear()
            started = time.perf_counter()
            for _ in range(steps):
                decode_batch(model.weights, model.config, [42] * batch, caches)
            step = (time.perf_counter() - started) / steps * 1000
            parts = {PARTS[name]: seconds / steps * 1000 for name, seconds in spent.items()}
            cost = batch_cost(model.config.shape, [(1, CONTEXT)] * batch)
            rates = {f"{name}_gbps": nbytes / (parts[name] / 1000) / 1e9
                     for name, nbytes in (("products", cost.weight_bytes), ("attention", cost.kv_read_bytes))
                     if parts.get(name)}
            rows.append({"batch": batch, "step_ms": step, **parts, "rest_ms": step - sum(parts.values()), **rates,
                         "products_mb": cost.weight_bytes / 1e6, "attention_mb": cost.kv_read_bytes / 1e6})
    return rows


def where_prefill_goes(model: Any, peak_flops: float, repeats: int = 3) -> list[dict[str, Any]]:
    """Each prefill length split into the products, the attention and the rest, each kernel call timed (the
    fastest of `repeats`), with the products' and the attention's own shares of the GEMM peak: the cost model's
    FLOPs of each ÷ its time."""
    rows = []
    spent: dict[str, float] = {}
    with kernels.timed(spent, ("rows_times_weight", "prompt_attention")):
        for n in PREFILL_LENGTHS:
            prompt, runs = prompt_of_length(model, n), []
            for _ in range(repeats + 1):  # the first warms up
                spent.clear()
                ms = next(iter(generate(model, prompt, max_new_tokens=1, stop_at_eos=False))).ms
                runs.append((ms, {PARTS[name]: seconds * 1000 for name, seconds in spent.items()}))
            ms, parts = min(runs[1:], key=lambda run: run[0])
            cost = prefill_cost(model.config.shape, n)
            rows.append({"tokens": n, "ms": ms, **parts, "rest_ms": ms - sum(parts.values()),
                         "attention_flops_fraction": cost.attention_flops / cost.flops,
                         "products_share": (cost.linear_flops + cost.lm_head_flops) / (parts["products"] / 1000) / peak_flops,
                         "attention_share": cost.attention_flops / (parts["attention"] / 1000) / peak_flops})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_batch", description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the full record as JSON to PATH ('-': stdout "
                        "instead of the tables); benchmarks/results/<host class>.json keeps a host's reference run")
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds of the decode figures (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="steps per batch size and round (default 5)")
    parser.add_argument("--prefill-rounds", type=int, default=7,
                        help="interleaved rounds of the prefill lengths (default 7)")
    parser.add_argument("--profile", action="store_true",
                        help="only where a step's time goes at B = 1, 4 and 16: products, attention, the rest")
    args = parser.parse_args()

    kernels.configure()
    progress = StderrProgress()
    model = load_model("smollm2-135m", progress)
    if args.profile:
        progress.done()
        peaks = measure_peaks()
        print(f"decode at {CONTEXT} tokens (read stream {peaks['peak_gbps']:.1f} GB/s):")
        for row in where_the_time_goes(model):
            print(f"B = {row['batch']}: step {row['step_ms']:.1f} ms · products {row.get('products', 0):.1f} "
                  f"({row['products_mb']:.0f} MB at {row.get('products_gbps', 0):.1f} GB/s) · attention "
                  f"{row.get('attention', 0):.1f} ({row['attention_mb']:.0f} MB at {row.get('attention_gbps', 0):.1f} "
                  f"GB/s) · the rest {row['rest_ms']:.1f}")
        peak = peaks["peak_gflops"] * 1e9
        print(f"prefill (GEMM peak {peak / 1e9:.0f} GFLOP/s):")
        for row in where_prefill_goes(model, peak):
            print(f"{row['tokens']} tokens: {row['ms']:.0f} ms · products {row['products']:.0f} "
                  f"({row['products_share']:.2f} of the peak) · attention {row['attention']:.0f} "
                  f"({row['attention_share']:.2f}; {row['attention_flops_fraction']:.0%} of the FLOPs) · "
                  f"the rest {row['rest_ms']:.0f}")
        return
    progress("the kernels' cold compile, in a child process", None)
    compile_s = cold_compile_seconds()
    progress(f"decode: B = 1..64 at {CONTEXT} tokens, one user at {LONG_CONTEXTS}, {args.runs} rounds, each after "
             "this machine's peaks", None)
    measured_peaks: list[dict[str, Any]] = []
    raw_decode = decode_rounds(model, measured_peaks, args.runs, args.repeats)
    progress(f"prefill at 64..2048 tokens, {args.prefill_rounds} interleaved rounds", None)
    prefill_times = prefill_times_ms(model, args.prefill_rounds)
    measured_peaks.append(measure_peaks())
    peaks = best_ceilings(measured_peaks)
    machine = machine_of(peaks)
    decode = decode_figures(raw_decode, machine)
    prefill = prefill_shares(model, prefill_times, machine)
    progress("batch.measure(), cold and from the cache", None)
    build = measure_cold_and_warm(model, peaks)
    progress("kernel vs BLAS for a step's products", None)
    cross = crossover(model, args.repeats)
    progress("the memory the shares rest on: the stream's buffer an eighth at a time, the step's own copies", None)
    placement = memory_placement(model)
    progress.done()
    record = {"machine": machine_info(kernels=kernels.describe()), "peaks": peaks, "kernels": kernels.describe(),
              "checks": checks(decode, prefill, build, compile_s), "decode": decode, "prefill": prefill,
              "build": build, "compile_s": compile_s, "crossover": cross, "placement": placement}
    if write_json(record, args.json):
        return
    print(machine_line(record["machine"]))
    each = peaks["measurements"]
    print(f"decode path: {record['kernels']} · peaks, best of {len(each)}: GEMM {peaks['peak_gflops']:.1f} GFLOP/s "
          f"({min(p['peak_gflops'] for p in each):.0f}–{max(p['peak_gflops'] for p in each):.0f}) · read stream "
          f"{peaks['peak_gbps']:.1f} GB/s ({min(p['peak_gbps'] for p in each):.1f}–{max(p['peak_gbps'] for p in each):.1f})"
          f" over {peaks['stream_bytes'] // 2**20} MiB · ridge {peaks['peak_gflops'] / peaks['peak_gbps']:.2f} FLOP/byte\n")
    print(table(record["checks"]))
    print("\nstep ms (median of rounds): " + " · ".join(f"B={b} {decode['step_ms'][b]['median']:.1f}" for b in BATCHES))
    print("floor ms: " + " · ".join(f"B={row['batch']} {row['floor_ms']:.1f}" for row in decode["runs"][0]["rows"]))
    print("one user at 512 tokens, ms, as the site measures it / timed between the other sizes: " + " · ".join(
        f"{run['rows'][0]['step_ms']:.1f} / {run['rows'][0]['between_sizes_ms']:.1f}" for run in decode["runs"]))
    print("one user at 128 / 4096 tokens, ms: " + " · ".join(f"{a:.1f} / {b:.1f}" for a, b in
                                                             (run["long_ms"] for run in decode["runs"])))
    print("prefill share of GEMM peak, median (rounds' range): " + " · ".join(
        f"{p['tokens']} {p['share']:.2f} ({p['share_min']:.2f}–{p['share_max']:.2f})" for p in prefill))
    print("kernel vs BLAS, a step's products: " + " · ".join(
        f"B={c['rows']} {c['kernel_ms']:.0f}/{c['blas_ms']:.0f} ms" for c in cross))
    print("the read stream's buffer an eighth at a time, GB/s: "
          + " ".join(f"{g:.1f}" for g in placement["stream_eighths_gbps"])
          + f" · the one-user step's weight copies, read plainly matrix by matrix: {placement['copies_plain_gbps']:.1f}"
          f", by the step's products: {placement['copies_products_gbps']:.1f} "
          f"({placement['copies_products_gbps'] / placement['copies_plain_gbps']:.2f} of the plain read)")


if __name__ == "__main__":
    main()
