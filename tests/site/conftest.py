"""One `mkdocs serve` shared by the serve tests of test_serve_resilience.py and test_serve_mistakes.py (each
test leaves the served files as it found them); the tests that need a server of their own start one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.site.test_serve_resilience import ServedProject, serving


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProject]:
    with serving(tmp_path_factory.mktemp("serve") / "project") as project:
        yield project
