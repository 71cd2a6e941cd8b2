"""The model a reader can run in their own browser: the build's GGUF file, published in chunks.

The chunks are the file's own bytes, in order, at most CHUNK_BYTES each, every one named by its SHA-256
(so a browser's Cache Storage keeps a chunk exactly as long as its bytes stay the same) and written to the
per-user cache, never into docs/. A manifest, also named by its SHA-256, lists the chunks, the model's
shapes, where each tensor lies in the file, and the tokenizer (a `tokenizer.json` the build derives from the
GGUF's metadata, as simulations/tokenizer.py does) with the chat template. The browser reads the file's
own formats (Q4_1 layers, a Q8_0 embedding and LM head, float32 norms): see docs/assets/pd/device/README.md.

The tiny test model (PD_MODEL=tiny) has no file: one is written from its weights (layer matrices in Q4_1, the
embedding in Q8_0, as the real file stores them), so the same path runs in the tests.

Settings: PD_LIVE_MODEL=1 (the default) publishes the build's own model; 0 leaves the model out (the page then
says it is not available there); any other value names the model to publish instead, as PD_MODEL does ("tiny",
"smollm2-135m" or a GGUF path): the tests run the real model in the browser on a site built with the tiny one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File

from hooks.demos.assets import language_prefix
from simulations.paths import cache_dir

PROJECT_DIR = Path(__file__).resolve().parents[2]
ENV = "PD_LIVE_MODEL"
CHUNK_BYTES = 32_000_000  # at most this many bytes a chunk (32 MB): a failed fetch repeats little
MODEL_DIR = "assets/pd/model"
VENDOR_DIR = "assets/vendor"
FORMAT = "prefill-decode-live/1"
TYPES = ("f32", "q8_0", "q4_1")  # the tensor formats the browser's kernels read
# The two libraries the browser needs, installed by .ci's npm step (pinned in .ci/package-lock.json).
LIBRARIES = {
    "tokenizers.mjs": Path(".ci/node_modules/@huggingface/tokenizers/dist/tokenizers.min.mjs"),
    "jinja.mjs": Path(".ci/node_modules/@huggingface/jinja/dist/index.js"),
}


def setting() -> str:
    """PD_LIVE_MODEL: "1" (the build's model), "0" (none) or a model to publish instead."""
    value = os.environ.get(ENV, "1").strip()
    if not value:
        raise ValueError(f"{ENV} is empty: allowed values are 1 (publish the build's model, the default), 0 (leave "
                         "it out) or a model as PD_MODEL names one (tiny, smollm2-135m, a GGUF path)")
    return value


def enabled() -> bool:
    return setting() != "0"


def cache_key(project_dir: Path = PROJECT_DIR) -> str:
    """What a demo's cached JSON depends on here: the setting, and whether the libraries are installed."""
    return f"{setting()}:{all((project_dir / lib).is_file() for lib in LIBRARIES.values())}"


@dataclass(frozen=True)
class Chunk:
    sha256: str
    path: Path  # in the per-user cache
    size: int

    @property
    def name(self) -> str:
        return f"{self.sha256}.bin"


@dataclass(frozen=True)
class LiveModel:
    chunks: tuple[Chunk, ...]
    manifest: bytes
    file_bytes: int
    formats: dict[str, int]  # tensor format -> bytes of the tensors held in it
    name: str
    config: dict[str, Any]  # the model's shapes, as the manifest gives them

    @property
    def manifest_name(self) -> str:
        return f"manifest-{hashlib.sha256(self.manifest).hexdigest()[:16]}.json"

    def descriptor(self) -> dict[str, Any]:
        """What a demo's JSON says of the model before anything is fetched."""
        return {"available": True, "model": self.name, "manifest": self.manifest_name, "download_bytes": self.file_bytes + len(self.manifest),
                "formats": self.formats, "chunks": len(self.chunks)}


def _chunk(data: memoryview, target: Path) -> Chunk:
    digest = hashlib.sha256(data).hexdigest()
    path = target / f"{digest}.bin"
    if not path.is_file() or path.stat().st_size != len(data):
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return Chunk(digest, path, len(data))


def split_file(path: Path, target: Path, chunk_bytes: int = CHUNK_BYTES) -> list[Chunk]:
    """The file's bytes as chunks of at most `chunk_bytes`, written to `target` by digest."""
    target.mkdir(parents=True, exist_ok=True)
    data = memoryview(path.read_bytes())
    return [_chunk(data[start:start + chunk_bytes], target) for start in range(0, len(data), chunk_bytes)]


def tensor_table(reader: Any, path: Path) -> dict[str, dict[str, Any]]:
    """name -> {type, offset (in the file), shape [rows, columns], bytes}; every tensor in a format the browser reads."""
    table = {}
    for t in reader.tensors:
        kind = t.tensor_type.name.lower()
        if kind not in TYPES:
            raise ValueError(f"{path}: tensor '{t.name}' is stored as {kind.upper()}; the browser reads "
                             f"{', '.join(k.upper() for k in TYPES)}")
        dims = [int(d) for d in t.shape][::-1]  # GGUF lists the fastest dimension first
        table[t.name] = {"type": kind, "offset": int(t.data_offset), "shape": dims, "bytes": int(t.n_bytes)}
    return table


def manifest_for(path: Path, chunks: list[Chunk], name: str | None = None) -> tuple[bytes, dict[str, int]]:
    from simulations.gguf_loader import _open_reader, read_config, read_tokenizer

    reader = _open_reader(path)
    config = read_config(reader, path)
    tokenizer = read_tokenizer(reader, path)
    if config.qkv_bias or config.rope_style != "interleaved":
        raise ValueError(f"{path}: the browser runs llama models (no Q/K/V bias, interleaved RoPE); this is {config.arch}")
    tensors = tensor_table(reader, path)
    formats: dict[str, int] = {}
    for t in tensors.values():
        formats[t["type"]] = formats.get(t["type"], 0) + t["bytes"]
    manifest = {
        "format": FORMAT,
        "name": name or config.name,
        "file_bytes": sum(c.size for c in chunks),
        "chunks": [{"name": c.name, "sha256": c.sha256, "bytes": c.size} for c in chunks],
        "config": {key: getattr(config, key) for key in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim",
                                                          "d_ff", "vocab_size", "rope_theta", "rms_eps", "max_context",
                                                          "tied_embeddings")},
        "tensors": tensors,
        "tokenizer": {"json": json.loads(tokenizer.hf.to_str()), "chat_template": tokenizer.chat_template,
                      "eos_id": tokenizer.eos_id, "stop_ids": sorted(tokenizer.stop_ids),
                      "special_ids": sorted(tokenizer.special_ids)},
    }
    return json.dumps(manifest, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), formats


