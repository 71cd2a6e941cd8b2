"""The demos of one site build: prepare every page's demos (on_files), then fill pages (on_page_markdown).

State that must survive rebuilds (the loaded model, simulation results, built demo JSON) lives in
module-level memos; what belongs to one build (this language's pages) lives in a DemoSite.
An author's mistake in a demo block or a strings file is reported through hooks/authoring.py: it stops
a build, and under `mkdocs serve` becomes an error box at the block's place while the rest still builds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from hooks import authoring, claims
from hooks.authoring import AuthoringMistake
from hooks.demos import assets, blocks, contract, inline_figures, model_chunks, render, wasm
from hooks.demos.blocks import DemoBlock, Limits
from hooks.demos.builders import BUILDERS
from hooks.demos.builders.common import measured_source
from hooks.demos.cache import CACHE_DIR, ResultCache, source_hash
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.measurements import Measurements, MeasurementsDisturbed
from hooks.demos.simulator import NumpySimulator, model_spec, simulations_dir
from hooks.demos.strings import Strings, load_strings, readable_strings, shown_path
from hooks.markdown_blocks import Fence, demo_fences

log = get_plugin_logger(__name__)


@cache
def _simulator(spec: str | None) -> NumpySimulator:
    return NumpySimulator(spec)


@cache
def _code_hash(package_dir: Path) -> str:
    # Hashed once per process: under `mkdocs serve` the simulation and demo modules stay imported, so results
    # are keyed by the code that actually runs (restart the server to run edited code).
    return source_hash(package_dir)


def default_measurements(project_dir: Path) -> Measurements:
    """Measurements for the model named by PD_MODEL and the plan named by PD_SWEEP."""
    return Measurements(_simulator(model_spec()), ResultCache(project_dir / CACHE_DIR), _code_hash(simulations_dir()))


@dataclass
class DemoPlace:
    """What takes one demo block's place in the page: its markup (the demo; under `mkdocs serve`, an
    error box instead of it or above it) and the demo's JSON file."""

    html: str
    file: File | None = None


@dataclass
class PageDemos:
    """One page's demos: raw source (for line numbers), URL (the demos' JSON is linked relative to it),
    demo blocks, what takes each one's place, and the readouts of its demos by kind."""

    src_path: str
    url: str
    source: str
    fences: list[Fence]
    places: list[DemoPlace] = field(default_factory=list)
    readouts: dict[str, dict[str, Any]] = field(default_factory=dict)


