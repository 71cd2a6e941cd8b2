"""Where downloaded and derived model files live: a per-user cache, never the repository."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$PD_CACHE_DIR, else $XDG_CACHE_HOME/prefill-decode, else ~/.cache/prefill-decode."""
    explicit = os.environ.get("PD_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "prefill-decode"
