"""GGUF file -> ModelConfig + float32 Weights + Tokenizer, with a float32 cache.

The first load reads the GGUF with the `gguf` package (llama.cpp's reader), dequantizes every
tensor once with `gguf.quants.dequantize`, and saves float32 `.npy` files in the per-user cache.
Later loads memory-map those files, so they start in a fraction of a second and the operating
system shares the pages between processes.

GGUF facts this relies on: dimensions are listed fastest-first, so a (out, in) PyTorch matrix
appears as [in, out]; `dequantize` already returns numpy order (out, in). A model without
`output.weight` ties its LM head to `token_embd.weight`. Qwen2 has Q/K/V biases.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .config import ModelConfig
from .errors import ModelFileError
from .model import LayerWeights, Weights, weight_matrix
from .paths import cache_dir, file_sha256, write_directory
from .tokenizer import Tokenizer

SUPPORTED_ARCHS = ("llama", "qwen2")
CACHE_FORMAT = 3  # bump when the layout of the float32 cache changes (3: matrices row-major)


def _field(reader, key: str, default=None):
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _open_reader(path: Path):
    from gguf import GGUFReader

    expected = f"expected a GGUF model file of architecture {' or '.join(SUPPORTED_ARCHS)}"
    if not path.is_file():
        raise ModelFileError(f"{path}: no such file ({expected})")
    try:
        return GGUFReader(str(path))
    except Exception as error:  # the reader raises ValueError, struct errors, IndexError... on bad bytes
        raise ModelFileError(f"{path}: not a readable GGUF file ({error}); {expected}") from error


def read_config(reader, path: Path) -> ModelConfig:
    arch = _field(reader, "general.architecture")
    if arch not in SUPPORTED_ARCHS:
        raise ModelFileError(f"{path}: architecture {arch!r} is not supported — "
                             f"expected one of {', '.join(SUPPORTED_ARCHS)}")

    def need(key: str):
        value = _field(reader, f"{arch}.{key}")
        if value is None:
            raise ModelFileError(f"{path}: GGUF metadata lacks '{arch}.{key}', which a {arch} model must have")
        return value

    d_model, n_heads = int(need("embedding_length")), int(need("attention.head_count"))
    n_kv = int(_field(reader, f"{arch}.attention.head_count_kv", n_heads))
    head_dim = int(_field(reader, f"{arch}.attention.key_length", d_model // n_heads))
    names = {t.name for t in reader.tensors}
    vocab = _field(reader, f"{arch}.vocab_size") or len(reader.fields["tokenizer.ggml.tokens"].data)
    return ModelConfig(
        name=str(_field(reader, "general.name", path.stem)),
        arch=arch,
        n_layers=int(need("block_count")),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        d_ff=int(need("feed_forward_length")),
        vocab_size=int(vocab),
        rope_theta=float(_field(reader, f"{arch}.rope.freq_base", 10000.0)),
        rms_eps=float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)),
        max_context=int(need("context_length")),
        tied_embeddings="output.weight" not in names,
        rope_style="interleaved" if arch == "llama" else "half",
        qkv_bias="blk.0.attn_q.bias" in names,
    )


def read_tokenizer(reader, path: Path) -> Tokenizer:
    kind = _field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise ModelFileError(f"{path}: tokenizer model {kind!r} is not supported — expected byte-level BPE ('gpt2')")
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type", [1] * len(tokens)))
    try:
        return Tokenizer(
            tokens=tokens,
            merges=list(_field(reader, "tokenizer.ggml.merges", [])),
            token_types=[int(t) for t in types],
            pre=str(_field(reader, "tokenizer.ggml.pre", "default")),
            eos_id=int(_field(reader, "tokenizer.ggml.eos_token_id", 0)),
            chat_template=_field(reader, "tokenizer.chat_template"),
        )
    except ValueError as error:
        raise ModelFileError(f"{path}: {error}") from error


def _dequantized_tensors(reader, path: Path, config: ModelConfig) -> dict[str, np.ndarray]:
    from gguf.quants import dequantize

    tensors = {t.name: t for t in reader.tensors}

    def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
        if name not in tensors:
            raise ModelFileError(f"{path}: tensor '{name}' is missing (a {config.arch} model needs it)")
        t = tensors[name]
        try:
            array = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        except Exception as error:
            raise ModelFileError(f"{path}: tensor '{name}' cannot be dequantized ({error})") from error
        if array.shape != shape:
            raise ModelFileError(f"{path}: tensor '{name}' has shape {array.shape}, expected {shape}")
        return array

    c = config
    qkv = (("attn_q", c.q_dim), ("attn_k", c.kv_dim), ("attn_v", c.kv_dim))  # stacked in this order
    out = {
        "token_embedding": get("token_embd.weight", (c.vocab_size, c.d_model)),
        "final_norm": get("output_norm.weight", (c.d_model,)),
    }
    if not c.tied_embeddings:
        out["lm_head"] = get("output.weight", (c.vocab_size, c.d_model))
    for i in range(c.n_layers):
        b = f"blk.{i}."
        out[f"layer{i}.attn_norm"] = get(b + "attn_norm.weight", (c.d_model,))
        out[f"layer{i}.wqkv"] = np.concatenate([get(f"{b}{name}.weight", (rows, c.d_model)) for name, rows in qkv])
        if c.qkv_bias:
            out[f"layer{i}.bqkv"] = np.concatenate([get(f"{b}{name}.bias", (rows,)) for name, rows in qkv])
        out[f"layer{i}.wo"] = get(b + "attn_output.weight", (c.d_model, c.q_dim))
        out[f"layer{i}.mlp_norm"] = get(b + "ffn_norm.weight", (c.d_model,))
        out[f"layer{i}.w_gate_up"] = np.concatenate([get(b + "ffn_gate.weight", (c.d_ff, c.d_model)),
                                                     get(b + "ffn_up.weight", (c.d_ff, c.d_model))])
        out[f"layer{i}.w_down"] = get(b + "ffn_down.weight", (c.d_model, c.d_ff))
    return out


def stored_matrices(path: str | Path, config: ModelConfig) -> dict[str, tuple[str, np.ndarray]]:
    """Every weight matrix of the GGUF as the file stores it: {name: (format, raw data)}, named as the cache's
    arrays are ("layer3.wqkv", "token_embedding", ...). Q, K and V (and gate and up) are stacked by rows, as
    the float32 model stacks them: a row of blocks is one output's weights, so stacking keeps every block.
    The format is the lower-case GGML type ("q4_1"); a stack of tensors stored in different types is None."""
    path = Path(path).expanduser().resolve()
    reader = _open_reader(path)
    tensors = {t.name: t for t in reader.tensors}
    c = config

    def raw(*names: str) -> tuple[str | None, np.ndarray]:
        for name in names:
            if name not in tensors:
                raise ModelFileError(f"{path}: tensor '{name}' is missing (a {c.arch} model needs it)")
        kinds = {tensors[name].tensor_type.name.lower() for name in names}
        data = [np.asarray(tensors[name].data) for name in names]
        return (kinds.pop() if len(kinds) == 1 else None), (data[0] if len(data) == 1 else np.concatenate(data))

    out = {"token_embedding": raw("token_embd.weight")}
    if not c.tied_embeddings:
        out["lm_head"] = raw("output.weight")
    for i in range(c.n_layers):
        b = f"blk.{i}."
        out[f"layer{i}.wqkv"] = raw(b + "attn_q.weight", b + "attn_k.weight", b + "attn_v.weight")
        out[f"layer{i}.wo"] = raw(b + "attn_output.weight")
        out[f"layer{i}.w_gate_up"] = raw(b + "ffn_gate.weight", b + "ffn_up.weight")
        out[f"layer{i}.w_down"] = raw(b + "ffn_down.weight")
    return out


def weights_from_arrays(arrays: dict[str, np.ndarray], config: ModelConfig) -> Weights:
    names = [field.name for field in dataclasses.fields(LayerWeights)]  # the cache's files are named after them
    layers = [LayerWeights(**{name: arrays.get(f"layer{i}.{name}") for name in names}) for i in range(config.n_layers)]
    embedding = arrays["token_embedding"]
    return Weights(
        token_embedding=embedding,
        layers=layers,
        final_norm=arrays["final_norm"],
        lm_head=embedding if config.tied_embeddings else arrays["lm_head"],
    )


def _build_cache(path: Path, target: Path, progress=None) -> None:
    """Read and dequantize the GGUF once; write float32 .npy files + meta.json into `target`."""
    progress = progress or (lambda message, fraction: None)
    progress(f"reading {path.name}", None)
    reader = _open_reader(path)
    config = read_config(reader, path)
    tokenizer = read_tokenizer(reader, path)
    progress(f"dequantizing {len(reader.tensors)} tensors to float32", None)
    arrays = _dequantized_tensors(reader, path, config)

    def fill(directory: Path) -> None:
        for name, array in arrays.items():
            stored = weight_matrix(array) if array.ndim == 2 else np.ascontiguousarray(array, dtype=np.float32)
            np.save(directory / f"{name}.npy", stored)  # .npy keeps the order: loaded row-major too
        meta = {"format": CACHE_FORMAT, "config": config.to_dict(), "tokenizer": tokenizer.to_state()}
        (directory / "meta.json").write_text(json.dumps(meta))
    write_directory(target, fill)


def _read_together(paths: list[Path]) -> dict[str, np.ndarray]:
    """Every .npy file's array, all views of one buffer: numpy backs a buffer this large with 2 MiB pages
    (transparent huge pages), and one buffer gives them to the small matrices too (a layer's are 1-7 MB;
    numpy asks for huge pages only from 4 MB, and separate arrays would each start mid-page)."""
    mapped = {path.stem: np.load(path, mmap_mode="r") for path in paths}
    starts = np.cumsum([0] + [-(-array.nbytes // 64) * 64 for array in mapped.values()])  # 64-byte aligned
    buffer = np.empty(int(starts[-1]), dtype=np.uint8)
    arrays = {}
    for (name, array), start in zip(mapped.items(), starts, strict=False):
        arrays[name] = buffer[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
        arrays[name][...] = array
    return arrays


def load_gguf(path: str | Path, progress=None) -> tuple[ModelConfig, Weights, Tokenizer, str]:
    """Config, float32 weights, tokenizer and sha256 of a llama/qwen2 GGUF file."""
    path = Path(path).expanduser().resolve()
    if not path.is_file() or path.stat().st_size < 32:
        _open_reader(path)  # raises the clear "no such file" / "not a readable GGUF" error
    fingerprint = file_sha256(path)
    target = cache_dir() / "float32" / fingerprint[:24]
    meta_file = target / "meta.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else None
    if meta is None or meta.get("format") != CACHE_FORMAT:
        _build_cache(path, target, progress)
        meta = json.loads(meta_file.read_text())
    config = ModelConfig(**meta["config"])
    # Read into the process's own memory, not memory-mapped: numpy backs large arrays with 2 MiB pages, and
    # decode, which streams every weight once a step, ran 10-25% faster on them than on the file's 4 KiB pages
    # (fewer TLB misses; the bandwidth ceiling's buffer has them too). Reading 0.5 GB from the page cache takes
    # a fraction of a second; each process holds its own copy.
    arrays = _read_together(sorted(target.glob("*.npy")))
    return config, weights_from_arrays(arrays, config), Tokenizer.from_state(meta["tokenizer"]), fingerprint
