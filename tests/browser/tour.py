"""One tour per page and view: visit a built page once, do what a reader does there, and record everything
the page-wide tests check (tests/browser/test_pages.py, test_a11y.py, test_headers.py, test_offline.py, test_narrow_screens.py).

A view is one way of meeting the page: a screen width, a palette, a host with or without the `_headers` file,
JavaScript on or off. The `tour` fixture (tests/browser/conftest.py) takes each (page, view) tour at most once
per test session (per xdist worker; the tests of one page run on one worker) and hands the same record to every
test that asks. Waiting is on the demos' own ready attributes and on the network going quiet, never on a clock.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from harness.pages import PAGE_TIMEOUT_MS, Network, draw_every_demo, engage

DEVICE_TIMEOUT_MS = 240_000  # the quick measurement of this device, on a loaded two-core machine
FAST = "?pd-speed=400"  # the player's test hook: 400x the recorded clock
LOCAL_HOSTS = {"127.0.0.1"}


@dataclass(frozen=True)
class View:
    width: int
    height: int = 900
    palette: str = "light"
    headers: bool = True  # served with the `_headers` file (Netlify, Cloudflare Pages) or without (GitHub Pages)
    javascript: bool = True
    phone: bool = False  # a phone's touch screen at device scale 2, measuring layout shifts while the page loads
    draw: bool = True  # draw every demo and chart (the reader's gesture, then each one scrolled into view)
    play: bool = False  # then play every demo to its end, switch every option, move every slider, hover every chart,
    # and switch the palette: every chart's words follow it
    device: bool = False  # and, while playing, measure this device (the device demo's quick run)
    axe: bool = False
    screenshot: bool = False
    token_ends: bool = False  # then show each token demo's last frame: does it fit, and a screenshot of it


VIEWS = {
    # Every demo played, in both palettes, under the `_headers` policy and the page's own (both enforced).
    # Measuring this device is left to tests/browser/test_device.py, which runs it in both palettes with the
    # same checks (console, page errors, CSP, requests off 127.0.0.1).
    "desktop-light": View(1280, play=True, axe=True, screenshot=True, token_ends=True),
    "desktop-dark": View(1280, palette="dark", play=True, axe=True, token_ends=True),
    "phone": View(412, 823, phone=True, draw=False),
    # The narrowest phones, the demos and charts drawn; axe at the narrowest in both palettes. The 320 px view is
    # also the host that sends no headers (GitHub Pages): the page's own policy alone, every demo drawn under it.
    # That policy is enforced in the desktop views too, so what it would block there is reported there as well.
    "320": View(320, 720, headers=False, axe=True, token_ends=True),
    "360": View(360, 720, palette="dark", axe=True, token_ends=True),
    # Without JavaScript: the static fallbacks.
    "320-nojs": View(320, 720, javascript=False, draw=False),
    "360-nojs": View(360, 720, javascript=False, draw=False),
}


@dataclass
class Tour:
    path: str
    view: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)  # responses of 400 or more, and failed requests
    h1_count: int = 0
    html_lang: str = ""
    color_scheme: str = ""  # Material's data-md-color-scheme on <body>
    demo_status: dict[str, str] = field(default_factory=dict)  # demo id -> data-pd-status once drawn
    missing_strings: dict[str, str] = field(default_factory=dict)  # demo id -> label keys its JSON lacked (shown raw)
    controls: list[dict] = field(default_factory=list)  # each demo's controls once drawn (DEMO_CONTROLS)
    played: dict[str, dict] = field(default_factory=dict)  # demo id -> its end once played (PLAYED_TO_THE_END)
    palette_unfollowed: list[str] = field(default_factory=list)  # charts whose words kept their colour (play views)
    axe: list[dict] | None = None  # violations, when the view runs axe-core
    scroll_width: int = 0
    inner_width: int = 0
    sticking_out: list[str] = field(default_factory=list)
    chart_clashes: list[str] = field(default_factory=list)
    narrow_sliders: list[str] = field(default_factory=list)
    controls_off_screen: list[str] = field(default_factory=list)  # PLAYER_CONTROLS_OFF_SCREEN
    layout_shifts: list[dict] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)  # every table in a demo or validation box: does it scroll
    source_selects: list[dict] = field(default_factory=list)  # projection pickers, on their longest name
    device_state: dict[str, str] = field(default_factory=dict)
    token_ends: dict[str, dict] = field(default_factory=dict)  # token demo id -> its last frame (TOKEN_DEMOS)
    screenshot: Path | None = None
    seconds: float = 0.0

    def problems(self) -> dict[str, list[str]]:
        """What a reader would meet that is wrong: errors, blocked code, requests that fail or leave 127.0.0.1."""
        found = {"console errors": self.console_errors, "page errors": self.page_errors,
                 "CSP violations": self.csp_violations, "requests that left 127.0.0.1": self.outside_requests,
                 "requests the site could not answer": self.unanswered,
                 "demos that did not load": [f"{demo}: {status}" for demo, status in self.demo_status.items()
                                             if status != "ready"],
                 "labels missing from a demo's strings": [f"{demo}: {keys}" for demo, keys in
                                                          self.missing_strings.items()]}
        return {name: items for name, items in found.items() if items}

    def fits(self) -> bool:
        return self.scroll_width <= self.inner_width


# What sticks out past the right edge of the screen, for the failure message (inside a box that scrolls
# or clips it, it does not count: that box is what the page holds).
STICKING_OUT = """() => [...document.body.querySelectorAll('*')].filter((el) => {
    if (el.getBoundingClientRect().right <= innerWidth + 0.5) return false;
    for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible') return box.getBoundingClientRect().right > innerWidth + 0.5;
    }
    return true;
  }).slice(0, 8).map((el) => `${el.tagName.toLowerCase()}.${el.getAttribute('class') || ''}`
    + ` (right edge at ${Math.round(el.getBoundingClientRect().right)} px)`)"""

# The words of every drawn chart (title, axis titles and ticks of every subplot, legend, annotations such as
# subplot titles and the source note) that overlap one another or stick out of the chart, a legend's box that
# covers a title, and the points' labels that stick out, as "chart: ..." lines for the failure message.
CHART_TEXT_CLASHES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((plot) => {
    const name = plot.closest('[data-pd-demo]')?.dataset.pdDemo || 'chart';
    const chart = plot.getBoundingClientRect();
    const words = [...plot.querySelectorAll('.gtitle, .xtick text, .ytick text, .x2tick text, .y2tick text,'
        + ' .g-xtitle text, .g-ytitle text, .g-x2title text, .g-y2title text, .annotation-text, .legendtext')]
      .filter((el) => el.textContent.trim() && el.getBoundingClientRect().width)
      .map((el) => [el.textContent.slice(0, 40), el.getBoundingClientRect(), el.closest('.legend'),
                    el.matches('.gtitle, .annotation-text')]);
    const legends = [...plot.querySelectorAll('.legend')].map((legend) => [legend, legend.getBoundingClientRect()])
      .filter(([, box]) => box.width);
    // A point's own label (a roofline's "Prefill") is checked for running off the chart, not for overlaps: it
    // sits beside its point, which may be near a tick or the legend by the data.
    const labels = [...plot.querySelectorAll('.textpoint text')].filter((el) => el.textContent.trim()
        && el.getBoundingClientRect().width).map((el) => [el.textContent.slice(0, 40), el.getBoundingClientRect()]);
    const clashes = [...words, ...labels].filter(([, box]) => box.left < chart.left - 1 || box.right > chart.right + 1)
      .map(([text, box]) => `${name}: "${text}" runs off the chart (${Math.round(box.left - chart.left)}`
        + `..${Math.round(box.right - chart.left)} px of ${Math.round(chart.width)})`);
    const overlap = (boxA, boxB) => Math.min(boxA.right, boxB.right) - Math.max(boxA.left, boxB.left) > 1
      && Math.min(boxA.bottom, boxB.bottom) - Math.max(boxA.top, boxB.top) > 1;
    words.forEach(([a, boxA], i) => words.slice(i + 1).forEach(([b, boxB]) => {
      if (overlap(boxA, boxB)) clashes.push(`${name}: "${a}" overlaps "${b}"`);
    }));
    // A title (the chart's, a subplot's) clear of the legend's whole box, its symbols included. (A tick label
    // only of the legend's words: the box's padding may reach over a tick beside it.)
    legends.forEach(([legend, box]) => words.forEach(([word, wordBox, inLegend, title]) => {
      if (title && inLegend !== legend && overlap(box, wordBox)) clashes.push(`${name}: the legend covers "${word}"`);
    }));
    return clashes;
  })"""

