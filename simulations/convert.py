"""The same model with its matrices held in a GGUF weight format: `convert(load_model(spec), "q8_0")`.

Where the GGUF file stores a matrix in the format, its blocks are used as stored (the file's own 4-bit format keeps
every tensor as stored, the token embedding / LM head included, as llama.cpp runs the file); other matrices are
quantized from float32 by llama.cpp's reference (`gguf.quants`), once, and kept in the per-user cache. Norms and
biases stay float32, as in GGUF. The same `model.forward` runs every format: `model.linear` dispatches on the
weight's type. What each format costs and gains is measured by the formats experiment (`formats.py`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .errors import WeightFormatError
from .gguf_loader import stored_matrices
from .kernels.weight_formats import WEIGHT_FORMATS
from .loader import LoadedModel
from .model import Weights
from .paths import cache_dir, write_directory
from .quantized import FORMATS, QuantizedWeight, check_format, quantize

MATRICES = ("wqkv", "wo", "w_gate_up", "w_down")  # a layer's matrices; its norms and biases stay float32
CACHE_FORMAT = 1  # bump when the layout of the converted-weights cache changes

Progress = Callable[[str, float | None], None] | None


_stored: dict[str, dict[str, tuple[str | None, np.ndarray]]] = {}  # memo: one GGUF parse per file


def _stored_matrices(model: LoadedModel) -> dict[str, tuple[str | None, np.ndarray]]:
    """`gguf_loader.stored_matrices` of the model's file (memory-mapped views), parsed once per process:
    reading a GGUF's metadata (its 49 152-token vocabulary) takes seconds."""
    if model.path is None:
        return {}
    key = str(model.path)
    if key not in _stored:
        _stored[key] = stored_matrices(model.path, model.config)
    return _stored[key]


def file_format(model: LoadedModel) -> str | None:
    """The format the model's GGUF file stores most of its layers' matrices in ("q4_1"), if it is one of
    `quantized.FORMATS`; None for a model without a file (the tiny test model)."""
    if model.path is None:
        return None
    stored = _stored_matrices(model)
    kinds = Counter(kind for name, (kind, _) in stored.items() if name.startswith("layer"))
    kind = kinds.most_common(1)[0][0] if kinds else None
    return kind if kind in FORMATS else None


def default_formats(model: LoadedModel) -> tuple[str, ...]:
    """F32, F16, Q8_0 and the file's own 4-bit format (Q4_1 when the file has none of its own)."""
    own = file_format(model)
    return ("f32", "f16", "q8_0", own if own in ("q4_0", "q4_1") else "q4_1")


def _matrices(weights: Weights) -> dict[str, np.ndarray]:
    out = {"token_embedding": weights.token_embedding}
    if weights.lm_head is not weights.token_embedding:
        out["lm_head"] = weights.lm_head
    for i, layer in enumerate(weights.layers):
        out.update({f"layer{i}.{name}": getattr(layer, name) for name in MATRICES})
    return out


def _held(fmt: str, shape: tuple[int, int], kind: str | None, data: np.ndarray) -> QuantizedWeight | np.ndarray:
    """A matrix from the file's raw bytes in the file's format `kind`."""
    matrix = np.ascontiguousarray(data.view(WEIGHT_FORMATS[kind].storage).reshape(shape[0], -1))
    return matrix if kind == "f32" else QuantizedWeight(kind, shape, matrix)


_converted: dict[tuple[str, str], LoadedModel] = {}  # memo: each model converted once per format and process


def convert(model: LoadedModel, fmt: str, progress: Progress = None) -> LoadedModel:
    """`model` with its matrices held in `fmt` (`quantized.FORMATS`); the same config and tokenizer.

    Where the GGUF file stores a matrix in `fmt`, its blocks are used as stored. When `fmt` is the file's
    own format, every matrix is taken as the file stores it (a Q4_1 file's Q8_0 token embedding stays
    Q8_0, as llama.cpp runs it). Other matrices are quantized from float32 by `gguf.quants`, once: the
    result is kept in the per-user cache, memory-mapped on later loads."""
    fmt = check_format(fmt)
    if fmt == model.weight_format:
        return model
    key = (model.fingerprint, fmt)
    if key not in _converted:
        _converted[key] = _convert(model, fmt, progress)
    return _converted[key]


def _convert(model: LoadedModel, fmt: str, progress: Progress) -> LoadedModel:
    if model.weight_format != "f32":
        raise WeightFormatError(f"convert a float32 model, not one already in {model.weight_format}")
    report = progress or (lambda message, fraction: None)
    if fmt == "f32":
        raise WeightFormatError("the float32 model is load_model(spec) itself")
    own = file_format(model)
    stored = _stored_matrices(model)
    target = cache_dir() / "formats" / model.fingerprint[:24] / fmt
    cached = _read_cache(target)
    matrices = _matrices(model.weights)
    held: dict[str, Any] = {}
    quantized_now: dict[str, np.ndarray] = {}
    from_file = 0
    for index, (name, matrix) in enumerate(matrices.items()):
        kind, data = stored.get(name, (None, None))
        if kind is not None and (kind == fmt or (fmt == own and kind in FORMATS)):
            held[name] = _held(fmt, matrix.shape, kind, data)
            from_file += 1
        elif name in cached:
            held[name] = QuantizedWeight(fmt, matrix.shape, cached[name])
        else:
            report(f"quantizing {name} to {fmt.upper()} (gguf.quants; cached after the first time)",
                   index / len(matrices))
            held[name] = quantize(matrix, fmt)
            quantized_now[name] = held[name].data
    _write_cache(target, quantized_now)
    w = model.weights
    layers = [replace(layer, **{name: held[f"layer{i}.{name}"] for name in MATRICES}) for i, layer in enumerate(w.layers)]
    embedding = held["token_embedding"]
    weights = Weights(token_embedding=embedding, layers=layers, final_norm=w.final_norm,
                      lm_head=held.get("lm_head", embedding))
    kinds = Counter(m.format if isinstance(m, QuantizedWeight) else "f32" for m in held.values())
    how = (f"{from_file} of {len(held)} matrices as the GGUF file stores them" if from_file == len(held)
           else f"{from_file} of {len(held)} matrices from the GGUF file's blocks, the rest quantized from "
                "float32 by gguf.quants" if from_file else "quantized from float32 by gguf.quants")
    mix = ", ".join(f"{count} {kind.upper()}" for kind, count in kinds.most_common())
    return replace(model, weights=weights, weight_format=fmt, fingerprint=f"{model.fingerprint}:{fmt}",
                   source=f"{model.source.split(', dequantized')[0]}: matrices in {fmt.upper()} ({how}; {mix})")


def _read_cache(target: Path) -> dict[str, np.ndarray]:
    meta = target / "meta.json"
    if not meta.is_file() or json.loads(meta.read_text()).get("format") != CACHE_FORMAT:
        return {}
    return {p.stem: np.load(p, mmap_mode="c") for p in target.glob("*.npy")}


def _write_cache(target: Path, arrays: dict[str, np.ndarray]) -> None:
    if not arrays:
        return
    every = {**_read_cache(target), **arrays}

    def fill(directory: Path) -> None:
        for name, array in every.items():
            np.save(directory / f"{name}.npy", np.asarray(array))
        (directory / "meta.json").write_text(json.dumps({"format": CACHE_FORMAT}))
    write_directory(target, fill)
