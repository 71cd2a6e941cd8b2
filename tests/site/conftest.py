"""One `mkdocs serve` shared by the serve tests of test_serve_resilience.py and test_serve_mistakes.py (each
test leaves the served files as it found them); the tests that need a server of their own start one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.mkdocs_serve import CHAPTER_URL, ServedProject


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProject]:
    """`mkdocs serve` of a project copy, once it serves the chapter with its demo; stopped after."""
    project = ServedProject(tmp_path_factory.mktemp("serve") / "project", extra_env={"PD_SWEEP": "quick"})
    try:
        # The first build may have to simulate (cold cache): give it time.
        if project.wait_for(CHAPTER_URL, lambda body: "data-pd-demo" in body, timeout=900) is None:
            pytest.fail(f"mkdocs serve never served {CHAPTER_URL}:\n{project.log()[-4000:]}")
        yield project
    finally:
        project.stop()