# Each demo once drawn, before anything is played: its kind and JSON, its charts (drawn or not), Plotly's own
# controls (the page's player must be the only ones), and each button and select with its name and colours.
DEMO_CONTROLS = """() => [...document.querySelectorAll('.pd-demo')].map((demo) => ({
    id: demo.id, kind: demo.dataset.pdDemo, trace: demo.dataset.pdTrace,
    charts: demo.querySelectorAll('.pd-chart').length,
    drawn_charts: [...demo.querySelectorAll('.pd-chart')].filter((c) => c.querySelector('.main-svg')).length,
    sliders: demo.querySelectorAll('input[type=range]').length,
    plotly_controls: demo.querySelectorAll('.updatemenu-container, .updatemenu-button, .slider-container').length,
    controls: [...demo.querySelectorAll('button, select')].map((el) => {
      const style = getComputedStyle(el);
      return {tag: el.tagName.toLowerCase(), name: (el.getAttribute('aria-label') || el.textContent).trim(),
              background: style.backgroundColor, colour: style.color};
    }),
  }))"""

# The first words of each demo's first chart, and their colour.
CHART_WORDS = ".main-svg .xtick text, .main-svg text"
CHART_WORD_COLOURS = """(selector) => Object.fromEntries([...document.querySelectorAll('.pd-demo')].flatMap((demo) => {
    const words = demo.querySelector('.pd-chart') && demo.querySelector('.pd-chart').querySelector(selector);
    return words ? [[demo.id || demo.dataset.pdDemo, getComputedStyle(words).fill]] : [];
  }))"""


