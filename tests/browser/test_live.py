"""The real model on the reader's device (two-phases chapter, "Run it on this device"): nothing is fetched before
the press; a press downloads the published GGUF's chunks (kept in Cache Storage, checked by SHA-256), tokenizes
the prompt with the pinned @huggingface libraries exactly as the build's Python tokenizer does, prefills it in one
pass and decodes token by token in a worker; its greedy tokens equal the numpy model's on the same file. A bad
chunk is fetched again, then refused with a clear reason and a working Retry; refused storage runs from memory.

The shared test site is built with the tiny model, which the build publishes as a GGUF of its own (Q4_1 layers,
Q8_0 embedding, as the real file); the real model's run is marked real_model and reads a tiny site that publishes
the real model (PD_LIVE_MODEL=smollm2-135m: the same files a real build publishes, without its minutes of
simulation)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest

from harness.static_server import StaticServer
from simulations import kernels
from simulations.convert import convert
from simulations.generate import generate
from simulations.loader import load_model
from tests.browser.quality_pages import page_idle
from tests.conftest import build_site

pytestmark = pytest.mark.browser
PAGE = "two-phases/"
RUN = {"": "在这台设备上运行", "en/": "Run it on this device"}
RETRY = {"": "重试", "en/": "Retry"}
FORGET = {"": "删除已下载的模型", "en/": "Forget the downloaded model"}
STOP = {"": "停止", "en/": "Stop"}
STOPPED = {"": "已停止。", "en/": "Stopped."}
PACE_MS = 50  # ?pd-live-pace: the tiny model's decode steps this far apart, so that Stop lands mid-run
RUN_TIMEOUT_S = 240
# Strings whose tokens are hard to get right: CJK, emoji (four-byte characters, a joiner), digits (SmolLM2 splits
# them one by one), runs of spaces and newlines, accents and typographic quotes, the special tokens.
HARD = ["用三句话解释量子计算。", "emoji 🤖👩‍💻 ok", "digits 1234567 3.14159", "runs of   spaces\n\n\nand\tnewlines  \n",
        "<|im_start|>user\nhi<|im_end|>\n", "naïve café — “quotes”", "  leading", "x<|endoftext|>y"]
# The browser's logits against the numpy model's on the same file (`kernels.use("numpy")`: the weights dequantized by
# llama.cpp's reference, then float32 products by BLAS), as a fraction of the largest |logit|. Both multiply the same
# dequantized weights in float32; they differ only in the order products are summed (BLAS's blocks against the
# kernels' four lanes, a fused multiply-add under relaxed SIMD, which also writes decode's activations as three
# 8-bit digits for Q4_1's integer products: within 1.2e-7 of a block's largest) and in exp/tanh/sqrt's last bits. The
# bound is the worst-case rounding of one float32 sum of the longest rows here (1,536 terms · 2^-24 ≈ 9e-5), rounded
# up; measured differences grow as a random walk instead: 1.6e-6 on the tiny model, 1.4e-6 on SmolLM2 (prefill and 8
# decode steps).
LOGIT_TOLERANCE = 1e-4
LOGIT_STEPS = 8  # decode steps compared after prefill
# What a press loads (the control's own stylesheet, device/live.css, loads with the demo).
LIVE_FILES = ("/assets/pd/model/", "/assets/vendor/tokenizers", "/assets/vendor/jinja", "/assets/pd/device/live.js",
              "/assets/pd/device/live-", "/assets/pd/device/kernels-", "/assets/pd/device/wasm.js")


def live_section(page):
    return page.locator(".pd-demo[data-pd-demo=conversation] .pd-live").first


def demo_of(page):
    return page.locator(".pd-demo[data-pd-demo=conversation]").first


def open_live(open_page, lang: str, query: str = "", **options):
    page, log = open_page(lang + PAGE + query, **options)
    demo = demo_of(page)
    demo.scroll_into_view_if_needed()
    page.mouse.move(10, 300)
    page.mouse.move(20, 310)
    demo.get_by_role("button", name=RUN[lang]).wait_for(timeout=20_000)
    return page, log, demo


def live_requests(page) -> list[str]:
    names = page.evaluate("() => performance.getEntriesByType('resource').map((e) => e.name)")
    return [name for name in names if any(part in name for part in LIVE_FILES)]


def wait_until_finished(page, demo) -> str:
    page.wait_for_function("el => ['done', 'error'].includes(el.dataset.pdLiveState)", arg=demo.element_handle(),
                           timeout=RUN_TIMEOUT_S * 1000)
    return demo.get_attribute("data-pd-live-state")


def result_of(demo) -> dict:
    return json.loads(demo.locator("[data-pd-live-result]").get_attribute("data-pd-live-result"))


def run_by_keyboard(page, demo, lang: str) -> None:
    """From the prompt box, Tab to the button and press Enter, as a keyboard-only reader does."""
    demo.locator(".pd-live__prompt").focus()
    for _ in range(3):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.textContent") == RUN[lang]:
            break
    assert page.evaluate("() => document.activeElement.textContent") in (RUN[lang], RETRY[lang])
    page.keyboard.press("Enter")


def published_model(site: Path, page) -> Path:
    """The GGUF as the site publishes it: its chunks, in the manifest's order, joined into one file."""
    descriptor = page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then((r) => r.json())",
                               demo_of(page).element_handle())["live"]
    manifest = json.loads((site / "assets/pd/model" / descriptor["manifest"]).read_text(encoding="utf-8"))
    joined = site.parent / f"published-{descriptor['manifest']}.gguf"
    if not joined.exists():
        joined.write_bytes(b"".join((site / "assets/pd/model" / c["name"]).read_bytes() for c in manifest["chunks"]))
    return joined


