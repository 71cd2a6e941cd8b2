"""What the "measure this device" demo reaches in the test browser, beside numpy on the same machine.

    .venv/bin/python -m benchmarks.bench_device                  # 3 interleaved rounds: numpy, then the page (auto, full)
    .venv/bin/python -m benchmarks.bench_device --site /tmp/site # an already built site
    .venv/bin/python -m benchmarks.bench_device --rounds 5 --backends wasm:full js:quick webgpu:quick

Each round measures numpy's ceilings (simulations.roofline.measure_peaks: float32 GEMM through BLAS, and
the better of a copy and a matrix-vector product over 256 MiB), then presses the demo's button in Debian's
Chromium (auto mode, full) and reads its result. It prints the page's two ceilings as fractions of
numpy's beside the targets — matrix product ≥ 1/8 of numpy's GEMM (WebAssembly's 128-bit SIMD allows at
most 1/4 on an AVX-512 machine), streaming read ≥ 1/2 of numpy's bandwidth, a full measurement ≤ 20 s, the
page's longest main-thread task while it measures under 200 ms (the measurement runs in workers: the page
must keep answering the reader) —
with the median and range over the rounds, and then one run of each extra backend (a second Chromium with
--enable-unsafe-webgpu for WebGPU, which headless Chromium serves through SwiftShader, a CPU). Nothing is
asserted: the machines are shared and noisy, which the range shows. Without --site it builds the site
with the tiny model.

    .venv/bin/python -m benchmarks.bench_device --live          # the real model in the page beside numba (3 rounds)
    .venv/bin/python -m benchmarks.bench_device --live --prefill-split --rounds 5   # prefill on two workers vs one

With --live it measures the real SmolLM2 running in the page (docs/assets/pd/device/README.md) beside the project's
own kernels (simulations/, numba) on the same machine in the same run, interleaved: decode tokens/s at a 512-token
context and prefill of 512 tokens (the device demo on the real weights, quick mode, one worker; numba in the
file's own formats on every core), the time from the press to the first token with the weights kept in Cache
Storage (the conversation demo, the chapter's prompt, a second page of the same browser profile), the bytes the
chapter transfers before the press, and the kernels' rate in each format the page could publish (Q4_1 layers with
a Q8_0 embedding, as the file; Q8_0 throughout). Without --site it builds a tiny site that publishes the real model
(PD_MODEL=tiny PD_LIVE_MODEL=smollm2-135m).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from playwright.sync_api import sync_playwright

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.static_server import StaticServer
from simulations.convert import convert, file_format
from simulations.generate import generate
from simulations.loader import load_model
from simulations.roofline import measure_peaks

REPO = Path(__file__).resolve().parents[1]

PAGE = "en/bottleneck/"
RUN_TIMEOUT_MS = 900_000
TARGETS = {"compute": 1 / 8, "stream": 1 / 2, "full_s": 20.0, "long_task_ms": 200.0}
# Records the page's long main-thread tasks (over 50 ms) from its first script on.
LONG_TASKS = """window.__pdLongTasks = [];
new PerformanceObserver((list) => list.getEntries().forEach((e) => window.__pdLongTasks.push(e.duration)))
  .observe({ type: "longtask", buffered: true });"""


def measure(playwright: Any, url: str, backend: str, mode: str) -> dict[str, Any]:
    """One press of the button with `backend` (auto, wasm, js, webgpu) and `mode`; the panel's data-pd-result."""
    args = [*CHROMIUM_ARGS, "--enable-unsafe-webgpu"] if backend == "webgpu" else CHROMIUM_ARGS
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.add_init_script(LONG_TASKS)
        page.goto(f"{url}{PAGE}?pd-device-backend={backend}")
        demo = page.locator(".pd-demo[data-pd-demo=device]")
        demo.scroll_into_view_if_needed()
        page.mouse.move(10, 300)
        page.mouse.move(20, 310)
        demo.locator("button.pd-button--play").wait_for()
        demo.locator("select").select_option(mode)
        page.wait_for_load_state("networkidle")  # what the gesture started (the chapter's other demos) has settled
        page.evaluate("() => { window.__pdLongTasks.length = 0; }")
        demo.locator("button.pd-button--play").click()
        page.wait_for_function("el => !['idle', 'running'].includes(el.dataset.pdDeviceState)",
                               arg=demo.element_handle(), timeout=RUN_TIMEOUT_MS)
        if demo.get_attribute("data-pd-device-state") != "done":
            return {"backend": backend, "mode": mode, "error": demo.locator(".pd-device__status").text_content()}
        result = json.loads(demo.locator("[data-pd-result]").get_attribute("data-pd-result"))
        return {**result, "longest_task_ms": max(page.evaluate("() => window.__pdLongTasks"), default=0.0)}
    finally:
        browser.close()


