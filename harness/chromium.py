"""The browser the tests and benchmarks launch through Playwright: Debian's Chromium (`playwright install` is
not needed), or the one `PD_CHROMIUM` names."""

from __future__ import annotations

import os
import shutil

CHROMIUM = os.environ.get("PD_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