def numpy_greedy(gguf: Path, prompt: str, chat: bool, max_new: int) -> tuple[list[int], list[int], str]:
    """The numpy model on the same file in the file's own formats: prompt ids, greedy ids, their text."""
    model = convert(load_model(str(gguf)), "q4_1")
    text = model.tokenizer.render_chat(prompt, None).text if chat else prompt
    ids = model.tokenizer.encode(text)
    generated = [step.token for step in generate(model, ids, max_new_tokens=max_new)]
    shown = [t for t in generated if t not in model.tokenizer.stop_ids]
    return ids, generated, model.tokenizer.decode(shown)


def worker_logits(page, manifest_name: str, ids: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    """The live worker's answer to its test message: prefill's last logits and `steps` greedy decode steps' after
    it (the worker loads the weights as a press does, from memory), and the tokens it chose."""
    answer = page.evaluate("""async ([name, ids, steps]) => {
        const base = new URL('/assets/pd/model/', location.href);
        const { tokenizer: _, ...manifest } = await (await fetch(new URL(name, base))).json();
        const worker = new Worker('/assets/pd/device/live-worker.js', { type: 'module' });
        const reply = (type) => new Promise((resolve, reject) => {
          worker.onmessage = ({ data }) => data.type === type ? resolve(data)
            : data.type === 'error' ? reject(new Error(data.kind + ': ' + data.message)) : null;
        });
        const ready = reply('ready');
        worker.postMessage({ type: 'load', manifest, modelBase: base.href, refuseStorage: true });
        await ready;
        const logits = reply('logits');
        worker.postMessage({ type: 'logits', ids, steps });
        const answer = await logits;
        worker.terminate();
        return { tokens: answer.tokens, logits: answer.logits.map((row) => Array.from(row)) };
    }""", [manifest_name, ids, steps])
    return answer["tokens"], np.array(answer["logits"], dtype=np.float64)


def numpy_logits(gguf: Path, ids: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    """The numpy model on the same file: its weights as the file's formats give them (dequantized once by llama.cpp's
    reference, `gguf.quants`, the values the quantized path dequantizes tile by tile at every pass), multiplied by
    BLAS in float32; the same passes as `worker_logits`."""
    model = load_model(str(gguf))
    with kernels.use("numpy"):
        passes = list(generate(model, ids, max_new_tokens=steps + 1, stop_at_eos=False))
    return [p.token for p in passes], np.array([p.logits for p in passes], dtype=np.float64)


def assert_logits_agree(page, gguf: Path, manifest_name: str, ids: list[int]) -> float:
    """Browser and numpy logits within LOGIT_TOLERANCE of the largest |logit|; the worst difference, so scaled."""
    tokens, ours = worker_logits(page, manifest_name, ids, LOGIT_STEPS)
    expected_tokens, theirs = numpy_logits(gguf, ids, LOGIT_STEPS)
    assert tokens == expected_tokens, "the greedy tokens differ, so the passes compared would differ"
    assert ours.shape == theirs.shape == (LOGIT_STEPS + 1, theirs.shape[1])
    worst = float(np.abs(ours - theirs).max() / np.abs(theirs).max())
    print(f"logits: worst difference {worst:.2e} of the largest |logit| (tolerance {LOGIT_TOLERANCE:.0e})")
    assert worst <= LOGIT_TOLERANCE, f"the browser's logits differ from numpy's by {worst:.2e} of the largest"
    assert (ours.argmax(axis=1) == theirs.argmax(axis=1)).all()
    return worst


@pytest.mark.parametrize("lang", ["", "en/"])
def test_nothing_is_fetched_before_the_press_and_the_control_states_the_download(open_page, lang):
    page, log, demo = open_live(open_page, lang)
    page_idle(page)
    assert demo.get_attribute("data-pd-live-state") == "idle"
    assert live_requests(page) == [], "the model, its libraries, the worker or the kernels loaded before the press"
    intro = live_section(page).text_content()
    assert "MB" in intro and "Q4_1" in intro and "Q8_0" in intro
    assert ("只懂英文" if lang == "" else "English only") in intro
    log.assert_clean()


@pytest.mark.parametrize(("lang", "scheme"), [("", "light"), ("en/", "dark")])
def test_the_model_runs_on_this_device_and_its_greedy_tokens_equal_numpys(open_page, built_site: Path, lang, scheme,
                                                                          screenshot_dir: Path):
    page, log, demo = open_live(open_page, lang, color_scheme=scheme)
    prompt = demo.locator(".pd-live__prompt").input_value()
    run_by_keyboard(page, demo, lang)
    assert wait_until_finished(page, demo) == "done", live_section(page).locator(".pd-live__status").text_content()
    result = result_of(demo)
    live = page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then((r) => r.json())",
                         demo.element_handle())["live"]
    ids, generated, text = numpy_greedy(published_model(built_site, page), prompt, live["chat"],
                                        live["max_new_tokens"])
    assert result["prompt_tokens"] == ids, "the browser's tokenizer and chat template differ from the build's"
    assert len(generated) >= 32
    assert result["generated_ids"] == generated, "greedy tokens differ from the numpy model's on the same file"
    assert result["text"] == text and demo.locator(".pd-live__answer").text_content() == text
    assert result["ttft_ms"] > 0 and result["decode_tps"] > 0 and result["workers"] == 1
    assert result["backend"].startswith("wasm-")
    readouts = live_section(page).locator(".pd-readout__value").all_text_contents()
    assert all(value != "–" for value in readouts), readouts
    assert page.evaluate("() => document.activeElement.textContent") == RUN[lang], "focus returns to the button"
    live_section(page).screenshot(path=str(screenshot_dir / f"live-{lang.strip('/') or 'zh'}-{scheme}.png"))
    log.assert_clean()


def test_the_browsers_logits_agree_with_numpys_within_the_tolerance(open_page, built_site: Path):
    """Prefill's last position and the decode steps after it, every logit of the vocabulary (tiny model)."""
    page, log, demo = open_live(open_page, "en/")
    live = page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then((r) => r.json())",
                         demo.element_handle())["live"]
    gguf = published_model(built_site, page)
    ids, _, _ = numpy_greedy(gguf, live["prompt"], live["chat"], 1)
    assert_logits_agree(page, gguf, live["manifest"], ids)
    log.assert_clean()


