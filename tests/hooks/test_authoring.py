"""An author's mistake: a build stops on it; under `mkdocs serve` it becomes a marked error box at its
place, whose text reaches the page literally, and the terminal prints the same message."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
import yaml

from hooks import authoring
from hooks.authoring import AuthoringMistake, mistake
from hooks.demos.blocks import parse_blocks
from hooks.demos.strings import load_strings, read_strings, readable_strings

REPO = Path(__file__).resolve().parents[2]
# Everything Markdown, the project's extensions or the figure syntax could act on, and markup.
TRICKY = "`kind:` *a* _b_ **c** ==d== ++ctrl++ :smile: [e](http://x) {{ sweep.ttft_ms@512 }} <script>alert(1)</script> &amp;"


@pytest.fixture(autouse=True)
def shown_in_page() -> Iterator[None]:
    """Each test runs as `mkdocs serve` would; the build's default comes back afterwards."""
    authoring.configure(show=True)
    yield
    authoring.configure(show=False)


class _Text(HTMLParser):
    """The text of every element with a given class, as a browser would show it."""

    def __init__(self, css_class: str) -> None:
        super().__init__(convert_charrefs=True)
        self.css_class, self.depth, self.found = css_class, 0, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += 1
        elif self.css_class in (dict(attrs).get("class") or "").split():
            self.depth = 1
            self.found.append("")

    def handle_endtag(self, tag: str) -> None:
        self.depth = max(0, self.depth - 1)

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.found[-1] += data


def texts(html: str, css_class: str) -> list[str]:
    parser = _Text(css_class)
    parser.feed(html)
    return parser.found


def project_markdown(text: str) -> str:
    """`text` through Markdown with the extensions of mkdocs.yml that act on inline text."""
    return markdown.markdown(text, extensions=["abbr", "attr_list", "md_in_html", "pymdownx.mark", "pymdownx.keys",
                                               "pymdownx.emoji", "pymdownx.inlinehilite"])


def test_a_build_stops_on_a_mistake_naming_the_file_the_line_and_what_is_allowed() -> None:
    authoring.configure(show=False)
    with pytest.raises(AuthoringMistake) as caught:
        mistake("docs/zh/x.md", 7, "unknown demo kind 'teleport' — allowed: conversation, prefill")
    assert str(caught.value) == "docs/zh/x.md:7: unknown demo kind 'teleport' — allowed: conversation, prefill"


def test_under_serve_the_terminal_prints_the_message_and_the_page_gets_a_marked_box(caplog) -> None:
    with caplog.at_level(logging.ERROR):
        box = mistake("docs/zh/x.md", 7, "unknown demo kind 'teleport' — allowed: conversation, prefill")
    printed = "docs/zh/x.md:7: unknown demo kind 'teleport' — allowed: conversation, prefill"
    assert [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR] == [printed]
    assert texts(box, "pd-authoring-error__message") == [printed]
    assert 'role="alert"' in box and 'data-pd-path="docs/zh/x.md"' in box and 'data-pd-line="7"' in box
    assert "\n" not in box  # one line: it never splits the paragraph or raw-HTML block it lands in


def test_a_mistake_without_a_line_names_the_file() -> None:
    box = mistake("docs/en/demo-strings.yml", None, "missing demo strings file")
    assert texts(box, "pd-authoring-error__message") == ["docs/en/demo-strings.yml: missing demo strings file"]


@pytest.mark.parametrize("where", ["block", "inline"])
def test_the_box_text_reaches_the_page_literally_wherever_it_lands(where: str) -> None:
    box = mistake("docs/zh/x.md", 3, TRICKY)
    page = project_markdown(f"Before.\n\n{box}\n\nAfter." if where == "block" else f"Before {box} after.")
    assert texts(page, "pd-authoring-error__message") == [f"docs/zh/x.md:3: {TRICKY}"]
    assert "<script" not in page and "<em>" not in page and "<a " not in page and "<mark>" not in page
    # Phrasing content inside one paragraph: valid HTML where a sentence continues around it.
    assert re.search(r"<p>[^<]*<span class=\"pd-authoring-error\".*</span>[^<]*</p>", page, re.S)
    assert not re.search(r"<(div|p|pre)[ >]", page.split('class="pd-authoring-error"', 1)[1].split("</p>")[0])


def test_a_bad_demo_block_is_a_mistake_with_its_own_file_and_line() -> None:
    with pytest.raises(AuthoringMistake) as caught:
        parse_blocks("# T\n\n```demo\nkind: teleport\n```\n", "docs/zh/x.md")
    assert (caught.value.path, caught.value.line) == ("docs/zh/x.md", 4)


def write_strings(root: Path, lang: str, text: str) -> Path:
    (root / lang).mkdir(parents=True, exist_ok=True)
    path = root / lang / "demo-strings.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_missing_label_names_the_file_and_the_line_of_its_section(tmp_path: Path) -> None:
    write_strings(tmp_path, "zh", "common:\n  play: 播放\n  pause: 暂停\ndecode:\n  title: 解码\n")
    write_strings(tmp_path, "en", "# labels\ncommon:\n  play: Play\ndecode:\n  title: Decode\n")
    with pytest.raises(AuthoringMistake) as caught:
        load_strings(tmp_path, "en", "zh", tmp_path)
    assert str(caught.value).startswith("en/demo-strings.yml:2: language 'en' is missing demo string(s) common.pause")


def test_malformed_strings_name_the_line_of_the_problem(tmp_path: Path) -> None:
    path = write_strings(tmp_path, "en", "common:\n  play: Play\n  pause: [Pause\ndecode:\n  title: x\n")
    with pytest.raises(AuthoringMistake) as caught:
        read_strings(path, "en", "docs/en/demo-strings.yml")
    assert caught.value.path == "docs/en/demo-strings.yml" and 3 <= caught.value.line <= 5
    assert "malformed YAML" in str(caught.value) and "allowed:" in str(caught.value)


def test_an_unknown_placeholder_names_the_line_of_its_label(tmp_path: Path) -> None:
    write_strings(tmp_path, "zh", "common:\n  play: 播放\n  measured_on: 实测于 {machine}\n")
    strings = load_strings(tmp_path, "zh", "zh", tmp_path)
    with pytest.raises(AuthoringMistake) as caught:
        strings.format("common.measured_on", cpu="x")
    assert caught.value.line == 3


def test_while_a_translation_has_a_mistake_its_demos_show_the_default_languages_labels(tmp_path: Path) -> None:
    write_strings(tmp_path, "zh", "common:\n  play: 播放\n  pause: 暂停\n")
    write_strings(tmp_path, "en", "common:\n  play: Play\n")
    shown = readable_strings(tmp_path, "en", "zh", tmp_path)
    assert shown.values == {"common.play": "Play", "common.pause": "暂停"} and shown.lang == "en"
    write_strings(tmp_path, "en", "common: [broken\n")
    assert readable_strings(tmp_path, "en", "zh", tmp_path).values == {"common.play": "播放", "common.pause": "暂停"}
    write_strings(tmp_path, "zh", "common: [broken\n")
    assert readable_strings(tmp_path, "en", "zh", tmp_path) is None


def test_the_repository_strings_know_the_line_of_every_label() -> None:
    strings = load_strings(REPO / "docs", "en", "zh", REPO)
    text = (REPO / "docs/en/demo-strings.yml").read_text(encoding="utf-8").split("\n")
    assert set(strings.values) <= set(strings.lines)
    assert text[strings.lines["common.play"] - 1].strip().startswith("play:")
    assert yaml.safe_load(text[strings.lines["common"] - 1]) == {"common": None}
