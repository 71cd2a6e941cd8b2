"""`mkdocs serve` survives a burst of rapid edits, invalid demo blocks among them, and ends on the last
valid state; a prose edit is served again quickly (timed and reported, never asserted).

The server runs against a temporary copy of docs/ (the repo's hooks, overrides and simulations are
linked in), so the test never touches the author's files.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.build, pytest.mark.xdist_group("serve")]  # one server for this file and the mistakes'
CHAPTER = "zh/two-phases.md"
CHAPTER_URL = "two-phases/"
# Invalid demo blocks of the kinds an author really types: unknown kind, broken YAML, missing prompt.
INVALID_BLOCKS = (
    "```demo\nkind: teleport\nprompt: hi\n```\n",
    "```demo\nkind: [conversation\nprompt: hi\n```\n",
    "```demo\nkind: conversation\n```\n",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_project_copy(root: Path, docs: Path = REPO / "docs") -> Path:
    """A project at root: docs/ and mkdocs.yml copied, the code folders linked. Returns its mkdocs.yml."""
    shutil.copytree(docs, root / "docs")
    for folder in ("hooks", "overrides", "simulations", "search"):  # search/: jieba's dictionary of the article's terms
        (root / folder).symlink_to(REPO / folder, target_is_directory=True)
    if (REPO / ".cache").is_dir():  # reuse the simulation cache: this test is about serving, not simulating
        (root / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)
    if (REPO / ".ci").is_dir():  # the chart library may come from .ci/node_modules
        (root / ".ci").symlink_to(REPO / ".ci", target_is_directory=True)
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root / "mkdocs.yml"


def fetch(url: str, timeout: float = 5.0) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return None


class ServedProject:
    """`mkdocs serve` of a project copy on a free 127.0.0.1 port; stopped by its own process group."""

    def __init__(self, root: Path, *, model: str = "tiny", extra_env: dict[str, str] | None = None,
                 docs: Path = REPO / "docs", extra_args: tuple[str, ...] = ()) -> None:
        self.root = root
        self.config = make_project_copy(root, docs)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = root / "serve.log"
        env = {**os.environ, "PD_MODEL": model, "NO_MKDOCS_2_WARNING": "1", "PYTHONUNBUFFERED": "1",
               **(extra_env or {})}
        # `mkdocs serve` as an author runs it in a terminal, where Ctrl-C (SIGINT, which `stop` sends) shuts it
        # down. A suite started in the background (`bash .ci/run &`, nohup, some CI runners) ignores SIGINT, and a
        # child inherits that: the server then ignored `stop` for its 15 s, the run's last 15 s, and was killed,
        # leaving its temporary site behind. So the server's Python takes SIGINT back first.
        command = [sys.executable, "-c", "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler);"
                   " runpy.run_module('mkdocs', run_name='__main__', alter_sys=True)",
                   "serve", "-f", str(self.config), "-a", f"127.0.0.1:{self.port}", *extra_args]
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(command, cwd=root, env=env, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def chapter(self, relative: str) -> Path:
        return self.root / "docs" / relative

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_for(self, path: str, predicate: Callable[[str], bool], timeout: float,
                 poll: float = 0.02) -> float | None:
        """Seconds until GET path satisfies predicate, or None on timeout or if the server died."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if not self.alive():
                return None
            body = fetch(self.url + path)
            if body is not None and predicate(body):
                return time.perf_counter() - start
            time.sleep(poll)
        return None

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.process.pid, signal.SIGINT)  # only the group this object started
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        self._log.close()


def prose_edit(original: str, marker: str) -> str:
    """The chapter with one more paragraph of prose (no demo block changes)."""
    return original.rstrip("\n") + f"\n\n{marker}\n"


def invalid_edit(original: str, marker: str, block: str) -> str:
    return prose_edit(original, marker) + "\n" + block


