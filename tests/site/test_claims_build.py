"""A strict build checks the chapters' claims against its own measurements: a claim that holds is printed
as its phrasing, one that no longer holds stops the build naming the file, the line, the figures and values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.mkdocs_serve import make_project_copy

pytestmark = pytest.mark.build

HOLDS_ZH = "{% claim sweep.length_growth == 32 %}提问长度增长了 {{ sweep.length_growth }}{% endclaim %}"
FAILS_EN = "TPS {% claim sweep.tps_drop_pct > 99% and machine.ridge > 0 %}collapses entirely{% endclaim %}."


def append(path: Path, text: str) -> int:
    """Append a paragraph to a chapter; returns its 1-based line."""
    original = path.read_text(encoding="utf-8").rstrip("\n")
    path.write_text(f"{original}\n\n{text}\n", encoding="utf-8")
    return original.count("\n") + 3


def test_a_strict_build_prints_claims_that_hold_and_fails_naming_one_that_does_not(tmp_path: Path) -> None:
    config = make_project_copy(tmp_path / "project")
    docs = config.parent / "docs"
    append(docs / "zh/ttft-tps.md", HOLDS_ZH)
    strings = docs / "zh/demo-strings.yml"
    note = "推算值：由公开的硬件规格按 roofline 模型估算，并非实测"
    strings.write_text(strings.read_text(encoding="utf-8").replace(
        f"  projected_note: {note}", f'  projected_note: "{{% claim machine.ridge > 0 %}}{note}{{% endclaim %}}"', 1),
        encoding="utf-8")
    assert "{% claim machine.ridge" in strings.read_text(encoding="utf-8")
    failing_line = append(docs / "en/ttft-tps.md", FAILS_EN)
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=config.parent, timeout=1800,
        env={**os.environ, "PD_MODEL": "tiny", "PD_SWEEP": "quick", "NO_MKDOCS_2_WARNING": "1"})
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert (f"docs/en/ttft-tps.md:{failing_line}: claim “collapses entirely”: none of its conditions holds"
            in output), output[-3000:]
    assert "`sweep.tps_drop_pct > 99% and machine.ridge > 0` is false with sweep.tps_drop_pct = " in output
    assert "machine.ridge = " in output and "FLOP/byte)" in output
    assert "Traceback" not in output
    # Chinese is built (and written) before English: its claims were printed, the markup gone.
    zh_page = (tmp_path / "out/ttft-tps/index.html").read_text(encoding="utf-8")
    assert "提问长度增长了 <span class=\"pd-figure\"" in zh_page and ">32 倍</span>" in zh_page
    assert f'title="{note}"' in zh_page  # the strings file's claim, resolved
    assert "{%" not in zh_page