def test_a_second_visit_starts_from_storage_and_forget_removes_it(open_page):
    page, log, demo = open_live(open_page, "en/")
    demo.get_by_role("button", name=RUN["en/"]).click()
    assert wait_until_finished(page, demo) == "done"
    assert result_of(demo)["storage"] == "kept"
    page.reload()
    page, _, demo = page, log, demo_of(page)
    demo.scroll_into_view_if_needed()
    demo.get_by_role("button", name=RUN["en/"]).click()
    assert wait_until_finished(page, demo) == "done"
    assert result_of(demo)["from_cache"] is True
    model_requests = [name for name in live_requests(page) if "/assets/pd/model/" in name]
    assert model_requests == [], f"a kept model was fetched again: {model_requests}"
    demo.get_by_role("button", name=FORGET["en/"]).click()
    status = live_section(page).locator(".pd-live__status")
    page.wait_for_function("el => el.textContent.includes('removed')", arg=status.element_handle())
    assert page.evaluate("() => caches.has('pd-live-model')") is False
    log.assert_clean()


def test_where_storage_is_refused_it_runs_from_memory_and_says_so(open_page):
    page, log, demo = open_live(open_page, "en/", "?pd-live-storage=refuse")
    demo.get_by_role("button", name=RUN["en/"]).click()
    assert wait_until_finished(page, demo) == "done"
    assert result_of(demo)["storage"] == "refused"
    assert "runs from memory" in live_section(page).text_content()
    log.assert_clean()


