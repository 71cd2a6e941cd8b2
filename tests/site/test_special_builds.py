"""Builds are reproducible, and a damaged simulation cache is reported and recomputed, never served.

A temporary project (docs and code linked from the repo, a simulation cache of its own) is built with the
tiny model from an empty cache, then again from the cache that build filled: the two are byte-identical.
Then two of its cache files are damaged and the build reports and recomputes them.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SiteBuild, build_site

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.build, pytest.mark.xdist_group("builds")]
# Files that must differ between two builds, and why:
#   sitemap.xml      <lastmod> is the build date (MkDocs writes it on every build)
#   sitemap.xml.gz   the same, and gzip's header stores the compression time
EXCLUDED = {"sitemap.xml", "sitemap.xml.gz"}


def make_project(root: Path, *, own_cache: bool = False) -> Path:
    """A project at root: docs and code linked from the repo, the repo's simulation cache shared, or an empty
    one of its own (never a copy: other builds of this run may be writing the repo's cache at that moment).

    Returns its mkdocs.yml, with the headers hook added if mkdocs.yml does not list it yet.
    """
    root.mkdir(parents=True)
    for folder in ("docs", "hooks", "overrides", "simulations", ".ci"):
        if (REPO / folder).exists():
            (root / folder).symlink_to(REPO / folder, target_is_directory=True)
    (REPO / ".cache").mkdir(exist_ok=True)
    if own_cache:
        (root / ".cache").mkdir()
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


@dataclass(frozen=True)
class ColdAndWarm:
    config: Path
    cold: SiteBuild
    warm: SiteBuild


@pytest.fixture(scope="module")
def cold_and_warm(tmp_path_factory: pytest.TempPathFactory) -> ColdAndWarm:
    """A project with an empty cache of its own, built twice: from the cold cache, then from the warm one."""
    root = tmp_path_factory.mktemp("builds")
    config = make_project(root / "project", own_cache=True)
    # The machine's timings (sweep, roofline, batching, weight formats) as measured once, alone, before the tests (.ci/run):
    # measured again here, under the tests' load, they could fail a checked claim. Every trace is simulated.
    (root / "project" / ".cache" / "traces").mkdir(parents=True)
    for measured in filter(_is_timing, (REPO / ".cache" / "traces").glob("*.json")):
        shutil.copyfile(measured, root / "project" / ".cache" / "traces" / measured.name)
    cold = build_site(root / "cold", config_file=config, extra_env={"PD_SWEEP": "quick"})
    warm = build_site(root / "warm", config_file=config, extra_env={"PD_SWEEP": "quick"})
    return ColdAndWarm(config, cold, warm)


def test_a_build_from_a_cold_cache_matches_one_from_the_warm_cache(cold_and_warm: ColdAndWarm) -> None:
    """What a build stores in the cache is exactly what it used: the round trip changes nothing, and two
    builds of the same sources are byte-identical."""
    cold, warm = cold_and_warm.cold, cold_and_warm.warm
    assert "Simulating" in cold.log, "an emptied cache did not simulate"
    assert "Simulating" not in warm.log, "a warm cache still simulated"
    assert list(cold.path.rglob("*.html")) and list(cold.path.rglob("assets/traces/*.json"))
    assert differing_files(cold.path, warm.path) == []


TIMINGS = ("the ledger of measurements",)  # the label of the cached measurement of the machine's speed


def _is_timing(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return json.loads(handle.readline()).get("label", "").startswith(TIMINGS)
    except (OSError, ValueError):
        return False


def _cache_files(project: Path) -> list[Path]:
    """The cached traces and demos (not the timings: recomputed, they would be measured under load)."""
    return sorted(path for path in (project / ".cache" / "traces").glob("*.json") if not _is_timing(path))


def _build_without_strict(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    # Not --strict: the corrupt-cache warning is the point here, and strict mode makes warnings fatal.
    env = {**os.environ, "PD_MODEL": "tiny", "PD_SWEEP": "quick", "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--clean", "-f", str(config), "-d", str(out)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=3000)


def test_a_corrupt_or_truncated_cache_file_is_reported_and_recomputed(cold_and_warm: ColdAndWarm,
                                                                     tmp_path: Path) -> None:
    config = cold_and_warm.config
    project = config.parent
    # Every cached file is one these builds read (the cache started without them), not a leftover of older code.
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