def tiny_gguf(model: Any, target: Path) -> Path:
    """The tiny model written as a GGUF file, layers in Q4_1 and the embedding in Q8_0 (as the real file)."""
    import gguf
    from gguf.quants import quantize

    path = target / f"tiny-{model.fingerprint[:16]}.gguf"
    if path.is_file():
        return path
    c, w, tok = model.config, model.weights, model.tokenizer
    writer = gguf.GGUFWriter(str(path.with_suffix(".tmp")), "llama")
    writer.add_name(model.name)
    writer.add_block_count(c.n_layers)
    writer.add_context_length(c.max_context)
    writer.add_embedding_length(c.d_model)
    writer.add_feed_forward_length(c.d_ff)
    writer.add_head_count(c.n_heads)
    writer.add_head_count_kv(c.n_kv_heads)
    writer.add_rope_freq_base(c.rope_theta)
    writer.add_layer_norm_rms_eps(c.rms_eps)
    writer.add_vocab_size(c.vocab_size)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt2")
    writer.add_token_list(tok.tokens)
    writer.add_token_types([3 if i in tok.special_ids else 1 for i in range(len(tok.tokens))])
    writer.add_token_merges([])
    writer.add_eos_token_id(tok.eos_id)
    writer.add_chat_template(tok.chat_template)

    def matrix(name: str, array: np.ndarray, kind: gguf.GGMLQuantizationType) -> None:
        writer.add_tensor(name, quantize(np.ascontiguousarray(array, np.float32), kind), raw_dtype=kind)

    q4, q8 = gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0
    matrix("token_embd.weight", w.token_embedding, q8)
    writer.add_tensor("output_norm.weight", np.asarray(w.final_norm, np.float32))
    for i, layer in enumerate(w.layers):
        b = f"blk.{i}."
        qkv = np.asarray(layer.wqkv)
        writer.add_tensor(b + "attn_norm.weight", np.asarray(layer.attn_norm, np.float32))
        matrix(b + "attn_q.weight", qkv[:c.q_dim], q4)
        matrix(b + "attn_k.weight", qkv[c.q_dim:c.q_dim + c.kv_dim], q4)
        matrix(b + "attn_v.weight", qkv[c.q_dim + c.kv_dim:], q4)
        matrix(b + "attn_output.weight", layer.wo, q4)
        writer.add_tensor(b + "ffn_norm.weight", np.asarray(layer.mlp_norm, np.float32))
        gate_up = np.asarray(layer.w_gate_up)
        matrix(b + "ffn_gate.weight", gate_up[:c.d_ff], q4)
        matrix(b + "ffn_up.weight", gate_up[c.d_ff:], q4)
        matrix(b + "ffn_down.weight", layer.w_down, q4)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(path.with_suffix(".tmp"), path)
    return path