@pytest.mark.parametrize("lang", ["", "en/"])
def test_a_chunk_that_arrives_wrong_is_fetched_again_then_refused_with_a_reason_and_retry_works(open_page, lang):
    page, log, demo = open_live(open_page, lang, "?pd-live-storage=refuse")
    served = {"bad": 0}

    def corrupt(route) -> None:
        response = route.fetch()
        body = bytearray(response.body())
        body[len(body) // 2] ^= 0xFF
        served["bad"] += 1
        route.fulfill(response=response, body=bytes(body))

    page.route("**/assets/pd/model/*.bin", corrupt)
    run_by_keyboard(page, demo, lang)
    assert wait_until_finished(page, demo) == "error"
    assert demo.get_attribute("data-pd-live-failure") == "integrity"
    assert served["bad"] == 2, "a bad chunk is fetched once more before the run gives up"
    status = live_section(page).locator(".pd-live__status").text_content()
    assert ("校验失败" if lang == "" else "failed its check") in status and "SHA-256" in status
    assert page.evaluate("() => document.activeElement.textContent") == RETRY[lang], "focus stays on the button"
    page.unroute("**/assets/pd/model/*.bin")
    page.keyboard.press("Enter")
    assert wait_until_finished(page, demo) == "done"
    log.assert_clean()


def test_one_bad_arrival_is_repaired_by_fetching_again(open_page):
    page, log, demo = open_live(open_page, "en/", "?pd-live-storage=refuse")
    corrupted = []

    def once(route) -> None:
        response = route.fetch()
        body = response.body()
        if not corrupted:
            corrupted.append(route.request.url)
            body = body[:-1] + bytes([body[-1] ^ 1])
        route.fulfill(response=response, body=body)

    page.route("**/assets/pd/model/*.bin", once)
    demo.get_by_role("button", name=RUN["en/"]).click()
    assert wait_until_finished(page, demo) == "done" and corrupted
    log.assert_clean()


def test_the_tokenizer_in_the_page_splits_hard_strings_as_the_build_does(open_page, built_site: Path):
    page, log, demo = open_live(open_page, "en/")
    gguf = published_model(built_site, page)
    manifest_name = page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then((r) => r.json())",
                                  demo.element_handle())["live"]["manifest"]
    got = page.evaluate("""async ([name, strings]) => {
        const { Tokenizer } = await import('/assets/vendor/tokenizers.mjs');
        const manifest = await (await fetch('/assets/pd/model/' + name)).json();
        const tokenizer = new Tokenizer(manifest.tokenizer.json, { clean_up_tokenization_spaces: false });
        return strings.map((s) => tokenizer.encode(s, { add_special_tokens: false }).ids);
    }""", [manifest_name, HARD])
    tokenizer = load_model(str(gguf)).tokenizer
    assert got == [tokenizer.encode(s) for s in HARD]
    log.assert_clean()


