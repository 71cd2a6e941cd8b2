"""Where downloaded and derived model files live (a per-user cache, never the repository), and their digests."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_dir() -> Path:
    """$PD_CACHE_DIR, else $XDG_CACHE_HOME/prefill-decode, else ~/.cache/prefill-decode."""
    explicit = os.environ.get("PD_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "prefill-decode"


def file_sha256(path: Path) -> str:
    """sha256 of a file, remembered per (path, size, mtime) so big files are hashed once."""
    path = Path(path).resolve()
    stat = path.stat()
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
    memo_file = cache_dir() / "sha256-memo.json"
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        memo = {}
    if key not in memo:
        with path.open("rb") as f:
            memo[key] = hashlib.file_digest(f, "sha256").hexdigest()
        memo_file.parent.mkdir(parents=True, exist_ok=True)
        # Written whole then renamed, so a process reading the memo meanwhile never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=memo_file.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(memo))
        os.replace(tmp, memo_file)
    return memo[key]


def write_directory(target: Path, fill: Callable[[Path], None]) -> None:
    """Make the cache directory `target` whole or not at all: `fill` writes into a fresh directory beside it,
    which then replaces `target`, so a process reading the cache never sees half of one (an interrupted build
    leaves only a `.building-` directory behind, removed here)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
    try:
        fill(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
