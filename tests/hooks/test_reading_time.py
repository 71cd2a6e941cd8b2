"""The reading time counts what a reader gets: each claim's printed phrasing (the demo hook shares the printed
pages through MkDocs' config, never by one hook importing another) and only what is open by default."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import yaml

from hooks import chapter_hook
from hooks.chapters import (
    APPENDICES,
    GOING_FURTHER,
    PAGE_SLUGS,
    PRINTED_MARKDOWN,
    READING_PATH,
    article_reading_minutes,
    chapter_number,
    chapters_of,
    page_reading_minutes,
    readable_text,
)
from hooks.markdown_blocks import collapsible_marks, open_by_default

REPO = Path(__file__).resolve().parents[2]
LONG = " ".join(["word"] * 400)  # two minutes at 200 words a minute
CLAIM = f"{{% claim sweep.tps@128 > 1 %}}{LONG}{{% elif sweep.tps@128 <= 1 %}}short{{% endclaim %}}"
EXTRA = {"chapter_label": "Chapter {number:02d}", "going_further": "Going further", "reading_time": "{minutes} min read",
         "card_minutes": "{minutes} min"}


def fake_config(docs: Path, printed=None) -> dict:
    config = {"docs_dir": str(docs), "extra": EXTRA, "theme": {"language": "en"}}
    if printed is not None:
        config[PRINTED_MARKDOWN] = printed
    return SimpleNamespace(**config, get=config.get)


def fake_page(docs: Path, src_uri: str) -> SimpleNamespace:
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri, abs_src_path=str(docs / src_uri)))


def test_the_reading_path_is_the_original_articles_chapters_then_going_further_then_appendices():
    assert PAGE_SLUGS == ("index", "two-phases", "prefill", "decode", "ttft-tps", "bottleneck", "summary")
    assert [chapter_number(slug) for slug in READING_PATH] == [1, 2, 3, 4, 5, 6]
    assert GOING_FURTHER == ("batching", "weight-formats") and APPENDICES == ("projections", "about-numbers")
    assert all(chapter_number(slug) is None for slug in (*GOING_FURTHER, *APPENDICES, "index"))


def test_a_chapter_with_a_two_phrasing_claim_counts_the_printed_phrasing(tmp_path: Path):
    """The first phrasing is 400 words; the build prints the second: the page and the landing page count 'short'."""
    docs = tmp_path / "en"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n<!-- pd:reading-time -->\n\n<!-- pd:chapter-list -->\n", encoding="utf-8")
    (docs / "two-phases.md").write_text(f"# Two phases\n\n{CLAIM}\n", encoding="utf-8")

    def printed(path: Path) -> str | None:  # what the demo hook leaves in config: the phrasing that holds
        return "# Two phases\n\nshort\n" if path.name == "two-phases.md" else None

    config = fake_config(tmp_path, printed)
    chapter = chapter_hook.on_page_markdown((docs / "two-phases.md").read_text(encoding="utf-8"),
                                            page=fake_page(tmp_path, "en/two-phases.md"), config=config, files=None)
    assert "1 min read\n{ .pd-reading-time }" in chapter and "Chapter 01\n{ .pd-kicker }" in chapter
    home = chapter_hook.on_page_markdown((docs / "index.md").read_text(encoding="utf-8"),
                                         page=fake_page(tmp_path, "en/index.md"), config=config, files=None)
    assert "1 min read" in home and "[Chapter 01 · Two phases](two-phases.md)" in home
    # without the printed text, the first phrasing would be counted: 2 minutes
    assert article_reading_minutes(docs) == 3 and article_reading_minutes(docs, printed) == 1


def test_the_demo_hook_shares_the_printed_pages_through_config():
    source = (REPO / "hooks" / "demo_hook.py").read_text(encoding="utf-8")
    assert "config[PRINTED_MARKDOWN]" in source


def test_no_hook_imports_another_hook():
    """MkDocs loads each hook under its own module name: an import of one from another is a second copy of it,
    whose state MkDocs never sets (the reading time once counted unprinted phrasings so)."""
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    hooks = {Path(path).stem for path in config["hooks"]}
    for path in config["hooks"]:
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module.split(".")[-1], *(f"{node.module}.{a.name}".split(".")[-1] for a in node.names)}
            elif isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[-1] for alias in node.names}
        assert not imported & (hooks - {Path(path).stem}), f"{path} imports another hook"


def test_closed_details_count_their_title_only_open_ones_and_admonitions_count_whole():
    page = "\n".join([
        "Before.", "", '??? note "How it is measured"', "    hidden words here", "", "    more hidden", "",
        '???+ tip "Open one"', "    shown words", "", '!!! note "Always"', "    also shown", "", "After.",
        "<details><summary>Raw title</summary>raw hidden</details>", "<details open><summary>S</summary>raw shown</details>",
    ])
    text = open_by_default(page)
    for shown in ("Before.", "How it is measured", "Open one", "shown words", "Always", "also shown", "After.",
                  "Raw title", "raw shown"):
        assert shown in text
    for hidden in ("hidden words", "more hidden", "raw hidden", "???", "!!!"):
        assert hidden not in text


def test_a_closed_block_inside_an_open_one_is_not_counted_and_the_text_after_it_is():
    page = '???+ note "Outer"\n    outer text\n\n    ??? note "Inner"\n        inner text\n\n    outer again\n\nAfter.'
    text = open_by_default(page)
    assert "outer text" in text and "outer again" in text and "After." in text and "inner text" not in text


def test_a_closed_details_block_is_left_out_of_the_reading_time():
    body = "\n".join("    " + " ".join(["word"] * 20) for _ in range(40))  # 800 words: 4 minutes
    assert page_reading_minutes(f'# T\n\n??? note "Derivation"\n{body}\n\nEnd.\n') == 1
    assert page_reading_minutes(f'# T\n\n???+ note "Derivation"\n{body}\n\nEnd.\n') == 5


def test_link_targets_tags_and_attribute_lists_are_not_words():
    text = readable_text('[Two phases](two-phases.md) <span class="x">tag</span>\n{ .pd-subtitle }\n')
    assert text.replace("[", "").replace("]", "").split() == ["Two", "phases", "tag"]


def test_the_landing_page_lists_going_further_chapters_after_the_path_each_with_its_time(tmp_path: Path):
    docs = tmp_path / "en"
    docs.mkdir()
    for slug in ("index", *READING_PATH, "batching"):  # weight-formats not written yet: not listed
        (docs / f"{slug}.md").write_text(f"# {slug.title()}\n\n{LONG}\n", encoding="utf-8")
    chapters = chapters_of(docs)
    assert [c.slug for c in chapters] == [*READING_PATH, "batching"]
    assert chapters[-1].going_further and chapters[-1].minutes == 3
    home = chapter_hook.on_page_markdown("# Home\n\n<!-- pd:chapter-list -->\n", page=fake_page(tmp_path, "en/index.md"),
                                         config=fake_config(tmp_path), files=None)
    assert "6. [Chapter 06 · Summary](summary.md)" in home
    assert '- [Going further · Batching](batching.md) <span class="pd-chapter-list__time">3 min</span>' in home
    batching = chapter_hook.on_page_markdown("# Batching\n\nText.\n", page=fake_page(tmp_path, "en/batching.md"),
                                             config=fake_config(tmp_path), files=None)
    assert batching.startswith("Going further\n{ .pd-kicker }\n\n# Batching\n\n1 min read")


def test_parity_sees_the_same_collapsible_blocks_as_the_reading_time():
    page = '```md\n??? note "shown as code"\n```\n\n??? note "A"\n    body\n\n???+ tip "B"\n    body\n\n!!! note\n    x\n'
    assert collapsible_marks(page) == ["???", "???+"]