class DemoSite:
    def __init__(self, project_dir: Path, measurements: Measurements, templates_dir: Path) -> None:
        self.project_dir = project_dir
        self.measurements = measurements
        self.templates_dir = templates_dir
        self.pages: dict[str, PageDemos] = {}
        self.strings: Strings | None = None
        self.strings_mistake: str | None = None  # the error box shown with every demo (mkdocs serve)
        self.lang = ""

    def shown_path(self, file: File) -> str:
        return shown_path(Path(file.abs_src_path), self.project_dir)

    # -- on_files ---------------------------------------------------------------------------------
    def prepare(self, files: Files, config: MkDocsConfig) -> list[File]:
        """Parse, validate and compute every demo of this language's pages; return the files to add."""
        self.lang = str(config.theme.get("language") or "en")
        default_lang = getattr(config.plugins.get("i18n"), "default_language", None) or self.lang
        self.strings, self.strings_mistake = self._load_strings(Path(config.docs_dir), default_lang)
        # Each page read once: its demos are found in this text, and the page is built from it (`source_of`).
        sources = [(file, file.content_string) for file in files.documentation_pages()]
        pages = [PageDemos(self.shown_path(file), file.url, source, demo_fences(source)) for file, source in sources]
        new_files = [assets.plotly_file(config, self.project_dir), *wasm.kernel_files(config)]
        if any(fence for page in pages for fence in page.fences):  # the live model, when a page has a demo
            new_files += model_chunks.live_files(config, self.measurements.simulator.model, self.project_dir)
        # Every block is checked before any is simulated: a build stops at a mistake at once.
        checked = [[self._check(page, index, fence) for index, fence in enumerate(page.fences)] for page in pages]
        for page, page_checked in zip(pages, checked, strict=True):
            page.places = [self._place(page, block, config) for block in page_checked]
            new_files += [place.file for place in page.places if place.file]
        self.pages = {page.src_path: page for page in pages}
        if any(page.fences for page in pages):  # a site with demos publishes what they measured
            try:
                for block in (b for page_checked in checked for b in page_checked
                              if not isinstance(b, str) and b.kind in blocks.RECORDING_KINDS and isinstance(b.prompt, str)):
                    # its timings join the ledger; a demo read whole from the cache did not ask for its recording
                    self.measurements.trace(block.prompt, block.options["max_new_tokens"],
                                            block.options.get("chat", True))
                new_files += assets.ledger_files(config, self.measurements.published_ledger())
            except MeasurementsDisturbed:
                if not authoring.show_in_page:
                    raise  # every demo's place shows it under `mkdocs serve`
        return new_files

    def _load_strings(self, docs_dir: Path, default_lang: str) -> tuple[Strings, str | None]:
        """This language's labels, and the error box of their mistake (mkdocs serve; a build stops)."""
        try:
            strings = load_strings(docs_dir, self.lang, default_lang, self.project_dir)
            return claims.resolve_strings(strings, self.project_dir, self.figures()), None
        except AuthoringMistake as error:
            box = authoring.report(error)
            readable = readable_strings(docs_dir, self.lang, default_lang, self.project_dir)
            return readable or Strings(self.lang, error.path, {}), box

    @cached_property
    def limits(self) -> Limits:
        """What a demo block may ask for (loads the model: only asked when a page has a demo block)."""
        simulator = self.measurements.simulator
        return Limits(model_name=simulator.model_name, max_context=simulator.max_context,
                      count_prompt_tokens=simulator.count_prompt_tokens,
                      projection_ids=self.measurements.projection_ids())

    def _check(self, page: PageDemos, index: int, fence: Fence) -> DemoBlock | str:
        """The parsed, validated block, or the error box of its mistake (mkdocs serve; a build stops)."""
        try:
            block = blocks.parse_block(page.source.split("\n"), fence, page.src_path, index)
            block = blocks.validate(block, self.limits)
            claims.resolve_note(block, self.figures())
            return block
        except AuthoringMistake as error:
            return authoring.report(error)

    def _place(self, page: PageDemos, block: DemoBlock | str, config: MkDocsConfig) -> DemoPlace:
        if isinstance(block, str):
            return DemoPlace(block)
        if self.strings_mistake and not self.strings.values:  # not even the default language's labels: no demo
            return DemoPlace(self.strings_mistake)
        try:
            content, context, readouts = self._demo_json(block)
            contract.check(block, json.loads(content))
            file = assets.demo_file(config, block.kind, self.lang, content)
            markup = render.render_demo(self.templates_dir, block.kind, {
                **context, "strings": self.strings, "kind": block.kind, "lang": self.lang,
                "trace_url": get_relative_url(file.url, page.url), "demo_id": f"pd-demo-{block.kind}-{block.index + 1}"})
        except AuthoringMistake as error:  # e.g. a label the demo needs and no strings file has
            return DemoPlace(authoring.report(error))
        except MeasurementsDisturbed as error:
            if not authoring.show_in_page:
                raise
            return DemoPlace(authoring.report(AuthoringMistake(block.src_path, block.line, str(error))))
        page.readouts.setdefault(block.kind, readouts)
        return DemoPlace("\n".join(filter(None, [self.strings_mistake, markup])), file)

    def _demo_json(self, block: DemoBlock) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """The demo's JSON text, fallback context and prose readouts, cached on disk like simulations (figure building
        takes a while), keyed by everything they are made from, the demo-building code included."""
        m = self.measurements
        parts = {"what": "demo", "kind": block.kind, "options": block.options, "lang": self.lang,
                 "strings": self.strings.values, "simulation_code": m.code_hash, "model": m.simulator.fingerprint,
                 "plan": m.plan.name, "demo_code": _code_hash(Path(__file__).resolve().parent / "demos"),
                 "live_model": model_chunks.cache_key()}

        def build() -> dict[str, Any]:
            with m.cache.recording() as used:
                demo = BUILDERS[block.kind](block, m, self.strings)
            content = json.dumps(demo.data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            return {"content": content, "context": demo.context, "readouts": demo.readouts,
                    "depends_on": sorted(set(used))}

        def sound(built: dict[str, Any]) -> bool:
            # A damaged simulation file under a cached demo is still found, reported and recomputed.
            return not any([m.cache.damaged(key) for key in built.get("depends_on", [])])

        built = m.cache.get_or_compute(parts, build, label=f"{block.kind} demo ({self.lang})", announce=False,
                                       valid=sound)
        return built["content"], built["context"], built["readouts"]

    # -- on_page_markdown -------------------------------------------------------------------------
    def page_markdown(self, markdown: str, page: Page) -> str:
        demos = self.pages.get(self.shown_path(page.file))
        if demos is None:
            return markdown
        markdown = claims.resolve_page(markdown, demos.source, demos.src_path, self.figures(demos.readouts))
        markdown = self._replace_blocks(markdown, demos)
        m, strings = self.measurements, self.strings
        # Titles are built on first use: a page without figure references never triggers the sweep.
        titles = {"measured": lambda: measured_source(m.sweep()["machine"], m.simulator.model_name, strings),
                  "projected": lambda: strings["common.projected_note"]}
        return inline_figures.replace_figures(markdown, demos.source, demos.src_path, self.figures(demos.readouts),
                                              titles)

    def _replace_blocks(self, markdown: str, demos: PageDemos) -> str:
        if not demos.places:
            return markdown
        lines = markdown.split("\n")
        fences = demo_fences(markdown)
        if len(fences) != len(demos.places):
            raise PluginError(f"{demos.src_path}: found {len(fences)} demo blocks in the page but "
                              f"{len(demos.places)} in the file — another hook changed them")
        for index, fence in reversed(list(enumerate(fences))):
            lines[fence.start : fence.end + 1] = ["", render.slot(index), ""]  # the markup goes in after Markdown
        return "\n".join(lines)

    def printed_markdown(self, path: Path) -> str | None:
        """The page at `path` with each claim replaced by its phrasing that holds (a claim that does not hold
        counts as nothing: the page's own build reports it)."""
        demos = self.pages.get(shown_path(path, self.project_dir))
        if demos is None:
            return None
        return claims.printed_text(demos.source, self.figures(demos.readouts))

    def source_of(self, file: File) -> str | None:
        """The page's text as `prepare` read it, for MkDocs to build the page from (`on_page_read_source`). Read
        again, a file an author saved while the build ran could differ: `mkdocs serve` then showed the new text
        with its demo blocks as code, or without them, until the next build."""
        demos = self.pages.get(self.shown_path(file))
        return demos.source if demos is not None else None

    # -- on_page_content --------------------------------------------------------------------------
    def page_content(self, html: str, page: Page) -> str:
        demos = self.pages.get(self.shown_path(page.file))
        if not demos or not demos.places:
            return html
        return render.fill_slots(html, [place.html for place in demos.places], demos.src_path)

    def figures(self, page_readouts: dict[str, dict[str, Any]] | None = None) -> FigureResolver:
        """Figures for this language: the global measurements, and the page's demos' readouts if on a page."""
        return FigureResolver(self.lang, self.measurements, page_readouts)
