"""Site benchmark: build time, serve turnaround, page weight, Lighthouse and playback smoothness vs targets.

    .venv/bin/python -m benchmarks.bench_site            # table
    .venv/bin/python -m benchmarks.bench_site --json     # the same figures as JSON
    .venv/bin/python -m benchmarks.bench_site --skip lighthouse,serve --model tiny

Every timing is a median measured in this run. Builds run against a temporary copy of the project, so
the repo's .cache/ is never emptied. The model is the real one (PD_MODEL default) when it is in the
download cache, else the tiny one; the output says which.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.mkdocs_serve import CHAPTER, CHAPTER_URL, PROJECT_FOLDERS, ServedProject, prose_edit
from harness.pages import Network, draw_every_demo, page_paths
from harness.static_server import StaticServer
from simulations import kernels
from simulations.machine import machine_info
from simulations.paths import cache_dir

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"  # --docs points the builds at another copy (e.g. a draft)
LIGHTHOUSE = REPO / ".ci" / "node_modules" / ".bin" / "lighthouse"
CHART_LIBRARY = "assets/vendor/plotly.min.js"
# Content types a static host gzips; images and fonts are sent as they are.
COMPRESSED_TYPES = ("text/", "application/javascript", "application/json", "image/svg+xml", "application/xml")
SECTIONS = ("build", "serve", "weight", "lighthouse", "smoothness")

Row = dict[str, Any]  # {"metric", "page", "value", "unit", "target", "ok"}


def row(metric: str, value: float | None, unit: str, target: str = "", ok: bool | None = None,
        page: str = "") -> Row:
    return {"metric": metric, "page": page, "value": value, "unit": unit, "target": target, "ok": ok}


# ---- builds ---------------------------------------------------------------------------------------


def project_copy(root: Path, *, demo_hook: bool = True, shared_cache: bool = False) -> Path:
    """A project at root with docs and code linked in; returns its mkdocs.yml.

    The headers hook is added when mkdocs.yml does not list it yet; `demo_hook=False` is the plain
    Material build of the same Markdown.
    """
    root.mkdir(parents=True)
    (root / "docs").symlink_to(DOCS, target_is_directory=True)
    for folder in (*PROJECT_FOLDERS, ".ci"):
        if (REPO / folder).exists():
            (root / folder).symlink_to(REPO / folder, target_is_directory=True)
    if shared_cache and (REPO / ".cache").is_dir():
        (root / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    if "hooks/headers_hook.py" not in text:
        text = text.replace("  - hooks/demo_hook.py\n", "  - hooks/demo_hook.py\n  - hooks/headers_hook.py\n")
    if not demo_hook:
        text = text.replace("  - hooks/demo_hook.py\n", "")
    (root / "mkdocs.yml").write_text(text, encoding="utf-8")
    return root / "mkdocs.yml"


def timed_build(config: Path, out: Path, env: dict[str, str], strict: bool = True) -> float:
    command = [sys.executable, "-m", "mkdocs", "build", "--clean", "-f", str(config), "-d", str(out)]
    if strict:
        command.insert(4, "--strict")
    start = time.perf_counter()
    result = subprocess.run(command, cwd=config.parent, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"build failed ({config}):\n{(result.stdout + result.stderr)[-4000:]}")
    return seconds


def bench_build(work: Path, env: dict[str, str], repeats: int) -> tuple[list[Row], Path]:
    """Cold (empty trace cache), warm, and plain-Material builds; returns rows and the warm site."""
    demo_config = project_copy(work / "project")
    plain_config = project_copy(work / "plain", demo_hook=False)
    site = work / "site"
    cold = timed_build(demo_config, site, env)
    warm, plain = [], []
    for _ in range(repeats):  # interleaved, so machine noise hits both alike
        warm.append(timed_build(demo_config, site, env))
        # Plain Material: ```demo blocks stay code and {{ }} stays text; not strict (nothing to validate).
        plain.append(timed_build(plain_config, work / "plain-site", env, strict=False))
    ratio = statistics.median(warm) / statistics.median(plain)
    return [
        row("cold build (empty trace cache)", cold, "s"),
        row("warm build (median)", statistics.median(warm), "s"),
        row("plain Material build, demo hook off (median)", statistics.median(plain), "s"),
        row("warm build / plain build", ratio, "×", "≤ 1.5", ratio <= 1.5),
    ], site


# ---- mkdocs serve -----------------------------------------------------------------------------------


def bench_serve(work: Path, env_model: str, edits: int = 5) -> list[Row]:
    project = ServedProject(work / "serve", model=env_model,
                            extra_env={"PD_SWEEP": os.environ.get("PD_SWEEP", "site")}, docs=DOCS)
    try:
        if project.wait_for(CHAPTER_URL, lambda body: "data-pd-demo" in body, timeout=1800) is None:
            raise SystemExit(f"mkdocs serve never came up:\n{project.log()[-3000:]}")
        chapter = project.chapter(CHAPTER)
        original = chapter.read_text(encoding="utf-8")
        times = []
        for number in range(edits):
            marker = f"pd-bench-edit-{number}-{time.time_ns()}"
            chapter.write_text(prose_edit(original, marker), encoding="utf-8")
            seconds = project.wait_for(CHAPTER_URL, lambda body, m=marker: m in body, timeout=120)
            if seconds is None:
                raise SystemExit(f"prose edit never served:\n{project.log()[-3000:]}")
            times.append(seconds)
            time.sleep(0.5)
    finally:
        project.stop()
    median = statistics.median(times)
    return [row("serve: save → rebuilt page served, prose edit (median)", median, "s", "≤ 2", median <= 2)]


# ---- page weight ----------------------------------------------------------------------------------


def transferred_bytes(body: bytes, content_type: str) -> int:
    """Bytes on the wire from a static host that gzips text (level 6, the usual default)."""
    if content_type.startswith(COMPRESSED_TYPES):
        return len(gzip.compress(body, compresslevel=6, mtime=0))
    return len(body)


def bench_weight(browser: Any, url: str, paths: list[str]) -> list[Row]:
    rows = []
    for path in paths:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        sizes: dict[str, int] = {}

        def on_response(response: Any, sizes: dict[str, int] = sizes) -> None:
            try:
                body = response.body()
            except Exception:  # redirects and aborted requests have no body
                return
            sizes[response.url] = transferred_bytes(body, response.headers.get("content-type", ""))

        network = Network(page)
        page.on("response", on_response)
        page.goto(url + path, wait_until="load")
        network.quiet(page)
        before = sum(sizes.values())
        draw_every_demo(page)  # the reader's first gesture, then every demo and chart scrolled into view and drawn
        network.quiet(page)
        after = sum(sizes.values())
        library = sum(size for address, size in sizes.items() if address.endswith(CHART_LIBRARY))
        name = "/" + path
        rows.append(row("page weight before any chart is in view", before / 1024, "KB gzip", "≤ 300",
                        before <= 300 * 1024, page=name))
        rows.append(row("page weight after every demo loaded", after / 1024, "KB gzip", page=name))
        rows.append(row("  of which the chart library", 100 * library / after if after else 0, "%", page=name))
        context.close()
    return rows


# ---- Lighthouse ------------------------------------------------------------------------------------


def lighthouse(url: str, form_factor: str, cpu_slowdown: float | None = None) -> dict[str, Any]:
    command = [str(LIGHTHOUSE), url, "--output=json", "--output-path=stdout", "--quiet",
               "--throttling-method=devtools", "--only-categories=performance,accessibility,best-practices",
               '--chrome-flags=--headless --no-sandbox --disable-gpu']
    if form_factor == "desktop":
        command.append("--preset=desktop")
    if cpu_slowdown is not None:
        command.append(f"--throttling.cpuSlowdownMultiplier={cpu_slowdown:.2f}")
    env = {**os.environ, "CHROME_PATH": CHROMIUM}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode != 0 or not result.stdout.strip():
        raise RuntimeError(f"lighthouse failed on {url}: {result.stderr[-1500:]}")
    return json.loads(result.stdout)


def calibrated_slowdown(benchmark_index: float) -> float:
    """The CPU slowdown that makes this host emulate Lighthouse's mid-tier phone.

    Lighthouse's default 4x assumes a high-end desktop host (benchmarkIndex 1500-2000); on a slower
    host it emulates a slower phone than intended. Its docs (docs/throttling.md, "Calibrating the CPU
    slowdown") send you to its calculator, whose anchors are: index 150 -> 1x, 800 -> 2x, 1300 -> 3x,
    then one more x per 233 (1533 -> 4x)."""
    if benchmark_index >= 1300:
        return 3 + (benchmark_index - 1300) / 233
    if benchmark_index >= 800:
        return 2 + (benchmark_index - 800) / 500
    if benchmark_index >= 150:
        return 1 + (benchmark_index - 150) / 650
    return 1.0


def scores_of(report: dict[str, Any]) -> dict[str, int]:
    return {key: round(100 * (category["score"] or 0)) for key, category in report["categories"].items()}


def with_one_retry(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Lighthouse now and then loses its trace (NO_NAVSTART) on a busy host: one more try."""
    try:
        return run()
    except RuntimeError:
        return run()


def median_report(url: str, form_factor: str, runs: int, cpu_slowdown: float | None = None) -> dict[str, Any]:
    """Lighthouse's own advice on variance: run several times and keep the median run (by performance)."""
    reports = [with_one_retry(lambda: lighthouse(url, form_factor, cpu_slowdown)) for _ in range(runs)]
    reports.sort(key=lambda report: scores_of(report)["performance"])
    return reports[len(reports) // 2]


def lighthouse_rows(report: dict[str, Any], name: str, gated: bool = True) -> list[Row]:
    scores = scores_of(report)
    audits = report["audits"]
    performance_ok = scores["performance"] >= 95 if gated else None
    rows = [
        row("lighthouse performance", scores["performance"], "", "≥ 95" if gated else "", performance_ok, page=name),
        row("lighthouse accessibility", scores["accessibility"], "", "100", scores["accessibility"] == 100,
            page=name),
        row("lighthouse best practices", scores["best-practices"], "", "100", scores["best-practices"] == 100,
            page=name),
        row("  total blocking time", audits["total-blocking-time"]["numericValue"], "ms", page=name),
        row("  largest contentful paint", audits["largest-contentful-paint"]["numericValue"], "ms", page=name),
    ]
    failing = [key for key, audit in audits.items()
               if audit.get("score") is not None and audit["score"] < 0.9
               and audit.get("scoreDisplayMode") in ("binary", "numeric", "metricSavings")]
    if failing and any(r["ok"] is False for r in rows[:3]):
        rows.append(row("  failing audits", None, "", page=f"{name}: {', '.join(failing[:8])}"))
    return rows


def bench_lighthouse(url: str, paths: list[str], runs: int) -> list[Row]:
    """Per page: mobile at the calibrated CPU slowdown (median of `runs`, the target), mobile at the
    default 4x (one run, shown for reference, not a target on a host slower than Lighthouse assumes)
    and desktop (median of `runs`)."""
    calibration = [with_one_retry(lambda: lighthouse(url, "mobile")) for _ in range(runs)]
    benchmark_index = statistics.median(report["environment"]["benchmarkIndex"] for report in calibration)
    slowdown = calibrated_slowdown(benchmark_index)
    rows = [row("lighthouse host benchmarkIndex", benchmark_index, "", page=f"median of {runs} runs"),
            row("lighthouse calibrated CPU slowdown", slowdown, "×", page="Lighthouse's calculator")]
    for path in paths:
        for label, form_factor, cpu_slowdown, count in (
                (f"mobile, {slowdown:.1f}× CPU", "mobile", slowdown, runs),
                ("mobile, default 4× CPU", "mobile", None, 1),
                ("desktop", "desktop", None, runs)):
            name = f"/{path} ({label})"
            try:
                report = median_report(url + path, form_factor, count, cpu_slowdown)
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                rows.append(row("lighthouse", None, "", "ran", False, page=f"{name}: {str(error)[:160]}"))
                continue
            rows += lighthouse_rows(report, name, gated=cpu_slowdown is not None or form_factor == "desktop")
    return rows


# ---- playback smoothness ---------------------------------------------------------------------------

# Long tasks as [start, duration], and the moment the demo's player reports the end of playback: only
# tasks that start before it are playback (charts that scrolled in meanwhile are drawn after it).
_OBSERVE_LONG_TASKS = """(demo) => {
    window.__pdLongTasks = [];
    window.__pdEndedAt = null;
    new PerformanceObserver(list => {
        for (const e of list.getEntries()) window.__pdLongTasks.push([e.startTime, e.duration]);
    }).observe({type: 'longtask'});
    new MutationObserver(() => {
        if (demo.dataset.pdState === 'ended' && window.__pdEndedAt === null) window.__pdEndedAt = performance.now();
    }).observe(demo, {attributes: true, attributeFilter: ['data-pd-state']});
}"""
_PLAYBACK_TASKS = """() => window.__pdLongTasks
    .filter(([start]) => window.__pdEndedAt === null || start < window.__pdEndedAt).map(([, duration]) => duration)"""


def bench_smoothness(browser: Any, url: str, paths: list[str], timeout_s: float = 90) -> list[Row]:
    rows = []
    for path in paths:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(url + path, wait_until="load")
        for index in range(page.locator(".pd-demo[data-pd-demo]").count()):
            demo = page.locator(".pd-demo[data-pd-demo]").nth(index)
            kind = demo.get_attribute("data-pd-demo")
            name = f"/{path} {kind}"
            demo.scroll_into_view_if_needed()
            page.mouse.move(10, 300)  # demos and charts wait for the reader's first gesture
            page.mouse.move(20, 310)
            page.wait_for_function("(d) => ['ready', 'error'].includes(d.dataset.pdStatus)",
                                   arg=demo.element_handle(), timeout=60000)
            if demo.locator(".js-plotly-plot, .pd-chart").count():
                page.wait_for_function("() => window.Plotly !== undefined", timeout=60000)
                # First render of the charts in view is setup, not playback.
                page.wait_for_function("""(d) => [...d.querySelectorAll('.pd-chart')].every(c => {
                    const box = c.getBoundingClientRect();
                    return box.bottom < 0 || box.top > innerHeight || c.dataset.pdChart === 'ready'; })""",
                                       arg=demo.element_handle(), timeout=60000)
                page.wait_for_timeout(300)
            play = demo.locator(".pd-button--play")
            if not play.count():
                rows.append(row("longest task during playback", None, "ms", "≤ 50", None, page=f"{name}: no player"))
                continue
            page.evaluate(_OBSERVE_LONG_TASKS, demo.element_handle())
            start = time.perf_counter()
            play.first.click()
            ended = False
            while time.perf_counter() - start < timeout_s:
                state = demo.locator("[data-pd-state]").first.get_attribute("data-pd-state") \
                    if demo.locator("[data-pd-state]").count() else demo.get_attribute("data-pd-state")
                if state == "ended":
                    ended = True
                    break
                page.wait_for_timeout(200)
            tasks = page.evaluate(_PLAYBACK_TASKS)
            longest = max(tasks, default=0.0)
            note = "" if ended else f" (stopped after {timeout_s:.0f} s)"
            rows.append(row("longest task during playback", longest, "ms", "≤ 50", longest <= 50,
                            page=f"{name}{note}"))
        context.close()
    return rows


# ---- output -----------------------------------------------------------------------------------------


def format_value(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.2f}" if isinstance(value, float) and abs(value) < 100 else f"{value:,.0f}"


def print_table(rows: list[Row], header: dict[str, Any]) -> None:
    print(f"# prefill-decode site benchmark — {header['date']} — {header['machine']}")
    print(f"# model: {header['model']} · sweep: {header['sweep']}\n")
    width = max(len(r["metric"]) for r in rows) + 2
    page_width = max(len(r["page"]) for r in rows) + 2
    print(f"{'metric':<{width}}{'page':<{page_width}}{'measured':>12}  {'unit':<8}{'target':<8}ok")
    for r in rows:
        ok = {True: "✓", False: "✗", None: ""}[r["ok"]]
        print(f"{r['metric']:<{width}}{r['page']:<{page_width}}{format_value(r['value']):>12}  "
              f"{r['unit']:<8}{r['target']:<8}{ok}")


def chosen_model(requested: str | None) -> str:
    """The real model when its download is cached, else tiny (unless one is requested)."""
    if requested:
        return requested
    return "smollm2-135m" if any((cache_dir() / "models").glob("*.gguf")) else "tiny"


def machine_text() -> str:
    info = machine_info(kernels=kernels.describe())
    return f"{info['cpu']}, {info['cores']} cores, numpy {info['numpy']} ({info['blas']})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_site", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--model", help="PD_MODEL for the builds (default: real model if cached, else tiny)")
    parser.add_argument("--skip", default="", help=f"comma-separated sections to skip: {','.join(SECTIONS)}")
    parser.add_argument("--repeats", type=int, default=3, help="warm and plain builds each (median)")
    parser.add_argument("--languages", default="zh", help="zh, en or zh,en: which pages to weigh and audit")
    parser.add_argument("--docs", type=Path, help="build this docs folder instead of the repo's docs/")
    parser.add_argument("--lighthouse-runs", type=int, default=3, help="Lighthouse runs per page and form factor (median)")
    args = parser.parse_args(argv)
    if args.docs:
        global DOCS
        DOCS = args.docs.resolve()
    skip = {part for part in args.skip.split(",") if part}

    model = chosen_model(args.model)
    env = {**os.environ, "PD_MODEL": model, "NO_MKDOCS_2_WARNING": "1"}
    header = {"date": time.strftime("%Y-%m-%d"), "machine": machine_text(), "model": model,
              "sweep": env.get("PD_SWEEP", "site")}
    rows: list[Row] = []
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="pd-bench-") as temp:
        work = Path(temp)
        if "build" in skip:
            log(f"building once (model {model})…")
            site = work / "site"
            timed_build(project_copy(work / "project", shared_cache=True), site, env)
        else:
            log(f"building (model {model}): cold, then {args.repeats}× warm and plain…")
            build_rows, site = bench_build(work, env, args.repeats)
            rows += build_rows
        if "serve" not in skip:
            log("timing mkdocs serve…")
            rows += bench_serve(work, model)
        languages = args.languages.split(",")
        paths = [p for p in page_paths(site) if ("en" if p.startswith("en/") else "zh") in languages]
        with StaticServer(site) as server, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            if "weight" not in skip:
                log("weighing pages…")
                rows += bench_weight(browser, server.url, paths)
            if "smoothness" not in skip:
                log("playing every demo…")
                rows += bench_smoothness(browser, server.url, paths)
            browser.close()
            if "lighthouse" not in skip:
                if LIGHTHOUSE.exists():
                    log("running Lighthouse…")
                    rows += bench_lighthouse(server.url, paths, args.lighthouse_runs)
                else:
                    rows.append(row("lighthouse", None, "", page="not installed: cd .ci && npm ci"))
    if args.json:
        print(json.dumps({**header, "rows": rows}, ensure_ascii=False, indent=2))
    else:
        print_table(rows, header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