def model_file(model: Any) -> Path:
    """The GGUF the browser runs: the build model's own file, or the tiny model written as one."""
    if model.path is not None:
        return Path(model.path)
    target = cache_dir() / "live"
    target.mkdir(parents=True, exist_ok=True)
    return tiny_gguf(model, target)


@cache
def _live(path: Path, name: str) -> LiveModel:
    chunks = split_file(path, cache_dir() / "live" / "chunks")
    manifest, formats = manifest_for(path, chunks, name)
    return LiveModel(tuple(chunks), manifest, sum(c.size for c in chunks), formats, name, json.loads(manifest)["config"])


def live_model(model: Any, project_dir: Path = PROJECT_DIR) -> LiveModel | None:
    """The published model of this build, or None when it is left out (PD_LIVE_MODEL=0, or the npm libraries
    are not installed)."""
    if not enabled() or not all((project_dir / lib).is_file() for lib in LIBRARIES.values()):
        return None
    if setting() != "1":
        from simulations.loader import load_model

        model = load_model(setting())
    return _live(model_file(model).resolve(), model.name)


def descriptor(model: Any, project_dir: Path = PROJECT_DIR) -> dict[str, Any]:
    live = live_model(model, project_dir)
    return live.descriptor() if live else {"available": False}


def live_files(config: MkDocsConfig, model: Any, project_dir: Path) -> list[File]:
    """The chunks, the manifest and the two libraries, at the site's root (only the default language's build
    adds them: every language's pages load the device scripts from there)."""
    if language_prefix(config):
        return []
    live = live_model(model, project_dir)
    if live is None:
        return []
    files = [File.generated(config, f"{MODEL_DIR}/{c.name}", abs_src_path=str(c.path)) for c in live.chunks]
    files.append(File.generated(config, f"{MODEL_DIR}/{live.manifest_name}", content=live.manifest))
    files += [File.generated(config, f"{VENDOR_DIR}/{name}", abs_src_path=str(project_dir / lib))
              for name, lib in LIBRARIES.items()]
    return files


def clear_cache() -> None:
    """Forget the chunks written (tests)."""
    _live.cache_clear()
    shutil.rmtree(cache_dir() / "live" / "chunks", ignore_errors=True)