def charts_follow_the_palette(page) -> list[str]:
    """Switch the palette as the toggle does (Material's attribute on <body>): each demo's first chart whose words
    keep their colour, after the page has had the time a reader would see (5 s)."""
    before = page.evaluate(CHART_WORD_COLOURS, CHART_WORDS)
    scheme = page.evaluate("() => document.body.getAttribute('data-md-color-scheme')")
    page.evaluate("(s) => document.body.setAttribute('data-md-color-scheme', s)",
                  "default" if scheme == "slate" else "slate")
    with contextlib.suppress(Exception):  # what did not follow is reported below
        page.wait_for_function("([selector, before]) => { const now = (" + CHART_WORD_COLOURS + ")(selector);"
                               " return Object.keys(before).every((id) => now[id] !== before[id]); }",
                               arg=[CHART_WORDS, before], timeout=5000)
    now = page.evaluate(CHART_WORD_COLOURS, CHART_WORDS)
    return sorted(demo for demo, colour in before.items() if now.get(demo) == colour)


# Every demo that showed a label key instead of its text (assets/pd/dom.js records the keys its JSON lacked).
MISSING_STRINGS = """() => Object.fromEntries([...document.querySelectorAll('.pd-demo[data-pd-missing-strings]')]
    .map((el) => [el.id || el.dataset.pdDemo, el.dataset.pdMissingStrings]))"""

