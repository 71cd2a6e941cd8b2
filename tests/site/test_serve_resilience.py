"""`mkdocs serve` survives a burst of rapid edits, invalid demo blocks among them, and ends on the last
valid state; a prose edit is served again quickly (timed and reported, never asserted).

The server runs against a temporary copy of docs/ (the repo's hooks, overrides and simulations are
linked in: harness.mkdocs_serve), so the test never touches the author's files.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from harness.mkdocs_serve import CHAPTER, CHAPTER_URL, ServedProject, fetch, prose_edit

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.build, pytest.mark.xdist_group("serve")]  # one server for this file and the mistakes'
# Invalid demo blocks of the kinds an author really types: unknown kind, broken YAML, missing prompt.
INVALID_BLOCKS = (
    "```demo\nkind: teleport\nprompt: hi\n```\n",
    "```demo\nkind: [conversation\nprompt: hi\n```\n",
    "```demo\nkind: conversation\n```\n",
)


def invalid_edit(original: str, marker: str, block: str) -> str:
    return prose_edit(original, marker) + "\n" + block


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
