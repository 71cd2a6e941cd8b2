"""Files the demos add to the site: Plotly's JS bundle and one JSON file per demo, as generated Files.

Nothing is written into docs/ (the `mkdocs serve` watcher would rebuild forever). Files are added after
mkdocs-static-i18n has laid out the language's files, under the same language folder it uses for
assets (none for the default language, `en/` for English), so pages and scripts find them beside the
rest of that language's assets.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import plotly
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File

PLOTLY_URI = "assets/vendor/plotly.min.js"
TRACES_DIR = "assets/traces"
# Version-matched partial bundle (scatter, bar, heatmap) installed by .ci's npm step, when present.
PARTIAL_BUNDLE = Path(".ci/node_modules/plotly.js-cartesian-dist-min/plotly-cartesian.min.js")


def language_prefix(config: MkDocsConfig) -> str:
    """"" for the default language build, "<lang>/" for the others (mkdocs-static-i18n folders)."""
    i18n = config.plugins.get("i18n")
    if i18n is None or getattr(i18n, "current_language", None) in (None, getattr(i18n, "default_language", None)):
        return ""
    return f"{i18n.current_language}/"


def plotly_file(config: MkDocsConfig, project_dir: Path) -> File:
    """The Plotly JS the site serves: the cartesian partial bundle if installed, else the full one
    shipped inside the plotly Python package (same plotly.js version)."""
    bundle = project_dir / PARTIAL_BUNDLE
    if not bundle.is_file():
        bundle = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
    return File.generated(config, language_prefix(config) + PLOTLY_URI, abs_src_path=str(bundle))


LEDGER_URI = "assets/ledger.json"
LEDGER_SCHEMA = Path(__file__).resolve().parents[2] / "simulations" / "ledger.schema.json"


def ledger_files(config: MkDocsConfig, ledger: dict) -> list[File]:
    """The ledger of measurements every figure on the site reads, and its schema, for a reader to open."""
    content = json.dumps(ledger, ensure_ascii=False, indent=1, default=str)
    prefix = language_prefix(config)
    return [File.generated(config, prefix + LEDGER_URI, content=content),
            File.generated(config, prefix + LEDGER_URI.replace(".json", ".schema.json"),
                           abs_src_path=str(LEDGER_SCHEMA))]


def demo_file(config: MkDocsConfig, kind: str, lang: str, content: str) -> File:
    """A demo's JSON, content-addressed: a changed demo gets a new URL, so browsers never show a stale one."""
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:12]
    return File.generated(config, f"{language_prefix(config)}{TRACES_DIR}/{kind}-{lang}-{digest}.json", content=content)
