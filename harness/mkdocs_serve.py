"""`mkdocs serve` of a copy of the project, as an author runs it, and the edit an author makes to a chapter.

The copy (`make_project_copy`) has docs/ and mkdocs.yml copied and the code folders linked, so nothing here
touches the author's files; the tests (tests/site/) and `benchmarks.bench_site` serve it and edit its chapter.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The folders a build reads beside docs/ and mkdocs.yml (search/: jieba's dictionary of the article's terms).
PROJECT_FOLDERS = ("hooks", "overrides", "simulations", "search")
# The chapter an edit goes to, and where the site serves it.
CHAPTER = "zh/two-phases.md"
CHAPTER_URL = "two-phases/"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_project_copy(root: Path, docs: Path = REPO / "docs") -> Path:
    """A project at root: docs/ and mkdocs.yml copied, the code folders linked. Returns its mkdocs.yml."""
    shutil.copytree(docs, root / "docs")
    for folder in PROJECT_FOLDERS:
        (root / folder).symlink_to(REPO / folder, target_is_directory=True)
    if (REPO / ".cache").is_dir():  # reuse the simulation cache: serving is under test, not simulating
        (root / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)
    if (REPO / ".ci").is_dir():  # the chart library may come from .ci/node_modules
        (root / ".ci").symlink_to(REPO / ".ci", target_is_directory=True)
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root / "mkdocs.yml"


def fetch(url: str, timeout: float = 5.0) -> str | None:
    """The body at url as text, or None when nothing answers."""
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
