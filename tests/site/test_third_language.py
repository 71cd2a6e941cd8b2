"""A translator adds a language the README's way (issue 49, section 3): a copy of the project gets docs/fr
from docs/en, French entries in mkdocs.yml and docs/vocabulary.yml, and builds strict. Nothing in the code,
the demo schema or the tests lists the languages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import TEST_MODEL, TEST_SWEEP

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.build, pytest.mark.xdist_group("builds")]

FRENCH = '''        - locale: fr
          name: Français
          build: true
          site_name: Prefill et Decode
          extra:
            chapter_label: "Chapitre {number:02d}"
            going_further: Pour aller plus loin
            reading_time: "Environ {minutes} min de lecture"
            card_minutes: "{minutes} min"
            permalink_title: Lien permanent
'''


def add_french(project: Path) -> None:
    """What the README's "Translating" section asks of a translator (the words left in English here)."""
    shutil.copytree(project / "docs" / "en", project / "docs" / "fr")
    config = (project / "mkdocs.yml").read_text(encoding="utf-8")
    end = config.index("\nmarkdown_extensions:")  # the languages are the last entry of the plugins
    (project / "mkdocs.yml").write_text(config[:end].rstrip("\n") + "\n" + FRENCH + config[end:], encoding="utf-8")
    vocabulary = project / "docs" / "vocabulary.yml"
    text = vocabulary.read_text(encoding="utf-8")
    vocabulary.write_text(re.sub(r"^([ \t]*)en: (.*)$", r"\g<0>\n\1fr: \2", text, flags=re.M), encoding="utf-8")


@pytest.fixture(scope="module")
def french_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("translator") / "project"
    project.mkdir()
    for name in ("docs", "hooks", "overrides", "simulations", "search"):
        shutil.copytree(REPO / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(REPO / "mkdocs.yml", project / "mkdocs.yml")
    (REPO / ".cache").mkdir(exist_ok=True)
    (project / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)  # the measurements, not remade
    add_french(project)
    env = {**os.environ, "PD_MODEL": TEST_MODEL, "PD_SWEEP": TEST_SWEEP, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-d", str(project / "site")]
    with FileLock(str(REPO / ".cache" / "tests-build.lock")):  # one build at a time (tests/conftest.py)
        result = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=3000)
    if result.returncode != 0:
        pytest.fail(f"the French build failed (exit {result.returncode}):\n{(result.stdout + result.stderr)[-6000:]}")
    return project / "site"


def test_a_third_language_added_the_readmes_way_builds_strict(french_site: Path):
    chapter = (french_site / "fr" / "prefill" / "index.html").read_text(encoding="utf-8")
    assert '<html lang="fr"' in chapter
    assert re.search(r'class="pd-kicker">Chapitre 02<', chapter)
    assert re.search(r'class="pd-reading-time">Environ \d+ min de lecture<', chapter)
    demos = list(french_site.rglob("assets/traces/*-fr-*.json"))
    assert demos and all('"lang":"fr"' in path.read_text(encoding="utf-8") for path in demos)
    home = (french_site / "fr" / "index.html").read_text(encoding="utf-8")
    assert 'hreflang="fr"' in (french_site / "index.html").read_text(encoding="utf-8")  # in the switcher
    assert "Pour aller plus loin · " in home

