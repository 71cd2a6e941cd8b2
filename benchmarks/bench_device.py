"""What the "measure this device" demo reaches in the test browser, per backend and mode.

    .venv/bin/python benchmarks/bench_device.py                      # JavaScript quick + full, WebGPU quick
    .venv/bin/python benchmarks/bench_device.py --site /tmp/site     # an already built site
    .venv/bin/python benchmarks/bench_device.py --runs js:full webgpu:full

Presses the demo's button in Debian's Chromium (a second launch with --enable-unsafe-webgpu for WebGPU,
which headless Chromium serves through SwiftShader, a CPU) and prints the result panel's figures. Nothing
is asserted: the machines are shared and noisy. Without --site it builds the site with the tiny model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.browser.static_server import StaticServer  # noqa: E402

PAGE = "en/bottleneck/"
RUN_TIMEOUT_MS = 900_000


def measure(playwright: Any, url: str, backend: str, mode: str) -> dict[str, Any]:
    """One press of the button with `backend` pinned and `mode` chosen; the panel's data-pd-result."""
    args = [*CHROMIUM_ARGS, "--enable-unsafe-webgpu"] if backend == "webgpu" else CHROMIUM_ARGS
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}{PAGE}?pd-device-backend={backend}")
        demo = page.locator(".pd-demo[data-pd-demo=device]")
        demo.scroll_into_view_if_needed()
        page.mouse.move(10, 300)
        page.mouse.move(20, 310)
        demo.locator("button.pd-button--play").wait_for()
        demo.locator("select").select_option(mode)
        demo.locator("button.pd-button--play").click()
        page.wait_for_function("el => !['idle', 'running'].includes(el.dataset.pdDeviceState)",
                               arg=demo.element_handle(), timeout=RUN_TIMEOUT_MS)
        if demo.get_attribute("data-pd-device-state") != "done":
            return {"backend": backend, "mode": mode, "error": demo.locator(".pd-device__status").text_content()}
        return json.loads(demo.locator("[data-pd-result]").get_attribute("data-pd-result"))
    finally:
        browser.close()


def summary(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"{result['backend']}, {result['mode']}: {result['error']}"
    adapter = f" ({result['adapter']['description']})" if result.get("adapter") else ""
    return (f"{result['backend']}{adapter}, {result['mode']}: peak {result['peak_gflops']:.3g} GFLOP/s, "
            f"{result['peak_gbps']:.3g} GB/s · TTFT@{result['prompt_tokens']} {result['ttft_ms']:,.0f} ms "
            f"({result['prefill_ms_per_token']:.3g} ms/token) · decode {result['decode_ms_per_token']:,.1f} ms/token "
            f"({result['tps']:.3g} tok/s) · prefill {100 * result['prefill']['compute_utilization']:.0f}% of compute, "
            f"decode {100 * result['decode']['bandwidth_utilization']:.0f}% of bandwidth · "
            f"{result['layers_measured']} of {result['layers_total']} layers, prefill ×{result['prefill_repeats']} · "
            f"{result['memory_bytes'] / 1e6:.0f} MB · {result['elapsed_s']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site to serve (default: build one with the tiny model)")
    parser.add_argument("--runs", nargs="+", default=["js:quick", "js:full", "webgpu:quick"],
                        help="backend:mode pairs (backend js or webgpu, mode quick or full)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pd-device-") as temp:
        site = args.site
        if site is None:
            site = Path(temp) / "site"
            env = {**os.environ, "PD_MODEL": "tiny", "NO_MKDOCS_2_WARNING": "1"}
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                           cwd=REPO, env=env, check=True)
        from playwright.sync_api import sync_playwright

        results = []
        with StaticServer(site) as server, sync_playwright() as playwright:
            for run in args.runs:
                backend, mode = run.split(":")
                results.append(measure(playwright, server.url, backend, mode))
                if not args.json:
                    print(summary(results[-1]), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
