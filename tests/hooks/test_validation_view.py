"""The appendix's generated tables: labels from demo-strings.yml reach the page escaped, numbers come from
simulations/projections.py, and every marker is replaced by one raw-HTML block."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hooks import validation_hook
from hooks.demos.render import environment
from hooks.demos.strings import Strings
from hooks.validation_view import PARTS, summary_context, table_context
from simulations import projections as pj

from .conftest import REPO

HOSTILE = "</table><script>alert(1)</script>"


def hostile_strings(en: Strings) -> Strings:
    """Every `validation.*` label replaced by markup that must stay text (placeholders kept)."""
    values = {key: (value if "{" in value else HOSTILE) if key.startswith("validation.") else value
              for key, value in en.values.items()}
    return Strings("en", "docs/en/demo-strings.yml", values)


@pytest.mark.parametrize("marker", list(PARTS))
def test_labels_from_the_strings_file_reach_the_page_escaped(en, marker):
    template = environment(str(REPO / "overrides" / "pd")).get_template("validation.html")
    html = template.render(**PARTS[marker](hostile_strings(en), "en"))
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_table_shows_every_published_row_and_the_summary_every_class_and_phase(en):
    table = table_context(en, "en")
    assert len(table["rows"]) == len(pj.validate())
    assert table["rows"][0]["device"].startswith("NVIDIA")  # datacenter GPUs first, as in the summary
    summary = summary_context(en, "en")
    npu = [row for row in summary["rows"] if row["class"] == en["validation.class_npu"]]
    assert [row["cells"] for row in npu] == [[], []] and npu[0]["empty"] == en["validation.no_rows"]


class Theme(dict):
    """MkDocs' theme: a mapping (language) with attributes (custom_dir)."""

    custom_dir = str(REPO / "overrides")


def test_the_hook_replaces_each_marker_and_leaves_other_pages_alone():
    config = SimpleNamespace(config_file_path=str(REPO / "mkdocs.yml"), docs_dir=str(REPO / "docs"),
                             theme=Theme(language="en"), plugins={})
    untouched = "# A chapter\n\nNo marker here.\n"
    assert validation_hook.on_page_markdown(untouched, page=None, config=config, files=None) == untouched
    page = "# Appendix\n\n<!-- pd:validation-summary -->\n\ntext\n"
    out = validation_hook.on_page_markdown(page, page=None, config=config, files=None)
    assert "<!-- pd:" not in out and '<div class="pd-validation pd-validation--summary">' in out
    block = out.split("\n\n")[2]
    assert block.startswith("<div") and block.endswith("</div>")  # one raw-HTML block, no blank line inside
