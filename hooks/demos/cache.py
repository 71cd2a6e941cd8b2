"""Simulation results cached on disk and in the process.

A result is stored under the sha256 of its inputs (what was asked, the simulation source code, the
model's fingerprint). Prose edits change none of these, so they never re-run a simulation; a new
prompt, option, model or simulation code does. Files are written atomically and carry a checksum of
their payload: a corrupt or truncated file is reported and recomputed, never served.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mkdocs.plugins import get_plugin_logger

log = get_plugin_logger(__name__)

# Where the build keeps its measurements, relative to the project (git-ignored).
CACHE_DIR = Path(".cache") / "traces"

CACHE_FORMAT = "prefill-decode-cache/1"
# In-process memo shared by every build of this process: both language builds of static-i18n and
# every rebuild of `mkdocs serve` (hook modules stay loaded).
_MEMO: dict[str, Any] = {}


def cache_key(parts: dict[str, Any]) -> str:
    """Stable sha256 of a JSON-serialisable description of a computation's inputs."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_hash(package_dir: Path) -> str:
    """sha256 over the package's Python sources and data files (paths and contents)."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".json", ".yml", ".yaml", ".txt", ".csv"} \
                and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class ResultCache:
    """get-or-compute over an on-disk directory plus the process-wide memo."""

    def __init__(self, directory: Path, memo: dict[str, Any] | None = None) -> None:
        self.directory = directory
        self.memo = _MEMO if memo is None else memo
        self._recorders: list[list[str]] = []

    @contextmanager
    def recording(self) -> Iterator[list[str]]:
        """Collect the keys of every result looked up inside the block (what a derived result depends on)."""
        keys: list[str] = []
        self._recorders.append(keys)
        try:
            yield keys
        finally:
            self._recorders.remove(keys)

    def damaged(self, key: str) -> bool:
        """True when the file of `key` exists but is corrupt. The result is then forgotten in memory too,
        so the next lookup reads the file, reports it and recomputes it."""
        problem = self._read(key)[1]
        if problem is not None:
            self.memo.pop(key, None)
        return problem is not None

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get_or_compute(self, parts: dict[str, Any], compute: Callable[[], Any], *, label: str,
                       announce: bool = True, valid: Callable[[Any], bool] | None = None) -> Any:
        """The cached result for `parts`, or `compute()` stored for next time (logged when `announce`).
        A cached result that `valid` rejects (e.g. one derived from a file since damaged) is recomputed."""
        key = cache_key(parts)
        for keys in self._recorders:
            keys.append(key)
        if key in self.memo and (valid is None or valid(self.memo[key])):
            return self.memo[key]
        result, problem = self._read(key)
        if result is not None and valid is not None and not valid(result):
            result = None
        if result is None:
            if announce:
                log.info(f"Simulating: {label}…")
            result = compute()
            # Written before anything is reported: even when --strict stops this build on the warning,
            # the next build finds a sound file and is clean.
            self._write(key, label, result)
            if problem:
                log.warning(f"Corrupt cache file {self.path_for(key)} for {label} ({problem}): "
                            "ignored, recomputed and rewritten")
        self.memo[key] = result
        return result

    def _read(self, key: str) -> tuple[Any, str | None]:
        """(result, None) from a sound file; (None, None) when there is none; (None, why) when corrupt."""
        path = self.path_for(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None, None
        except OSError as error:
            return None, f"unreadable: {error.strerror or error}"
        try:
            header_line, _, payload = raw.partition(b"\n")
            header = json.loads(header_line)
            if header.get("format") != CACHE_FORMAT or header.get("key") != key:
                raise ValueError("unexpected header")
            if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
                raise ValueError("checksum mismatch (truncated or edited)")
            return json.loads(payload), None
        except (ValueError, AttributeError, TypeError) as error:  # bad JSON, bad UTF-8, a header that is no object
            return None, str(error) or type(error).__name__

    def _write(self, key: str, label: str, result: Any) -> None:
        payload = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        header = {"format": CACHE_FORMAT, "key": key, "label": label,
                  "sha256": hashlib.sha256(payload).hexdigest()}
        self.directory.mkdir(parents=True, exist_ok=True)
        # Write beside the target, then rename: a reader never sees half a file.
        fd, tmp_name = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(json.dumps(header).encode("utf-8") + b"\n" + payload)
            os.chmod(tmp_name, 0o644)  # mkstemp makes it private; the cache is ordinary project data
            os.replace(tmp_name, self.path_for(key))
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