# Each player's controls (Play, steps, the named scrubber and its value) that leave the screen on either side,
# and players whose value beside the scrubber (the prompt length) is empty: on a phone they wrap instead.
PLAYER_CONTROLS_OFF_SCREEN = """() => [...document.querySelectorAll('.pd-demo .pd-controls')].flatMap((controls) => {
    const name = controls.closest('[data-pd-demo]').dataset.pdDemo;
    const value = controls.querySelector('.pd-controls__value');
    const off = [...controls.querySelectorAll('button, input, output, label')].filter((part) => {
      const box = part.getBoundingClientRect();
      return box.width && (box.right > innerWidth + 0.5 || box.left < -0.5);
    }).map((part) => `${name}: ${part.tagName.toLowerCase()}.${part.className} off the screen`);
    return value && !value.textContent.trim() ? [...off, `${name}: the scrubber's value is empty`] : off;
  })"""

# Sliders narrower than a finger can set (the prompt-length scrubber was 25 px wide at 320 px).
NARROW_SLIDERS = """() => [...document.querySelectorAll('.pd-demo input[type=range]')]
    .filter((el) => el.getClientRects().length && el.getBoundingClientRect().width < 100)
    .map((el) => `${el.id || el.className}: ${Math.round(el.getBoundingClientRect().width)} px`)"""

# Every table a demo or the validation appendix holds, and whether it scrolls inside its own box.
# Once Material's script runs (at the reader's first gesture) a prose table sits in a wrapper that scrolls instead.
TABLES = """() => [...document.querySelectorAll('.pd-demo__table, article .pd-validation table')].map((el) => {
    const wrapper = el.closest('.md-typeset__scrollwrap');
    return {name: el.className || el.tagName.toLowerCase(), validation: !!el.closest('.pd-validation'),
      visible: el.getClientRects().length > 0, tabindex: el.getAttribute('tabindex'),
      overflow: Math.max(el.scrollWidth - el.clientWidth, wrapper ? wrapper.scrollWidth - wrapper.clientWidth : 0)};
  })"""

# Every layout shift while the page loads, including those Chromium flags as following input: under a
# test's viewport emulation it flags the shifts of the first frames so, which would hide them all.
RECORD_SHIFTS = """window.__pdShifts = [];
new PerformanceObserver((list) => { for (const entry of list.getEntries()) window.__pdShifts.push({
  value: entry.value,
  inHeader: entry.sources.every((s) => s.node && (s.node.closest ? s.node : s.node.parentElement)?.closest('header')),
  nodes: entry.sources.map((s) => s.node ? s.node.nodeName + '.' + s.node.className : '?') }); })
  .observe({ type: 'layout-shift', buffered: true });"""

# Every CSP violation the document reports, including those Chromium logs nowhere in the console (an eval that
# the page's policy blocks and the page's code catches).
RECORD_CSP = """window.__pdCsp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__pdCsp.push(
  `${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile || ''}:${e.lineNumber}`));"""


