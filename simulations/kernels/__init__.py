"""The model's hot spots, compiled with numba: what an inference engine's CPU kernels do, beside the model.

`model.py` stays the readable numpy definition and calls these behind its own functions:

- `rows_times_weight` (from `model.linear`): y = x @ W.T for a decode step of up to MAX_KERNEL_ROWS users, the LM
  head, or a prompt's rows in pieces of that many, each weight read once per piece from a packed copy of W
  (`weight_tiles`, BLIS's packed B panel; `f32`). numpy's BLAS packs the whole matrix on every product of a few
  rows, which made a step of 8 users cost several times one user's.
- `rows_times_blocks` (from `model.quantized_linear`): the same product for a matrix in a GGUF format (F16, Q8_0,
  Q4_0, Q4_1), reading the format's bytes from a copy with the blocks of 16 rows interleaved, as llama.cpp's CPU
  backend repacks Q4_0 (`blocks`, `block_dot`); many rows dequantize one tile at a time into the float32 kernel
  (`rows_times_dequantized`).
- `one_token_attention` (from `model.transformer_block`): one new token per sequence over its KV cache, each key
  and value row read once for the query heads that share it, split-K over the context with a running softmax
  (flash-decoding; `decode_attention`).
- `prompt_attention` (from `model.attention`): a prompt's causal attention block by block as FlashAttention does,
  the scores never stored (`prefill_attention`).
- element-wise work: rms_norm, RoPE, the MLP gate and softmax's exp (`pointwise`).

The weight formats are one table (`weight_formats`); CPU features and every tuning constant are in `tuning`.

Importing this package defines names only. `configure()` does the runtime set-up once (numba's cache directory
and threading layer, libgomp's spin count, the CPU's features) and loads the compiled modules; the entry points
call it, and the first use of a kernel calls it if they did not. PD_KERNELS=numpy (read once) selects the pure
numpy path instead: the reference every kernel is tested against; `use("numpy")` switches for a block of code.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .weight_formats import WEIGHT_FORMATS, WeightFormat

__all__ = ["PATHS", "WEIGHT_FORMATS", "WeightFormat", "activation_digits", "attends", "configure", "describe",
           "elementwise", "enabled", "path_setting", "selected_path", "streams", "timed", "use"]

PATHS = ("numba", "numpy")
F32 = np.float32

# The compiled modules and the public names each gives this package once `configure()` has loaded it.
_MODULES = {
    "tuning": ("MAX_KERNEL_ROWS", "TILE_LANES", "TILE_OUTPUTS", "TILE_INPUTS", "VNNI", "DIGITS"),
    "memory": (),
    "f32": ("rows_times_weight", "weight_tiles", "tiles_fit", "_weight_tiles"),
    "blocks": ("rows_times_blocks", "rows_times_dequantized", "dequantize", "interleaved_blocks"),
    "block_dot": ("_digits_of_rows",),
    "decode_attention": ("one_token_attention",),
    "prefill_attention": ("prompt_attention",),
    "pointwise": ("softmax_numerators", "silu_gate", "rms_norm", "rope", "read_everything"),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}
# The kernels a benchmark can time (`timed`), as `model` calls them through this package.
TIMED = ("rows_times_weight", "rows_times_blocks", "rows_times_dequantized", "one_token_attention", "prompt_attention",
         "rms_norm", "rope", "silu_gate", "softmax_numerators")

_path: str | None = None  # PD_KERNELS, read once; `use` replaces it for a block
_configured = False
_tuning: Any = None  # the compiled modules the predicates below read, once configured
_f32: Any = None
_configure_lock = threading.RLock()


def path_setting() -> str:
    """$PD_KERNELS checked: "numba" (the default, also when empty) or "numpy"."""
    path = os.environ.get("PD_KERNELS") or "numba"
    if path not in PATHS:
        raise ValueError(f"PD_KERNELS={path!r}: allowed values are {', '.join(PATHS)}")
    return path


def selected_path() -> str:
    """"numba" or "numpy": $PD_KERNELS as read once (`path_setting`), or the path `use` selected."""
    global _path
    if _path is None:
        _path = path_setting()
    return _path


def enabled() -> bool:
    """Whether the compiled kernels run (configured on the first call that says so)."""
    return (_path or selected_path()) == "numba" and (_configured or configure())


@contextlib.contextmanager
def use(path: str) -> Iterator[None]:
    """Run the block on `path` ("numba" or "numpy") instead of the selected one; for tests and benchmarks. The
    choice is the process's, not a thread's."""
    global _path
    if path not in PATHS:
        raise ValueError(f"kernels.use({path!r}): allowed values are {', '.join(PATHS)}")
    before = _path
    _path = path
    try:
        yield
    finally:
        _path = before


def configure() -> bool:
    """The runtime set-up, once per process (later calls return at once); returns True.

    Sets, unless already set: NUMBA_CACHE_DIR (the per-user cache, never the source tree),
    NUMBA_THREADING_LAYER_PRIORITY (OpenMP first: a parallel region starts in a few µs, numba's workqueue takes
    tens, and a step starts about 200; lever `omp-threading-layer`) and GOMP_SPINCOUNT (idle threads spin across
    the gaps between a step's calls, then sleep; lever `gomp-spincount`). Then imports numba, reads the CPU's
    features (`tuning`) and loads the compiled modules, whose functions compile on their first call (or come
    from the cache)."""
    global _configured
    if _configured:
        return True
    with _configure_lock:
        if _configured:
            return True
        selected_path()  # a wrong PD_KERNELS fails here, at the entry point
        from ..paths import cache_dir

        os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir() / "numba"))
        os.environ.setdefault("NUMBA_THREADING_LAYER_PRIORITY", "omp tbb workqueue")
        os.environ.setdefault("GOMP_SPINCOUNT", "30000")
        import numba

        if not numba.config.CACHE_DIR:  # numba was imported before, without the variable: set its config too
            numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
        namespace = globals()
        for module, names in _MODULES.items():
            loaded = importlib.import_module(f".{module}", __name__)
            namespace[f"_{module}"] = loaded
            for name in names:
                namespace[name] = getattr(loaded, name)
        _configured = True
    return True


def __getattr__(name: str) -> Any:
    """A kernel or a CPU-dependent constant, asked for before `configure()`: configure, then answer."""
    if name in _LAZY:
        configure()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def activation_digits() -> int:
    """How many 8-bit digits a decode step's GGUF block products write each activation as, to multiply integers:
    DIGITS where the CPU has AVX-512 VNNI, 0 where they multiply in float32 (and on the numpy path)."""
    return _tuning.DIGITS if enabled() and _tuning.VNNI else 0


def describe() -> str:
    """The path that measured a figure, as traces and pages name it."""
    if not enabled():
        return "numpy"
    import numba

    return f"numba {numba.__version__}"  # its threads are the machine's cores, which the source line names


# --- which products and passes `model` hands to the kernels ---------------------------------------------------
# Each asks `enabled()` first: the numpy path never loads the compiled modules.

def elementwise(x: np.ndarray) -> bool:
    """Whether rms_norm or RoPE on x goes to a compiled kernel (`rms_norm`, `rope`): float32 rows, any number."""
    return x.dtype == F32 and enabled()


def streams(x: np.ndarray, w: np.ndarray) -> bool:
    """Whether `linear` hands x @ W.T to the kernel: float32, W row-major, and any number of rows if the tiles fit W
    (`tiles_fit`: every matrix of the model), else up to MAX_KERNEL_ROWS."""
    return (w.flags.c_contiguous and w.dtype == F32 and x.dtype == F32 and enabled()
            and (x.shape[0] <= _tuning.MAX_KERNEL_ROWS or _f32.tiles_fit(w)))


def attends(q: np.ndarray, keys: np.ndarray) -> bool:
    """Whether `model.attention` hands a prompt's attention to `prompt_attention`: float32, a head dimension of
    whole vectors."""
    return enabled() and q.dtype == F32 and keys.dtype == F32 and q.shape[2] % _tuning.TILE_LANES == 0


@contextlib.contextmanager
def timed(spent: dict[str, float], names: tuple[str, ...] = TIMED) -> Iterator[dict[str, float]]:
    """Inside the block, every call the model makes to the named kernels (`TIMED`: through this package's
    attributes, as `model` calls them) adds its wall time in seconds to spent[name]; for benchmarks' profiles.
    Outside it the kernels are the plain functions: nothing is timed."""
    import time

    configure()
    namespace = globals()
    real = {name: namespace[name] for name in names}

    def timing(name: str, function: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - started
        return call

    namespace.update({name: timing(name, function) for name, function in real.items()})
    try:
        yield spent
    finally:
        namespace.update(real)
