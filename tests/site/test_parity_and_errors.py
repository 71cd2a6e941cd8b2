"""Translators' safety nets: the parity check and the hooks' error messages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hooks.parity import page_shape, parity_problems
from tests.conftest import TEST_SWEEP

REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_repository_docs_are_in_parity():
    assert parity_problems(REPO / "docs") == []


def test_page_shape_counts_headings_and_demo_kinds_but_not_code():
    markdown = "# Title\n\n## A\n\n```demo\nkind: prefill\nprompt: x\n```\n\n```python\n# not a heading\n```\n## B\n"
    shape = page_shape(markdown)
    assert shape.demo_kinds == ("prefill",)
    assert shape.headings == 3


def test_parity_reports_missing_pages_demos_and_headings(tmp_path):
    _write(tmp_path / "zh/index.md", "# 首页\n")
    _write(tmp_path / "zh/decode.md", "# 解码\n## 一\n```demo\nkind: decode\nprompt: x\n```\n")
    _write(tmp_path / "zh/prefill.md", "# 预填充\n")
    _write(tmp_path / "en/index.md", "# Home\n")
    _write(tmp_path / "en/decode.md", "# Decode\n")
    problems = parity_problems(tmp_path)
    assert f"{tmp_path / 'en/prefill.md'}: missing (translate {tmp_path / 'zh/prefill.md'})" in problems
    assert any(p.startswith(f"{tmp_path / 'en/decode.md'}: demo blocks [] differ") for p in problems)
    assert any(p.startswith(f"{tmp_path / 'en/decode.md'}: 1 headings, but") for p in problems)


def test_parity_reports_a_claim_the_translation_lacks_or_changes_but_not_a_reordered_one(tmp_path):
    _write(tmp_path / "zh/ttft-tps.md", "# 指标\n{% claim a.x > 1 %}甲{% endclaim %}{% claim b.y < 2 %}乙"
                                      "{% elif b.y >= 2 %}丙{% endclaim %}{% claim c.z > 0 %}丁{% endclaim %}\n")
    # Reordered sentences keep their claims; one claim dropped, one condition changed.
    _write(tmp_path / "en/ttft-tps.md", "# Metrics\n{% claim b.y < 2 %}B{% elif  b.y >= 2 %}C{% endclaim %} "
                                      "{% claim a.x > 2 %}A{% endclaim %}\n")
    page, ref = tmp_path / "en/ttft-tps.md", tmp_path / "zh/ttft-tps.md"
    assert sorted(parity_problems(tmp_path)) == sorted([
        f"{page}: lacks the claim checking `a.x > 1` (as in {ref})",
        f"{page}: lacks the claim checking `c.z > 0` (as in {ref})",
        f"{page}: has a claim checking `a.x > 2` that {ref} does not have",
    ])


def test_parity_reports_a_translation_without_a_generated_table_marker(tmp_path):
    _write(tmp_path / "zh/projections.md", "# 推算\n\n<!-- pd:validation-summary -->\n\n<!-- pd:validation-table -->\n")
    _write(tmp_path / "en/projections.md", "# Projections\n\n<!-- pd:validation-table -->\n")
    problems = parity_problems(tmp_path)
    assert problems == [f"{tmp_path / 'en/projections.md'}: generated-content markers ['validation-table'] differ "
                        f"from {tmp_path / 'zh/projections.md'} ['validation-summary', 'validation-table']"]


def test_parity_reports_missing_demo_strings(tmp_path):
    _write(tmp_path / "zh/index.md", "# 首页\n")
    _write(tmp_path / "en/index.md", "# Home\n")
    _write(tmp_path / "zh/demo-strings.yml", "play: 播放\ndecode:\n  waiting: 等待生成…\n")
    _write(tmp_path / "en/demo-strings.yml", "play: Play\n")
    problems = parity_problems(tmp_path)
    assert problems == [f"{tmp_path / 'en/demo-strings.yml'}: missing key 'decode.waiting' (present in "
                        f"{tmp_path / 'zh/demo-strings.yml'})"]


def test_parity_command_exits_non_zero_and_names_the_file(tmp_path):
    _write(tmp_path / "zh/index.md", "# 首页\n")
    _write(tmp_path / "zh/summary.md", "# 总结\n")
    _write(tmp_path / "en/index.md", "# Home\n")
    result = subprocess.run([sys.executable, "-m", "hooks.parity", str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1
    assert "en/summary.md: missing" in result.stdout


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    """A copy of the repo's docs and mkdocs.yml that a test may break."""
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {tmp_path / 'docs'}")
    config = config.replace("custom_dir: overrides", f"custom_dir: {REPO / 'overrides'}")
    # Paths that mkdocs.yml gives relative to itself must point back into the repository.
    config = re.sub(r"^  - (hooks|simulations|overrides)(/|$)", lambda m: f"  - {REPO}/{m.group(1)}{m.group(2)}",
                    config, flags=re.M)
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    (REPO / ".cache").mkdir(exist_ok=True)
    (tmp_path / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)  # measured once, not again here
    return tmp_path


def _build(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project / "mkdocs.yml"), "-d", str(project / "out")],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PD_MODEL": "tiny", "PD_SWEEP": TEST_SWEEP}, timeout=1800,
    )


@pytest.mark.build
def test_a_broken_demo_block_stops_the_build_naming_file_line_and_allowed_kinds(docs_copy):
    page = docs_copy / "docs/en/decode.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("## "))
    lines[heading + 1:heading + 1] = ["", "```demo", "kind: teleport", "prompt: Hello", "```", ""]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = _build(docs_copy)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    kind_line = heading + 4  # 1-based line of "kind: teleport"
    assert f"en/decode.md:{kind_line}" in output, output[-2000:]
    assert "teleport" in output
    for kind in ("conversation", "prefill", "decode", "timeline", "roofline", "recap"):
        assert kind in output
    assert "Traceback" not in output


@pytest.mark.build
def test_a_missing_chapter_label_names_the_setting(docs_copy):
    config = docs_copy / "mkdocs.yml"
    text = config.read_text(encoding="utf-8").replace('chapter_label: "Chapter {number:02d}"', "chapter_labels: oops")
    config.write_text(text, encoding="utf-8")
    output = _build(docs_copy)
    assert output.returncode != 0
    assert "extra.chapter_label" in output.stdout + output.stderr


def test_parity_names_what_a_new_language_lacks_in_the_vocabulary(tmp_path: Path):
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copytree(tmp_path / "docs" / "en", tmp_path / "docs" / "fr")
    problems = parity_problems(tmp_path / "docs", "zh")
    assert any(re.search(r"vocabulary\.yml:\d+: 'negations' has no 'fr' entry", p) for p in problems), problems
