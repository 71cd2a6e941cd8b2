"""Builds are reproducible, and a damaged simulation cache is reported and recomputed, never served.

Each test builds a temporary project (docs and code linked from the repo) with the tiny model.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import build_site

REPO = Path(__file__).resolve().parents[2]
# Files that must differ between two builds, and why:
#   sitemap.xml      <lastmod> is the build date (MkDocs writes it on every build)
#   sitemap.xml.gz   the same, and gzip's header stores the compression time
EXCLUDED = {"sitemap.xml", "sitemap.xml.gz"}


def make_project(root: Path, *, own_cache: bool = False) -> Path:
    """A project at root: docs and code linked from the repo, the simulation cache shared or copied.

    Returns its mkdocs.yml, with the headers hook added if mkdocs.yml does not list it yet.
    """
    root.mkdir(parents=True)
    for folder in ("docs", "hooks", "overrides", "simulations", ".ci"):
        if (REPO / folder).exists():
            (root / folder).symlink_to(REPO / folder, target_is_directory=True)
    (REPO / ".cache").mkdir(exist_ok=True)
    if own_cache:
        shutil.copytree(REPO / ".cache", root / ".cache")
    else:
        (root / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    if "hooks/headers_hook.py" not in text:
        text = text.replace("  - hooks/demo_hook.py\n", "  - hooks/demo_hook.py\n  - hooks/headers_hook.py\n")
    (root / "mkdocs.yml").write_text(text, encoding="utf-8")
    return root / "mkdocs.yml"


def differing_files(first: Path, second: Path) -> list[str]:
    """Relative paths whose bytes differ, or that exist in only one of the two trees."""
    names_first = {p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file()}
    names_second = {p.relative_to(second).as_posix() for p in second.rglob("*") if p.is_file()}
    different = sorted(names_first ^ names_second)
    for name in sorted(names_first & names_second):
        if Path(name).name not in EXCLUDED and not filecmp.cmp(first / name, second / name, shallow=False):
            different.append(name)
    return different


def test_two_builds_from_the_same_cache_are_byte_identical(tmp_path: Path) -> None:
    config = make_project(tmp_path / "project")
    build_site(tmp_path / "warm-up", config_file=config, extra_env={"PD_SWEEP": "quick"})  # fills the cache
    first = build_site(tmp_path / "first", config_file=config, extra_env={"PD_SWEEP": "quick"}).path
    second = build_site(tmp_path / "second", config_file=config, extra_env={"PD_SWEEP": "quick"}).path
    assert list(first.rglob("*.html")) and list(first.rglob("assets/traces/*.json"))
    assert differing_files(first, second) == []


def test_a_build_from_a_cold_cache_matches_one_from_the_warm_cache(tmp_path: Path) -> None:
    """What a build stores in the cache is exactly what it used: the round trip changes nothing."""
    config = make_project(tmp_path / "project", own_cache=True)
    shutil.rmtree(tmp_path / "project" / ".cache" / "traces", ignore_errors=True)
    cold = build_site(tmp_path / "cold", config_file=config, extra_env={"PD_SWEEP": "quick"})
    assert "Simulating" in cold.log, "an emptied cache did not simulate"
    warm = build_site(tmp_path / "warm", config_file=config, extra_env={"PD_SWEEP": "quick"})
    assert "Simulating" not in warm.log, "a warm cache still simulated"
    assert differing_files(cold.path, warm.path) == []


def _cache_files(project: Path) -> list[Path]:
    return sorted((project / ".cache" / "traces").glob("*.json"))


def _build_without_strict(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    # Not --strict: the corrupt-cache warning is the point here, and strict mode makes warnings fatal.
    env = {**os.environ, "PD_MODEL": "tiny", "PD_SWEEP": "quick", "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--clean", "-f", str(config), "-d", str(out)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=3000)


def test_a_corrupt_or_truncated_cache_file_is_reported_and_recomputed(tmp_path: Path) -> None:
    config = make_project(tmp_path / "project", own_cache=True)
    project = config.parent
    # Start empty, so every cached file is one this build reads (not a leftover of older code).
    shutil.rmtree(project / ".cache" / "traces", ignore_errors=True)
    build_site(tmp_path / "fill", config_file=config, extra_env={"PD_SWEEP": "quick"})
    files = _cache_files(project)
    assert len(files) >= 2, "expected the build to cache its simulations under .cache/traces/"
    truncated, garbled = files[0], files[-1]
    truncated.write_bytes(truncated.read_bytes()[: len(truncated.read_bytes()) // 2])
    data = bytearray(garbled.read_bytes())
    data[-20:-10] = b"0123456789"  # same length, different payload: only a checksum notices
    garbled.write_bytes(bytes(data))

    result = _build_without_strict(config, tmp_path / "site")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    for damaged in (truncated, garbled):
        assert damaged.name in log, f"no warning names {damaged.name}:\n{log[-4000:]}"
    assert "WARNING" in log
    # Recomputed and stored again: both files are whole and the next build is clean and silent.
    again = build_site(tmp_path / "again", config_file=config, extra_env={"PD_SWEEP": "quick"})
    assert "WARNING" not in again.log and "Simulating" not in again.log
    for trace in (tmp_path / "site" / "assets" / "traces").glob("*.json"):
        json.loads(trace.read_text(encoding="utf-8"))  # everything served parses


@pytest.mark.real_model
def test_the_recorded_answer_is_the_same_on_every_run() -> None:
    from simulations.loader import load_model
    from simulations.trace import record

    model = load_model(None)
    prompt = "Explain quantum computing in three sentences."
    answers = {record(model, prompt, max_new_tokens=24)["answer"] for _ in range(2)}
    assert len(answers) == 1, answers
