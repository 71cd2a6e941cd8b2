"""A tiny random-weight model of the same architecture: tests and demos without a download.

Seeded, so every run produces the same weights and the same (meaningless) text. Its tokenizer is
byte-level BPE without merges, so every byte is a token and any text, Chinese included, encodes.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from .config import ModelConfig
from .model import LayerWeights, Weights, weight_matrix
from .tokenizer import TOKEN_TYPE_CONTROL, Tokenizer, byte_level_alphabet

TINY_SEED = 0  # the seed `load_model("tiny")` uses
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def tiny_config(**overrides) -> ModelConfig:
    fields = dict(
        name="tiny-random",
        arch="llama",
        n_layers=2,
        d_model=64,
        n_heads=4,
        n_kv_heads=2,
        head_dim=16,
        d_ff=128,
        vocab_size=len(SPECIAL_TOKENS) + 256,
        rope_theta=10000.0,
        rms_eps=1e-5,
        max_context=8192,
        tied_embeddings=True,
    )
    fields.update(overrides)
    return ModelConfig(**fields)


def tiny_tokenizer() -> Tokenizer:
    tokens = SPECIAL_TOKENS + byte_level_alphabet()
    types = [TOKEN_TYPE_CONTROL] * len(SPECIAL_TOKENS) + [1] * 256
    return Tokenizer(tokens, merges=[], token_types=types, pre="gpt2", eos_id=2, chat_template=CHATML_TEMPLATE)


def tiny_weights(config: ModelConfig, seed: int = 0) -> Weights:
    """Gaussian weights scaled by 1/sqrt(fan-in), so activations stay O(1) through the blocks."""
    rng = np.random.default_rng(seed)
    c = config

    def matrix(rows: int, cols: int) -> np.ndarray:
        return weight_matrix(rng.standard_normal((rows, cols)) / np.sqrt(cols))

    def norm() -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(c.d_model)).astype(np.float32)

    qkv_rows = c.q_dim + 2 * c.kv_dim
    layers = [
        LayerWeights(
            attn_norm=norm(),
            wqkv=matrix(qkv_rows, c.d_model),
            bqkv=(0.1 * rng.standard_normal(qkv_rows)).astype(np.float32) if c.qkv_bias else None,
            wo=matrix(c.d_model, c.q_dim),
            mlp_norm=norm(),
            w_gate_up=matrix(2 * c.d_ff, c.d_model),
            w_down=matrix(c.d_model, c.d_ff),
        )
        for _ in range(c.n_layers)
    ]
    embedding = matrix(c.vocab_size, c.d_model)  # small rows keep the tied LM head from saturating
    head = embedding if c.tied_embeddings else matrix(c.vocab_size, c.d_model)
    return Weights(token_embedding=embedding, layers=layers, final_norm=norm(), lm_head=head)


def tiny_model(seed: int = 0) -> tuple[ModelConfig, Weights, Tokenizer, str]:
    """What `load_model("tiny")` is made of, as `gguf_loader.load_gguf` returns a file's: config, weights,
    tokenizer, and a fingerprint for cache keys (a hash of the config and the seed)."""
    config = tiny_config()
    payload = json.dumps({"config": config.to_dict(), "seed": seed}, sort_keys=True)
    return config, tiny_weights(config, seed), tiny_tokenizer(), hashlib.sha256(payload.encode()).hexdigest()