def is_outside(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in {"http", "https", "ws", "wss"} and parsed.hostname not in LOCAL_HOSTS


# A demo played to its end: the player's count and last frame, the answer as shown (tokens that are not a whole
# character are shown as their bytes and left out), and whether the static fallback is hidden.
PLAYED_TO_THE_END = """(demo) => {
    const answer = demo.querySelector('[data-pd-answer]');
    const copy = answer && answer.cloneNode(true);
    if (copy) copy.querySelectorAll('.pd-answer__bytes').forEach((b) => b.remove());
    const slider = demo.querySelector('input[type=range]');
    return {kind: demo.dataset.pdDemo, trace: demo.dataset.pdTrace, count: demo.dataset.pdCount ?? null,
            total: slider ? slider.max : null, answer: copy ? copy.textContent : null,
            fallback_hidden: [...demo.querySelectorAll('[data-pd-fallback]')].every((el) => !el.checkVisibility())};
  }"""


def play_every_demo(page, record: Tour, *, device: bool) -> dict[str, str]:
    """Do what a reader can do with every demo of the page: play it to the end (recorded in `record.played`),
    switch every option, move every slider to its end and point at every chart (plotly writes styles as it
    hovers). Returns the device demo's end state when it was measured."""
    states = {}
    for demo in page.locator(".pd-demo").all():
        demo.scroll_into_view_if_needed()
        engage(page)
        page.wait_for_function("el => el.dataset.pdStatus === 'ready'", arg=demo.element_handle(),
                               timeout=PAGE_TIMEOUT_MS)
        play = demo.locator(".pd-button--play")
        if demo.get_attribute("data-pd-demo") == "device":
            if device:  # measure this device: the quick run, to its result
                demo.locator("select").select_option("quick")
                play.first.click()
                page.wait_for_function("el => !['idle', 'running'].includes(el.dataset.pdDeviceState)",
                                       arg=demo.element_handle(), timeout=DEVICE_TIMEOUT_MS)
                states[demo.get_attribute("id")] = demo.get_attribute("data-pd-device-state")
        elif play.count():
            play.first.click()
            # the player's root: the demo itself, or the part of it the player drives (batching's two users)
            page.wait_for_function("el => (el.dataset.pdState ? el : el.querySelector('[data-pd-state]'))"
                                   ".dataset.pdState === 'ended'", arg=demo.element_handle(),
                                   timeout=PAGE_TIMEOUT_MS)
            record.played[demo.get_attribute("id") or demo.get_attribute("data-pd-demo")] = \
                demo.evaluate(PLAYED_TO_THE_END)
        if demo.get_attribute("data-pd-demo") != "device" or device:
            for select in demo.locator("select").all():
                for value in [option.get_attribute("value") for option in select.locator("option").all()]:
                    select.select_option(value)
        for slider in demo.locator("input[type=range]").all():
            slider.focus()
            page.keyboard.press("End")
        for chart in demo.locator(".pd-chart").all():
            chart.scroll_into_view_if_needed()
            page.wait_for_function("el => el.dataset.pdChart === 'ready'", arg=chart.element_handle(),
                                   timeout=PAGE_TIMEOUT_MS)
            chart.hover()
    return states


TOKEN_DEMOS = ("prefill", "conversation", "decode")  # the demos that show a prompt and an answer as tokens


def token_demos_at_their_end(page, record: Tour, view: View, screenshot_dir: Path | None) -> None:
    """Each token demo as a keyboard reader leaves it: End pressed on its stage (the last frame: the longest
    answer) and, in prefill, a split character's bytes shown by focus. Records whether the page still fits and
    screenshots the demo (demo-<kind>-<zh|en>-<width>-<palette>.png)."""
    lang = "en" if record.path.startswith("en/") else "zh"
    for demo in page.locator(".pd-demo").all():
        kind = demo.get_attribute("data-pd-demo")
        if kind not in TOKEN_DEMOS:
            continue
        demo.scroll_into_view_if_needed()
        demo.locator("[data-pd-stage]").focus()
        page.keyboard.press("End")
        if kind == "prefill":
            demo.locator(".pd-token-item").nth(1).focus()
        end = {"kind": kind, "overflow": page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")}
        if screenshot_dir is not None:
            end["screenshot"] = str(screenshot_dir / f"demo-{kind}-{lang}-{view.width}-{view.palette}.png")
            demo.screenshot(path=end["screenshot"])
        record.token_ends[demo.get_attribute("id") or kind] = end


def run_axe(page, axe_source: str) -> list[dict]:
    """axe-core's violations on the page. page.evaluate runs outside the page's CSP, unlike a <script>."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source)
    return page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ['violations']});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: ' + n.failureSummary)}));
    }""")


def source_selects(page) -> list[dict]:
    """Each projection picker (it cannot wrap) on its last, longest kind of name: does it stay on screen?"""
    found = []
    for select in page.locator(".pd-demo select[id$='-source']").all():
        if not select.is_visible():
            continue
        widest = select.evaluate("el => Math.max(...[...el.options].map((o) => o.text.length))")
        select.select_option(index=select.locator("option").count() - 1)
        box = select.bounding_box()
        found.append({"id": select.get_attribute("id"), "widest": widest,
                      "left": box["x"], "right": box["x"] + box["width"]})
    return found


def take_tour(pages, base_url: str, path: str, name: str, *, axe_source: str | None,
              screenshot_dir: Path | None) -> Tour:
    """pages: the session's WarmPages (tests/browser/warm_pages.py), which gives each visit a new page."""
    view = VIEWS[name]
    record = Tour(path, name)
    started = time.monotonic()
    options = {"viewport": {"width": view.width, "height": view.height}, "color_scheme": view.palette,
               "java_script_enabled": view.javascript}
    if view.phone:
        options.update(is_mobile=True, has_touch=True, device_scale_factor=2)
    page = pages.new_page(base_url, **options)
    try:
        network = Network(page, javascript=view.javascript)

        def on_console(message) -> None:
            if message.type == "error":
                text = message.text
                (record.csp_violations if "Content Security Policy" in text else record.console_errors).append(text)

        page.on("console", on_console)
        page.on("pageerror", lambda error: record.page_errors.append(str(error)))
        page.on("request", lambda request: record.outside_requests.append(request.url)
                if is_outside(request.url) else None)
        page.on("response", lambda response: record.unanswered.append(f"{response.status} {response.url}")
                if response.status >= 400 else None)
        page.on("requestfailed", lambda request: record.unanswered.append(f"failed ({request.failure}) {request.url}"))
        page.add_init_script(RECORD_CSP)
        if view.phone:
            page.add_init_script(RECORD_SHIFTS)
        page.goto(base_url + path + (FAST if view.play else ""), wait_until="load")
        if view.phone or not view.draw:
            network.quiet(page)
        if view.phone:  # only loaded: nothing the reader did moved anything
            record.layout_shifts = page.evaluate("window.__pdShifts")
        record.h1_count = page.locator("article h1").count()
        record.html_lang = page.evaluate("() => document.documentElement.lang")
        record.color_scheme = page.evaluate("() => document.body.getAttribute('data-md-color-scheme') || ''")
        if view.draw:
            record.demo_status.update(draw_every_demo(page))
            network.quiet(page)
        page.evaluate("() => window.scrollTo(0, 0)")
        record.scroll_width = page.evaluate("() => document.documentElement.scrollWidth")
        record.inner_width = page.evaluate("() => innerWidth")
        if not record.fits():
            record.sticking_out = page.evaluate(STICKING_OUT)
        record.tables = page.evaluate(TABLES)
        if view.draw:
            record.controls = page.evaluate(DEMO_CONTROLS)
        if view.javascript:
            record.chart_clashes = page.evaluate(CHART_TEXT_CLASHES)
            record.narrow_sliders = page.evaluate(NARROW_SLIDERS)
            record.controls_off_screen = page.evaluate(PLAYER_CONTROLS_OFF_SCREEN)
        if view.axe and axe_source is not None:
            record.axe = run_axe(page, axe_source)
        if view.screenshot and screenshot_dir is not None:
            record.screenshot = screenshot_dir / screenshot_name(path, view.palette)
            page.screenshot(path=str(record.screenshot), full_page=True)
        if view.javascript and view.width <= 360:
            record.source_selects = source_selects(page)
        if view.play:
            record.device_state = play_every_demo(page, record, device=view.device)
            network.quiet(page)
        if view.token_ends:
            token_demos_at_their_end(page, record, view, screenshot_dir)
        if view.play:
            record.palette_unfollowed = charts_follow_the_palette(page)
        if view.javascript:  # after drawing and playing: a label first needed by a later frame counts too
            record.missing_strings = page.evaluate(MISSING_STRINGS)
            record.csp_violations += [f"securitypolicyviolation: {event}" for event in page.evaluate("window.__pdCsp")]
    finally:
        with contextlib.suppress(Exception):
            page.close()
    record.seconds = time.monotonic() - started
    return record


def screenshot_name(path: str, scheme: str) -> str:
    name = path.strip("/").replace("/", "-")
    if not path.startswith("en/"):
        name = f"zh-{name}" if name else "zh"
    return f"{name or 'en'}-{scheme}.png"