def start_paced_run(page, demo, lang: str, max_tokens: int) -> None:
    """Run with `max_tokens` and wait for the first decode steps to show."""
    demo.locator(".pd-live__max").fill(str(max_tokens))
    demo.get_by_role("button", name=RUN[lang]).click()
    page.wait_for_function("el => el.dataset.pdLiveState === 'running' && "
                           "el.querySelector('.pd-live__answer').textContent.length > 0", arg=demo.element_handle(),
                           timeout=RUN_TIMEOUT_S * 1000)


@pytest.mark.parametrize("lang", ["", "en/"])
def test_stop_during_decode_ends_the_run_at_once_and_keeps_what_was_generated(open_page, lang):
    page, log, demo = open_live(open_page, lang, f"?pd-live-pace={PACE_MS}&pd-live-storage=refuse")
    start_paced_run(page, demo, lang, 512)
    stop = demo.get_by_role("button", name=STOP[lang])
    assert page.evaluate("() => document.activeElement.textContent") == STOP[lang], "a run starts with focus on Stop"
    # The readout read and Stop pressed in one task: what the page showed at the press.
    cached_at_press = int("".join(c for c in stop.evaluate("""(button) => {
        const shown = button.closest('.pd-live').querySelectorAll('.pd-readout__value')[2].textContent;
        button.click();
        return shown;
    }""") if c.isdigit()))
    assert wait_until_finished(page, demo) == "done"
    result = result_of(demo)
    assert result["stop_reason"] == "stopped"
    shown_at_press = cached_at_press - len(result["prompt_tokens"]) + 1
    # The step under way when the press arrived, and one more the page had not yet shown (50 ms each): never the
    # 512 asked for.
    generated = len(result["generated_ids"])
    assert shown_at_press <= generated <= shown_at_press + 2, f"{generated} tokens after {shown_at_press} at Stop"
    answer = demo.locator(".pd-live__answer").text_content()
    assert answer and answer == result["text"], "the tokens generated before Stop stay on the page"
    assert live_section(page).locator(".pd-live__status").text_content() == STOPPED[lang]
    run = demo.get_by_role("button", name=RUN[lang])
    assert run.is_enabled() and stop.is_disabled() and demo.locator(".pd-live__prompt").is_editable()
    assert page.evaluate("() => document.activeElement.textContent") == RUN[lang], "focus moves from Stop to Run"
    # The controls work again: a short run to its limit.
    demo.locator(".pd-live__max").fill("3")
    run.press("Enter")
    assert wait_until_finished(page, demo) == "done" and result_of(demo)["stop_reason"] in ("length", "end")
    log.assert_clean()


