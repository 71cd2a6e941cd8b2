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

import json
from pathlib import Path

import pytest

from harness.static_server import StaticServer
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
RUN_TIMEOUT_S = 240
# Strings whose tokens are hard to get right: CJK, emoji (four-byte characters, a joiner), digits (SmolLM2 splits
# them one by one), runs of spaces and newlines, accents and typographic quotes, the special tokens.
HARD = ["用三句话解释量子计算。", "emoji 🤖👩‍💻 ok", "digits 1234567 3.14159", "runs of   spaces\n\n\nand\tnewlines  \n",
        "<|im_start|>user\nhi<|im_end|>\n", "naïve café — “quotes”", "  leading", "x<|endoftext|>y"]
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
