"""Shared fixtures and the suite's tiers.

- One strict build of the whole site per test session (`site_build`, `built_site`), shared by every xdist
  worker: the one .ci/run made before the tests ($PD_TEST_SITE), or else the first worker to ask builds it under
  a file lock and the others read it. Builds inside the tests run one at a time (`build_site`).
- One Chromium per worker (`browser`); page tours in tests/browser/conftest.py.
- Markers by what a test uses, so a new test file needs none of its own: a test that uses the `browser`
  fixture is `browser`; one that uses the shared build is `build`; `browser`, `build` and `real_model` tests
  are all `slow`. The unit tier is `pytest -m "not browser and not slow"`.
- Under xdist (`-n 2 --dist loadscope`, as .ci/run runs it), each test file runs on one worker, so a module's
  expensive fixture (a special build, a server) is made once; each page is toured once per view, by whichever
  worker asks first (tests/browser/conftest.py); tests are ordered longest first. (`--dist loadgroup` would
  place them by their `xdist_group` names, but pytest-xdist 3.8 cannot rename tests under pytest 9.2, so the
  names only order them here.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

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
    # One build at a time across xdist workers: a build that has to measure (a cold cache) does so without
    # another build loading the machine (a figure measured under load can fail a checked claim).
    (REPO / ".cache").mkdir(exist_ok=True)
    with FileLock(str(REPO / ".cache" / "tests-build.lock")):
        result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=3000)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"mkdocs build failed (exit {result.returncode}):\n{log[-6000:]}")
    return SiteBuild(out_dir, log)


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this run sees (the workers' temporary folders share a parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def site_build(tmp_path_factory: pytest.TempPathFactory) -> SiteBuild:
    prebuilt = os.environ.get("PD_TEST_SITE")  # built strict by .ci/run before the tests, its log beside it
    if prebuilt and (Path(prebuilt) / "index.html").is_file():
        return SiteBuild(Path(prebuilt), (Path(prebuilt).parent / "build.log").read_text(encoding="utf-8"))
    shared = shared_dir(tmp_path_factory)
    record = shared / "site-build.json"
    with FileLock(str(shared / "site-build.lock")):
        if not record.exists():
            try:
                build = build_site(shared / "site")
                record.write_text(json.dumps({"ok": True, "log": build.log}), encoding="utf-8")
            except pytest.fail.Exception as failure:  # the other workers report the same failure, not build again
                record.write_text(json.dumps({"ok": False, "log": str(failure)}), encoding="utf-8")
                raise
    found = json.loads(record.read_text(encoding="utf-8"))
    if not found["ok"]:
        pytest.fail(found["log"], pytrace=False)
    return SiteBuild(shared / "site", found["log"])


@pytest.fixture(scope="session")
def built_site(site_build: SiteBuild) -> Path:
    return site_build.path


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium through Playwright, one per test session (per xdist worker): every test that drives a
    page (the browser tests and the serve tests) shares it, since Playwright's sync API cannot run twice in one
    process."""
    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `apt-get install -y chromium` (see README)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


# The order tests are handed out in (xdist gives each worker the next group as it finishes one): the longest
# first, so no worker is left with a long test at the end while the other idles; and the builds that wait for
# one another (`build_site` runs one at a time) apart, so that one worker tours pages while the other builds.
FIRST_GROUPS = {"real-model-site", "serve", "own-server", "own-server-strict"}  # minutes each; only one builds


def _weight(item: pytest.Item) -> int:
    marker = item.get_closest_marker("xdist_group")
    group = str(marker.args[0]) if marker is not None else None
    if group in FIRST_GROUPS:
        return 0
    if "tour" in getattr(item, "fixturenames", ()):
        return 1  # the page tours
    if item.get_closest_marker("build") and "site_build" not in getattr(item, "fixturenames", ()):
        return 2  # a special build: hostile input, cold and warm caches, claims, broken sources
    if item.get_closest_marker("browser"):
        return 3
    if item.get_closest_marker("slow"):
        return 4
    return 5


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the xdist_group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if "browser" in uses:
            item.add_marker(pytest.mark.browser)
        if "site_build" in uses:
            item.add_marker(pytest.mark.build)
        if any(item.get_closest_marker(name) for name in ("browser", "build", "real_model")):
            item.add_marker(pytest.mark.slow)
    items.sort(key=_weight)  # stable: within a weight, the files' own order