def backend_name(result: dict[str, Any]) -> str:
    if result["backend"] == "wasm":
        return f"WebAssembly SIMD{' (relaxed)' if result['variant'] == 'relaxed' else ''}, {result['workers']} workers"
    if result["backend"] == "webgpu":
        return f"WebGPU ({result['adapter']['description']})"
    return "JavaScript, 1 thread"


def summary(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"{result['backend']}, {result['mode']}: {result['error']}"
    pp, tg = result["pp_tps"], result["tg_tps"]
    return (f"{backend_name(result)}, {result['mode']}: matrix product {result['peak_gflops']:.3g} GFLOP/s, "
            f"streaming read {result['peak_gbps']:.3g} GB/s · pp{result['prompt_tokens']} {pp['median']:.3g} tok/s "
            f"({pp['min']:.3g}–{pp['max']:.3g}, n={pp['n']}) · tg {tg['median']:.3g} tok/s ({tg['min']:.3g}–"
            f"{tg['max']:.3g}, n={tg['n']}) · TTFT {result['ttft_ms']:,.0f} ms · decode {result['decode_ms_per_token']:.1f} "
            f"ms/token · prefill {100 * result['prefill']['compute_utilization']:.0f}% of its ceiling, decode "
            f"{100 * result['decode']['bandwidth_utilization']:.0f}% of its · {result['layers_measured']} of "
            f"{result['layers_total']} layers · model {result['memory_bytes'] / 1e6:.0f} MB, streaming buffer "
            f"{result['stream_bytes'] / 1e6:.0f} MB · {result['elapsed_s']:.1f} s · longest main-thread task "
            f"{result['longest_task_ms']:.0f} ms")


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3g} (range {min(values):.3g}–{max(values):.3g}, n={len(values)})"


# --- the real model in the page (--live) ------------------------------------------------------------------

LIVE_TARGETS = {"decode": 1 / 3, "prefill": 1 / 4, "first_token_s": 2.0}
CHAPTER = "en/two-phases/"
# The page's kernels in each format on SmolLM2's layer shapes: synthetic blocks (the speed does not depend on the
# values; every scale a normal half float), each product timed as the best of several.
FORMAT_RATES = """async () => {
  const bytes = await (await fetch('/assets/pd/device/kernels-relaxed.wasm')).arrayBuffer();
  const variant = WebAssembly.validate(bytes) ? 'relaxed' : 'simd';
  const source = variant === 'relaxed' ? bytes : await (await fetch('/assets/pd/device/kernels-simd.wasm')).arrayBuffer();
  const { instance } = await WebAssembly.instantiate(source, {});
  const k = instance.exports;
  k.memory.grow(1200);
  k.f16_table(1024);
  const shapes = [[1728, 576], [576, 576], [3072, 576], [576, 1536]];  // Q, K and V; output; gate and up; down
  const out = {};
  // q4_1_int: Q4_1 in integer dot products (matvec_q4_1_int), what the page runs under relaxed SIMD.
  for (const [name, type, blockBytes] of [['q8_0', 1, 34], ['q4_1', 2, 20], ['q4_1_int', 2, 20]]) {
    let weights = 0, ms = 0;
    for (const [N, K] of shapes) {
      const w = 1 << 20, rowBytes = K / 32 * blockBytes, x = w + N * rowBytes + 64, y = x + 4 * K + 64, scratch = y + 4 * N + 64;
      const u8 = new Uint8Array(k.memory.buffer);
      for (let i = 0; i < N * rowBytes; i += 1) u8[w + i] = (i * 2654435761) >>> 24;
      for (let b = 0; b < N * K / 32; b += 1) { u8[w + b * blockBytes] = 0; u8[w + b * blockBytes + 1] = 0x2c;
        if (type === 2) { u8[w + b * blockBytes + 2] = 0; u8[w + b * blockBytes + 3] = 0xac; } }
      let best = Infinity;
      const f = new Float32Array(k.memory.buffer, x, K);
      for (let i = 0; i < K; i += 1) f[i] = Math.sin(i);  // finite activations: the digits' path needs them
      for (let r = 0; r < 30; r += 1) {
        const t0 = performance.now();
        for (let i = 0; i < 10; i += 1) name === 'q4_1_int' ? k.matvec_q4_1_int(x, w, y, 1, N, K, 0, 4 * N, scratch)
          : k.matvec_q(x, w, y, 1, N, K, 0, type, 4 * N, scratch);
        best = Math.min(best, (performance.now() - t0) / 10);
      }
      weights += N * K; ms += best;
    }
    out[name] = { gweights_per_s: weights / ms / 1e6, bytes_per_weight: blockBytes / 32 };
  }
  return { variant, ...out };
}"""