def test_stop_while_the_model_loads_ends_the_worker_and_a_later_run_works(open_page):
    page, log, demo = open_live(open_page, "en/", "?pd-live-storage=refuse")
    release = []
    page.route("**/assets/pd/model/*.bin", lambda route: release.append(route))  # the download hangs, never answered
    demo.get_by_role("button", name=RUN["en/"]).click()
    while not release:
        page.wait_for_timeout(50)
    demo.get_by_role("button", name=STOP["en/"]).click()
    status = live_section(page).locator(".pd-live__status")
    assert status.text_content() == STOPPED["en/"] and demo.get_attribute("data-pd-live-state") == "idle"
    assert page.evaluate("() => document.activeElement.textContent") == RUN["en/"]
    for route in release:
        with contextlib.suppress(Exception):  # its worker is gone
            route.abort()
    page.unroute("**/assets/pd/model/*.bin")
    page.keyboard.press("Enter")
    assert wait_until_finished(page, demo) == "done"
    log.assert_clean()


# How each way of losing the worker is played: the query the page opens with, what the test does to it (a route
# rewriting one of the worker's modules, or the Worker the page starts ended from outside), and the reason shown.
LOST = {
    # the browser ends the worker (as when it reclaims memory): nothing is said, the page hears silence
    "silent": (f"?pd-live-silence=2&pd-live-pace={PACE_MS}", None,
               {"": "2 秒内没有任何消息", "en/": "no word from it for 2 s"}),
    # an error escapes the worker's handlers
    "worker": ("", ("live-worker.js", "", 'setTimeout(() => { throw new Error("lost in the test"); }, 0);'),
               {"": "后台线程意外终止", "en/": "stopped unexpectedly"}),
    # the browser refuses to grow the memory
    "memory": ("", ("wasm.js", "this.memory.grow(Math.ceil(short / PAGE_BYTES));",
                    'throw new RangeError("WebAssembly.Memory.grow(): Maximum memory size exceeded");'),
               {"": "内存不足，浏览器拒绝分配", "en/": "Not enough memory: the browser refused"}),
}
END_WORKER = """() => { const Started = Worker; window.pdTestWorkers = [];
  window.Worker = class extends Started { constructor(...args) { super(...args); pdTestWorkers.push(this); } }; }"""


@pytest.mark.parametrize(("lang", "how"), [("", "silent"), ("en/", "silent"), ("en/", "worker"), ("", "memory"),
                                           ("en/", "memory")])
def test_a_lost_worker_gives_its_reason_keeps_focus_and_retry_works(open_page, lang, how):
    query, rewrite, reason = LOST[how]
    page, log, demo = open_live(open_page, lang, query)
    if rewrite:
        module, old, new = rewrite

        def rewritten(route) -> None:
            response = route.fetch()
            body = response.text()
            assert old in body, f"{module} no longer holds the line the test rewrites"
            route.fulfill(response=response, body=body.replace(old, new) if old else body + "\n" + new)

        page.route(f"**/assets/pd/device/{module}", rewritten)
        run_by_keyboard(page, demo, lang)
    else:
        page.evaluate(END_WORKER)  # only this test's page: the demo starts its worker at the press
        start_paced_run(page, demo, lang, 40)
        demo.get_by_role("button", name=STOP[lang]).focus()
        page.evaluate("() => pdTestWorkers.at(-1).terminate()")
    assert wait_until_finished(page, demo) == "error"
    assert demo.get_attribute("data-pd-live-failure") == how
    status = live_section(page).locator(".pd-live__status").text_content()
    assert reason[lang] in status, status
    assert page.evaluate("() => document.activeElement.textContent") == RETRY[lang], "focus is on Retry"
    if rewrite:
        page.unroute(f"**/assets/pd/device/{module}")
    page.keyboard.press("Enter")
    assert wait_until_finished(page, demo) == "done", live_section(page).locator(".pd-live__status").text_content()
    log.assert_clean()


