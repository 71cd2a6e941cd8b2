"""What the measurements ran on: CPU, cores, numpy and its BLAS, Python, date."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from functools import lru_cache

import numpy as np


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):  # not Linux, or a kernel that names no model
        return platform.processor() or platform.machine()


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return set(next(line.split(":", 1)[1].split() for line in f if line.startswith(("flags", "Features"))))
    except (OSError, StopIteration):
        return set()


def vector_extension(flags: set[str]) -> str:
    """The widest SIMD extension the CPU reports, as engineers name it: what places its FLOP/s peak."""
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse2", "SSE2"),
                       ("sve", "SVE"), ("asimd", "NEON")):
        if flag in flags:
            return name
    return platform.machine() or "unknown"


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use, not the host's
    except AttributeError:
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def _blas() -> str:
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{info.get('name', 'unknown')} {info.get('version', '')}".strip()
    except Exception:  # older numpy or unusual builds
        return "unknown"


def machine_info(*, kernels: str) -> dict:
    """{"cpu","vector","virtual","cores","numpy","blas","kernels","python","date"}: the widest SIMD extension,
    whether the cores are a hypervisor's virtual CPUs (the `hypervisor` flag), the path decode ran on as the caller
    names it (`kernels.describe()`), and today's UTC date, ISO format."""
    flags = _cpu_flags()
    return {
        "cpu": _cpu_model(),
        "vector": vector_extension(flags),
        "virtual": "hypervisor" in flags,
        "cores": available_cores(),
        "numpy": np.__version__,
        "blas": _blas(),
        "kernels": kernels,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.UTC).date().isoformat(),
    }
