"""Shared fixtures: one strict build of the whole site per test session."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Unit and browser tests build with the seeded tiny model: no download, fast. The real model is
# exercised by tests marked `real_model`.
TEST_MODEL = os.environ.get("PD_TEST_MODEL", "tiny")


@dataclass(frozen=True)
class SiteBuild:
    path: Path
    log: str


def build_site(out_dir: Path, *, model: str = TEST_MODEL, extra_env: dict[str, str] | None = None,
               config_file: Path | None = None) -> SiteBuild:
    """Run `mkdocs build --strict` into out_dir; fail the test with the build log if it fails."""
    env = {**os.environ, "PD_MODEL": model, "NO_MKDOCS_2_WARNING": "1", **(extra_env or {})}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-d", str(out_dir)]
    if config_file is not None:
        command += ["-f", str(config_file)]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=3000)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"mkdocs build failed (exit {result.returncode}):\n{log[-6000:]}")
    return SiteBuild(out_dir, log)


@pytest.fixture(scope="session")
def site_build(tmp_path_factory: pytest.TempPathFactory) -> SiteBuild:
    return build_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="session")
def built_site(site_build: SiteBuild) -> Path:
    return site_build.path


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium through Playwright, one per test session: every test that drives a page (the browser
    tests and the serve tests) shares it, since Playwright's sync API cannot run twice in one process."""
    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `apt-get install -y chromium` (see README)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()