def numba_in_process(threads: int | None) -> dict[str, Any]:
    """numba_phases in a process of its own with `threads` threads (None: every core): numba fixes its threads
    when first imported."""
    env = {**os.environ}
    env.pop("NUMBA_NUM_THREADS", None)
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_device", "--numba-phases"], env=env,
                          capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def numba_phases(prompt_tokens: int = 512, decode_steps: int = 16) -> dict[str, Any]:
    """The project's kernels on the real model in the file's own formats: prefill of `prompt_tokens` seeded tokens,
    then decode steps at that context (tokens/s each)."""
    base = load_model("smollm2-135m")
    model = convert(base, file_format(base))
    ids = [int(i) for i in np.random.default_rng(136).integers(0, 49152, prompt_tokens)]
    list(generate(model, ids[:8], max_new_tokens=3, stop_at_eos=False))  # compiled and warm: not timed
    steps = list(generate(model, ids, max_new_tokens=decode_steps + 1, stop_at_eos=False))
    return {"prefill_tps": 1000 * prompt_tokens / steps[0].ms,
            "decode_tps": [1000 / step.ms for step in steps[1:]]}


def first_token(playwright: Any, url: str) -> dict[str, Any]:
    """The conversation demo's chapter prompt twice in one browser profile: the first run downloads the model into
    Cache Storage, the second (a new page) reads it from there; its press-to-first-token and the page's transfer
    before the press."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        runs = []
        for _ in range(2):
            page = context.new_page()
            page.goto(f"{url}{CHAPTER}")
            demo = page.locator(".pd-demo[data-pd-demo=conversation]").first
            demo.scroll_into_view_if_needed()
            page.mouse.move(10, 300)
            demo.get_by_role("button", name="Run it on this device").wait_for()
            page.wait_for_load_state("networkidle")
            before = page.evaluate("() => performance.getEntriesByType('resource').concat("
                                   "performance.getEntriesByType('navigation')).reduce((s, e) => s + e.transferSize, 0)")
            demo.get_by_role("button", name="Run it on this device").click()
            page.wait_for_function("el => ['done', 'error'].includes(el.dataset.pdLiveState)", arg=demo.element_handle(),
                                   timeout=RUN_TIMEOUT_MS)
            found = demo.locator("[data-pd-live-result]")
            if not found.count():
                return {"error": demo.locator(".pd-live__status").text_content()}
            runs.append({**json.loads(found.get_attribute("data-pd-live-result")), "transfer_before_press": before})
            page.close()
        formats = context.new_page()
        formats.goto(f"{url}{CHAPTER}")
        rates = formats.evaluate(FORMAT_RATES)
        return {"first": runs[0], "cached": runs[1], "format_rates": rates}
    finally:
        browser.close()


# Prefill split by rows between two workers, each holding the weights (live-worker.js as the page starts it): the
# 512 rows on one worker, the two halves at once on two (the second half attending only to itself here: about 4% of
# the work less than a real split), and 256 rows alone; interleaved. And what a real split would add: the first
# half's K and V (256 rows, one layer) copied by structured clone, which a split sends once a layer.
PREFILL_SPLIT = """async ([name, repeats]) => {
  const base = new URL('/assets/pd/model/', location.href);
  const { tokenizer: _, ...manifest } = await (await fetch(new URL(name, base))).json();
  const start = () => new Promise((resolve, reject) => {
    const worker = new Worker('/assets/pd/device/live-worker.js', { type: 'module' });
    worker.onmessage = ({ data }) => data.type === 'ready' ? resolve(worker)
      : data.type === 'error' ? reject(new Error(data.message)) : null;
    worker.postMessage({ type: 'load', manifest, modelBase: base.href, refuseStorage: false });
  });
  const prefill = (worker, ids) => new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => data.type === 'prefill' ? resolve(data.ms)
      : data.type === 'error' ? reject(new Error(data.message)) : null;
    worker.postMessage({ type: 'generate', ids, maxNew: 1, stopIds: [] });
  });
  const workers = [await start(), await start()];
  const vocab = manifest.config.vocab_size;
  const ids = Array.from({ length: 512 }, (_, i) => (i * 2654435761 >>> 7) % vocab);
  const wall = async (run) => { const t0 = performance.now(); await run(); return performance.now() - t0; };
  const out = { one_512: [], two_256: [], one_256: [], clone_kv_ms: [] };
  await prefill(workers[0], ids.slice(0, 64)); await prefill(workers[1], ids.slice(0, 64));  // warm
  for (let r = 0; r < repeats; r += 1) {
    out.one_512.push(await wall(() => prefill(workers[0], ids)));
    out.two_256.push(await wall(() => Promise.all([prefill(workers[0], ids.slice(0, 256)),
      prefill(workers[1], ids.slice(256))])));
    out.one_256.push(await wall(() => prefill(workers[1], ids.slice(256))));
  }
  const kv = new Float32Array(256 * 2 * manifest.config.n_kv_heads * manifest.config.head_dim);
  for (let r = 0; r < 20; r += 1) out.clone_kv_ms.push(await wall(async () => structuredClone(kv)));
  workers.forEach((w) => w.terminate());
  return { ...out, layers: manifest.config.n_layers, cores: navigator.hardwareConcurrency };
}"""


def prefill_split_main(site: Path, rounds: int) -> int:
    """--prefill-split: would prefill pay split between two workers? Printed, nothing asserted."""
    from playwright.sync_api import sync_playwright

    with StaticServer(site) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{server.url}{CHAPTER}")
            demo = page.locator(".pd-demo[data-pd-demo=conversation]").first
            descriptor = page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then((r) => "
                                       "r.json())", demo.element_handle())["live"]
            got = page.evaluate(PREFILL_SPLIT, [descriptor["manifest"], rounds])
        finally:
            browser.close()
    speedup = [a / b for a, b in zip(got["one_512"], got["two_256"], strict=True)]
    halves = [a / b for a, b in zip(got["one_256"], got["one_512"], strict=True)]
    print(f"{got['cores']} cores reported; {rounds} interleaved repeats")
    print(f"prefill of 512 rows on one worker (ms): {spread(got['one_512'])}")
    print(f"two workers, 256 rows each at once (ms): {spread(got['two_256'])}")
    print(f"one worker, 256 rows (ms): {spread(got['one_256'])}")
    print(f"one worker's 512 ÷ two workers' 256 each (speed-up of the split): {spread(speedup)}")
    print(f"256 rows ÷ 512 rows on one worker: {spread(halves)}")
    clone = statistics.median(got["clone_kv_ms"])
    print(f"one layer's K and V of 256 rows copied (structured clone, ms): {spread(got['clone_kv_ms'])}; "
          f"× {got['layers']} layers: {clone * got['layers']:.3g} ms a prefill")
    return 0


def live_main(site: Path, rounds: int, as_json: bool) -> int:
    results = []
    with StaticServer(site) as server, sync_playwright() as playwright:
        for index in range(rounds):
            numba = numba_in_process(None)
            numba_one = numba_in_process(1)
            page = measure(playwright, server.url, "auto", "quick")
            press = first_token(playwright, server.url)
            results.append({"numba": numba, "numba_one": numba_one, "page": page, "press": press})
            if not as_json:
                print(f"round {index + 1}: numba (every core) prefill {numba['prefill_tps']:.3g} tok/s, decode "
                      f"{statistics.median(numba['decode_tps']):.3g} tok/s; numba (1 thread) prefill "
                      f"{numba_one['prefill_tps']:.3g}, decode {statistics.median(numba_one['decode_tps']):.3g} | "
                      f"page: {summary(page)}", flush=True)
                if "error" in press:
                    print(f"  conversation demo: {press['error']}", flush=True)
                else:
                    print(f"  conversation demo: press to first token {press['cached']['press_to_first_token_ms']:.0f} ms "
                          f"cached (from storage: {press['cached']['from_cache']}), "
                          f"{press['first']['press_to_first_token_ms']:.0f} ms with the download · transfer before the "
                          f"press {press['cached']['transfer_before_press'] / 1e3:.0f} kB · kernels "
                          f"{json.dumps(press['format_rates'])}", flush=True)
    done = [r for r in results if "error" not in r["page"] and "error" not in r["press"]]
    if as_json:
        print(json.dumps(results, indent=2))
        return 0
    if not done:
        print("no round finished")
        return 1
    decode = [r["page"]["tg_tps"]["median"] / statistics.median(r["numba"]["decode_tps"]) for r in done]
    prefill = [r["page"]["pp_tps"]["median"] / r["numba"]["prefill_tps"] for r in done]
    decode_one = [r["page"]["tg_tps"]["median"] / statistics.median(r["numba_one"]["decode_tps"]) for r in done]
    prefill_one = [r["page"]["pp_tps"]["median"] / r["numba_one"]["prefill_tps"] for r in done]
    opened = [r["press"]["cached"]["open_ms"] / 1000 for r in done]
    first = [r["press"]["cached"]["press_to_first_token_ms"] / 1000 for r in done]
    transfer = [r["press"]["cached"]["transfer_before_press"] / 1e3 for r in done]
    rates = [r["press"]["format_rates"] for r in done]
    download = done[0]["page"]["memory_bytes"]
    met = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    print()
    print("| figure | measured (median, range, n) | target |")
    print("|---|---|---|")
    print(f"| decode tokens/s at a 512-token context, browser ÷ numba (same format, every core) | {spread(decode)} | "
          f"≥ 1/3: {met(statistics.median(decode) >= LIVE_TARGETS['decode'])} |")
    print(f"| prefill of 512 tokens, browser ÷ numba (every core) | {spread(prefill)} | "
          f"≥ 1/4: {met(statistics.median(prefill) >= LIVE_TARGETS['prefill'])} |")
    print(f"| the same, one worker ÷ numba on one thread: decode | {spread(decode_one)} | — |")
    print(f"| the same, one worker ÷ numba on one thread: prefill | {spread(prefill_one)} | — |")
    print(f"| press to first token, weights cached, chapter prompt (s) | {spread(first)} | "
          f"≤ 2 s: {met(statistics.median(first) <= LIVE_TARGETS['first_token_s'])} |")
    print(f"| of which press to the prompt sent (weights read from storage, tokenizer built) (s) | {spread(opened)} | — |")
    print(f"| page transfer before the press (kB; no model, library or kernel file) | {spread(transfer)} | "
          "unchanged (tests/browser page-weight test) |")
    for fmt in ("q4_1", "q4_1_int", "q8_0"):
        values = [r[fmt]["gweights_per_s"] for r in rates]
        print(f"| page kernel, {fmt.upper()} decode product, G weights/s (one worker) | {spread(values)} | — |")
    published = sum(done[0]["press"]["first"]["format"].values())
    print(f"\nthe published model: {published / 1e6:.1f} MB of tensors ({', '.join(done[0]['press']['first']['format'])}); "
          f"browser memory of the device run (WebAssembly): {download / 1e6:.0f} MB; numba threads: "
          f"{os.environ.get('NUMBA_NUM_THREADS', 'every core')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_device", description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site to serve (default: build one with the tiny model)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of numpy then the page (auto, full)")
    parser.add_argument("--backends", nargs="*", default=["js:quick", "webgpu:quick"],
                        help="extra backend:mode runs after the rounds (backend auto, wasm, js or webgpu)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--live", action="store_true", help="the real model in the page beside numba (see above)")
    parser.add_argument("--prefill-split", action="store_true",
                        help="with --live: prefill split by rows between two workers, against one (see PREFILL_SPLIT)")
    parser.add_argument("--numba-phases", action="store_true", help=argparse.SUPPRESS)  # numba_in_process's child
    args = parser.parse_args(argv)
    if args.numba_phases:
        print(json.dumps(numba_phases()))
        return 0
    with tempfile.TemporaryDirectory(prefix="pd-device-") as temp:
        site = args.site
        if site is None:
            site = Path(temp) / "site"
            env = {**os.environ, "PD_MODEL": "tiny", "NO_MKDOCS_2_WARNING": "1"}
            if args.live:
                env["PD_LIVE_MODEL"] = "smollm2-135m"
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                           cwd=REPO, env=env, check=True)
        if args.live and args.prefill_split:
            return prefill_split_main(site, args.rounds)
        if args.live:
            return live_main(site, args.rounds, args.json)
        rounds, extra = [], []
        with StaticServer(site) as server, sync_playwright() as playwright:
            for index in range(args.rounds):
                numpy = measure_peaks()
                page = measure(playwright, server.url, "auto", "full")
                rounds.append({"numpy": {k: numpy[k] for k in ("peak_gflops", "peak_gbps", "copy_gbps", "gemv_gbps")},
                               "page": page})
                if not args.json:
                    print(f"round {index + 1}: numpy + BLAS {numpy['peak_gflops']:.3g} GFLOP/s, {numpy['peak_gbps']:.3g} "
                          f"GB/s ({numpy['peak_gbps_from']}) | page: {summary(page)}", flush=True)
            for run in args.backends:
                backend, mode = run.split(":")
                extra.append(measure(playwright, server.url, backend, mode))
                if not args.json:
                    print(summary(extra[-1]), flush=True)
    done = [r for r in rounds if "error" not in r["page"]]
    ratios = {"compute": [r["page"]["peak_gflops"] / r["numpy"]["peak_gflops"] for r in done],
              "stream": [r["page"]["peak_gbps"] / r["numpy"]["peak_gbps"] for r in done],
              "full_s": [r["page"]["elapsed_s"] for r in done],
              "long_task_ms": [r["page"]["longest_task_ms"] for r in done + [{"page": e} for e in extra]
                               if "longest_task_ms" in r["page"]]}
    if args.json:
        print(json.dumps({"rounds": rounds, "extra": extra, "ratios": ratios}, indent=2))
        return 0
    if not done:
        print("no round finished")
        return 1
    print()
    print(f"page matrix product ÷ numpy GEMM:   {spread(ratios['compute'])}  target ≥ {TARGETS['compute']:.3g} (1/8): "
          f"{'met' if statistics.median(ratios['compute']) >= TARGETS['compute'] else 'NOT met'}")
    print(f"page streaming read ÷ numpy bandwidth: {spread(ratios['stream'])}  target ≥ {TARGETS['stream']:.3g} (1/2): "
          f"{'met' if statistics.median(ratios['stream']) >= TARGETS['stream'] else 'NOT met'}")
    print(f"full measurement, seconds:          {spread(ratios['full_s'])}  target ≤ {TARGETS['full_s']:.3g}: "
          f"{'met' if statistics.median(ratios['full_s']) <= TARGETS['full_s'] else 'NOT met'}")
    print(f"longest main-thread task, ms (every run): {spread(ratios['long_task_ms'])}  target < "
          f"{TARGETS['long_task_ms']:.0f}: {'met' if max(ratios['long_task_ms']) < TARGETS['long_task_ms'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
