"""The kernels package as its callers see it: importing it costs nothing, one table serves every weight format, the
path is switched for a block (`use`), and benchmarks time kernels through `timed` without leaving anything behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simulations.model as M
from simulations import kernels, quantized
from simulations.kernels import blocks

REPO = Path(__file__).resolve().parents[2]


def test_importing_the_kernels_or_the_machine_record_compiles_and_configures_nothing():
    code = ("import os, sys\nfrom simulations import kernels, machine, quantized\n"
            "print('numba' in sys.modules, 'GOMP_SPINCOUNT' in os.environ)")
    env = {key: value for key, value in __import__("os").environ.items() if key != "GOMP_SPINCOUNT"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["False", "False"], result.stdout + result.stderr


def test_every_weight_format_has_one_entry_and_its_kernels_exist():
    assert quantized.FORMATS == ("f32", "f16", "q8_0", "q4_0", "q4_1")
    assert quantized.BLOCK_BYTES == {"q8_0": 34, "q4_0": 18, "q4_1": 20}
    assert quantized.BYTES_PER_WEIGHT["q4_1"] == 20 / 32 and quantized.BYTES_PER_WEIGHT["f16"] == 2
    for fmt in kernels.WEIGHT_FORMATS.values():
        if fmt.name == "f32":
            continue
        for kernel in (fmt.dequantize, fmt.group, fmt.dot):
            assert callable(getattr(blocks, kernel)), f"{fmt.name}: {kernel}"


def test_use_switches_the_path_for_a_block_only():
    x = np.ones((2, 8), dtype=np.float32)
    with kernels.use("numba"):
        assert kernels.elementwise(x) and kernels.selected_path() == "numba"
        with kernels.use("numpy"):
            assert not kernels.elementwise(x) and kernels.describe() == "numpy"
        assert kernels.selected_path() == "numba"
    with pytest.raises(ValueError, match="allowed values are numba, numpy"), kernels.use("cuda"):
        pass


def test_timed_adds_the_models_kernel_calls_and_restores_the_kernels():
    real = kernels.rows_times_weight
    w = np.ones((kernels.TILE_OUTPUTS, 8), dtype=np.float32)
    spent: dict[str, float] = {}
    with kernels.use("numba"), kernels.timed(spent, ("rows_times_weight",)):
        M.linear(np.ones((3, 8), dtype=np.float32), w)
    assert spent["rows_times_weight"] > 0
    assert kernels.rows_times_weight is real
