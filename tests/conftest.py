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
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from simulations import kernels

# The tests' processes, and the builds and servers they start, run the compiled kernels on one thread. Two
# workers, Chromium and the builds keep both cores busy, and a parallel kernel then waits for its other thread
# to get a time slice: a 32-token generation that takes 1.7 s took 15 s, burning the CPU the rest needed (with
# two busy loops beside it, measured interleaved). The kernels' split over threads is tested on its own, on two
# (tests/simulations/test_kernels.py). Set before anything imports numba; the measurements .ci/run makes
# before the tests (the shared site's timings) use every core.
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
kernels.configure()  # the runtime set-up, once, after NUMBA_NUM_THREADS (simulations.kernels)

REPO = Path(__file__).resolve().parent.parent
# Unit and browser tests build with the seeded tiny model: no download, fast. The real model is
# exercised by tests marked `real_model`.
TEST_MODEL = os.environ.get("PD_TEST_MODEL", "tiny")
# ... and the quick measurement plan: what the tests read is the same in both plans (every figure, the same
# prompt lengths and batch sizes), and one ledger measured serves every build of the run (the shared one,
# the special builds, `mkdocs serve`); the site plan's would take minutes more on a clean clone.
TEST_SWEEP = "quick"


@dataclass(frozen=True)
class SiteBuild:
    path: Path
    log: str


def build_site(out_dir: Path, *, model: str = TEST_MODEL, extra_env: dict[str, str] | None = None,
               config_file: Path | None = None) -> SiteBuild:
    """Run `mkdocs build --strict` into out_dir (the quick plan unless extra_env names another); fail the test
    with the build log if it fails."""
    env = {**os.environ, "PD_MODEL": model, "PD_SWEEP": TEST_SWEEP, "NO_MKDOCS_2_WARNING": "1", **(extra_env or {})}
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


# The real model's site (tests/site/test_real_model_site.py): minutes of simulation on a clean clone, so it is
# started in the background as soon as a run that selected its tests has collected them, and the two workers
# run the other tests meanwhile. Its sweep is the quick one (what its tests read is the same in both sizes:
# the answers, the token counts, every figure filled in). It takes no build lock: it measures the real model
# under the load of the tests in any case, and the tiny builds it would hold up read their timings from .cache/.
REAL_MODEL = "smollm2-135m"
REAL_SITE_FIXTURE = "real_site"
_real_site_process: subprocess.Popen | None = None


def _real_site_folder(config: pytest.Config) -> Path:
    return shared_dir(config._tmp_path_factory) / "real-site"  # pytest's own factory, as tmp_path_factory is


def start_real_site_build(config: pytest.Config) -> Path:
    """Start the real model's strict build into the run's shared folder unless a worker already has; returns it."""
    global _real_site_process
    folder = _real_site_folder(config)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if folder.exists():
            return folder
        folder.mkdir()
        env = {**os.environ, "PD_MODEL": REAL_MODEL, "PD_SWEEP": "quick", "NO_MKDOCS_2_WARNING": "1"}
        command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-d", str(folder / "site")]
        script = ("import subprocess, sys; log = open(sys.argv[1], 'w');"
                  " code = subprocess.call(sys.argv[3:], stdout=log, stderr=subprocess.STDOUT);"
                  " open(sys.argv[2], 'w').write(str(code))")
        _real_site_process = subprocess.Popen(
            [sys.executable, "-c", script, str(folder / "build.log"), str(folder / "exit-code"), *command],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, start_new_session=True)
    return folder


def wait_for_real_site(config: pytest.Config, timeout_s: float = 3000) -> SiteBuild:
    """The real model's site once its build (started by whichever worker collected first) is done."""
    folder = start_real_site_build(config)  # started already, unless this test was run on its own
    deadline = time.monotonic() + timeout_s
    while not (folder / "exit-code").exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the real model's site build did not finish in {timeout_s:.0f} s", pytrace=False)
        time.sleep(1)
    code = (folder / "exit-code").read_text(encoding="utf-8").strip()
    log = (folder / "build.log").read_text(encoding="utf-8")
    if code != "0":
        pytest.fail(f"mkdocs build with the real model failed (exit {code}):\n{log[-6000:]}", pytrace=False)
    return SiteBuild(folder / "site", log)


def pytest_collection_finish(session: pytest.Session) -> None:
    if not session.config.option.collectonly and \
            any(REAL_SITE_FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
        start_real_site_build(session.config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The worker that started the real model's build waits for it (the other worker may be reading it), unless
    the run was interrupted: then it stops it."""
    process = _real_site_process
    if process is None or process.poll() is not None:
        return
    if exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop or session.shouldfail:
        process.terminate()
    try:
        process.wait(timeout=3000)
    except subprocess.TimeoutExpired:
        process.kill()


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
    from harness.chromium import CHROMIUM, CHROMIUM_ARGS

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
FIRST_GROUPS = {"serve", "own-server", "own-server-strict"}  # minutes each; only one builds


def _weight(item: pytest.Item) -> int:
    if REAL_SITE_FIXTURE in getattr(item, "fixturenames", ()):
        return 9  # last: its build runs in the background from the start (start_real_site_build)
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


# Files that share a session-scoped fixture too costly to make twice, run on one worker as one unit of work:
# the serve tests share one `mkdocs serve` (tests/site/conftest.py).
SAME_WORKER = {"tests/site/test_serve_mistakes.py": "tests/site/test_serve_resilience.py"}


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: known only when it is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadscope`, with the files of SAME_WORKER in one scope (xdist's own groups, `--dist loadgroup`,
    cannot rename tests under pytest 9.2, and its controller sees only test ids, not their markers)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return SAME_WORKER.get(scope, scope)

    return Scheduling(config, log)


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