def test_the_control_fits_a_320_px_screen_after_a_run(open_page):
    page, log, demo = open_live(open_page, "en/", viewport={"width": 320, "height": 700})
    demo.get_by_role("button", name=RUN["en/"]).click()
    assert wait_until_finished(page, demo) == "done"
    outside = live_section(page).evaluate("(section) => [...section.querySelectorAll('*')].filter((el) => "
                                          "el.getBoundingClientRect().right > innerWidth + 0.5).map((el) => el.className)")
    assert outside == [], f"parts of the control stick out of a 320 px screen: {outside}"
    log.assert_clean()


@pytest.fixture(scope="module")
def real_live_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("live-real") / "site", extra_env={"PD_LIVE_MODEL": "smollm2-135m"}).path


@pytest.mark.real_model
@pytest.mark.parametrize("lang", ["en/", ""])
def test_the_real_model_runs_in_the_browser_and_its_greedy_tokens_equal_numpys(browser, real_live_site: Path, lang):
    with StaticServer(real_live_site) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{server.url.rstrip('/')}/{lang}{PAGE}")
        demo = demo_of(page)
        demo.scroll_into_view_if_needed()
        demo.get_by_role("button", name=RUN[lang]).click()
        assert wait_until_finished(page, demo) == "done", live_section(page).locator(".pd-live__status").text_content()
        result = result_of(demo)
        live = page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then((r) => r.json())",
                             demo.element_handle())["live"]
        assert live["model"].startswith("SmolLM2") and live["download_bytes"] > 90e6
        ids, generated, text = numpy_greedy(published_model(real_live_site, page), live["prompt"], live["chat"],
                                            live["max_new_tokens"])
        context.close()
    assert result["prompt_tokens"] == ids
    assert len(generated) >= 32, "the chapter's prompt gives at least 32 new tokens to compare"
    assert result["generated_ids"] == generated
    assert result["text"] == text
    assert not errors


@pytest.mark.real_model
def test_the_real_models_logits_in_the_browser_agree_with_numpys(browser, real_live_site: Path):
    with StaticServer(real_live_site) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{server.url.rstrip('/')}/en/{PAGE}")
        live = page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then((r) => r.json())",
                             demo_of(page).element_handle())["live"]
        gguf = published_model(real_live_site, page)
        ids, _, _ = numpy_greedy(gguf, live["prompt"], live["chat"], 1)
        assert_logits_agree(page, gguf, live["manifest"], ids)
        context.close()


@pytest.mark.real_model
def test_the_device_measurement_runs_the_real_weights(browser, real_live_site: Path):
    """On a site that publishes SmolLM2, the bottleneck chapter's measurement reports pp512 and tg at 512 of the real
    weights in their own formats, as llama-bench does (median and spread), every layer measured."""
    with StaticServer(real_live_site) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{server.url.rstrip('/')}/en/bottleneck/")
        demo = page.locator(".pd-demo[data-pd-demo=device]")
        demo.scroll_into_view_if_needed()
        page.mouse.move(10, 300)
        button = demo.get_by_role("button", name="Measure this device")
        button.wait_for()
        assert "real SmolLM2-135M-Instruct" in demo.locator(".pd-device__intro").text_content()
        button.click()
        page.wait_for_function("el => !['idle', 'running'].includes(el.dataset.pdDeviceState)",
                               arg=demo.element_handle(), timeout=900_000)
        assert demo.get_attribute("data-pd-device-state") == "done", demo.locator(".pd-device__status").text_content()
        result = json.loads(demo.locator("[data-pd-result]").get_attribute("data-pd-result"))
        copied = demo.locator(".pd-device__copytext").input_value()
        context.close()
    assert result["weights"] == "real" and result["precision"].startswith("Q4_1")
    assert result["layers_measured"] == result["layers_total"] == 30 and result["prompt_tokens"] == 512
    for test in ("pp_tps", "tg_tps"):
        assert result[test]["n"] >= 3 and 0 < result[test]["min"] <= result[test]["median"] <= result[test]["max"]
    assert "| SmolLM2-135M-Instruct |" in copied and "random weights" not in copied