@contextlib.contextmanager
def serving(root: Path) -> Iterator[ServedProject]:
    """`mkdocs serve` of a project copy at root, once it serves the chapter with its demo; stopped after."""
    project = ServedProject(root, extra_env={"PD_SWEEP": "quick"})
    try:
        # The first build may have to simulate (cold cache): give it time.
        if project.wait_for(CHAPTER_URL, lambda body: "data-pd-demo" in body, timeout=900) is None:
            pytest.fail(f"mkdocs serve never served {CHAPTER_URL}:\n{project.log()[-4000:]}")
        yield project
    finally:
        project.stop()


def test_serve_survives_a_burst_of_edits_and_ends_on_the_last_valid_state(served: ServedProject) -> None:
    chapter = served.chapter(CHAPTER)
    original = chapter.read_text(encoding="utf-8")
    for number in range(1, 50):
        marker = f"pd-burst-edit-{number}"
        text = (invalid_edit(original, marker, INVALID_BLOCKS[number % len(INVALID_BLOCKS)])
                if number % 4 == 0 else prose_edit(original, marker))
        chapter.write_text(text, encoding="utf-8")
        time.sleep(0.03 if number % 10 else 0.6)  # mostly faster than a rebuild, sometimes a full one
    final_marker = "pd-burst-final-valid-edit"
    chapter.write_text(prose_edit(original, final_marker), encoding="utf-8")

    waited = served.wait_for(CHAPTER_URL, lambda body: final_marker in body, timeout=300)
    assert served.alive(), f"mkdocs serve died during the burst:\n{served.log()[-4000:]}"
    assert waited is not None, f"the last valid edit was never served:\n{served.log()[-4000:]}"
    body = fetch(served.url + CHAPTER_URL) or ""
    assert "data-pd-demo" in body, "the served page lost its demos"
    assert not re.search(r"pd-burst-edit-\d+", body), "an older edit is still visible"
    assert "teleport" not in body


def test_a_prose_edit_is_served_again_without_simulating(served: ServedProject, record_property) -> None:
    chapter = served.chapter(CHAPTER)
    original = chapter.read_text(encoding="utf-8")
    timings = []
    for number in range(3):
        marker = f"pd-timed-prose-edit-{number}"
        log_before = len(served.log())
        chapter.write_text(prose_edit(original, marker), encoding="utf-8")
        seconds = served.wait_for(CHAPTER_URL, lambda body, marker=marker: marker in body, timeout=120)
        assert seconds is not None, f"prose edit never served:\n{served.log()[-4000:]}"
        assert "Simulating" not in served.log()[log_before:], "a prose edit re-ran a simulation"
        timings.append(seconds)
        time.sleep(0.5)
    median = sorted(timings)[len(timings) // 2]
    record_property("serve_prose_edit_seconds_median", round(median, 3))
    print(f"\nmkdocs serve: save-to-served for a prose edit, median of {len(timings)}: {median:.2f} s")


@pytest.mark.xdist_group("own-server")
def test_deleting_the_cache_folder_while_serving_recovers(tmp_path: Path) -> None:
    project = ServedProject(tmp_path / "project", extra_env={"PD_SWEEP": "quick"})
    try:
        cache = project.root / ".cache"
        if cache.is_symlink():  # give this server a cache of its own to delete
            cache.unlink()
            shutil.copytree(REPO / ".cache", cache)
        assert project.wait_for(CHAPTER_URL, lambda body: "data-pd-demo" in body, timeout=900) is not None, \
            project.log()[-4000:]
        shutil.rmtree(cache, ignore_errors=True)
        chapter = project.chapter(CHAPTER)
        chapter.write_text(prose_edit(chapter.read_text(encoding="utf-8"), "pd-after-cache-delete"),
                           encoding="utf-8")
        assert project.wait_for(CHAPTER_URL, lambda body: "pd-after-cache-delete" in body and
                                "data-pd-demo" in body, timeout=900) is not None, project.log()[-4000:]
        assert project.alive()
    finally:
        project.stop()
