"""The model's hyper-parameters in one place (nanoGPT-style frozen dataclass)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .cost import ModelShape


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a Llama/Qwen2-style decoder. Every size the maths and the counters need."""

    name: str
    arch: str  # "llama" or "qwen2"
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    rope_theta: float
    rms_eps: float
    max_context: int
    tied_embeddings: bool
    # Which pairs of dimensions RoPE rotates together. llama.cpp's converter permutes Q/K of Llama
    # models so that adjacent pairs (0,1),(2,3),... rotate ("interleaved"); Qwen2 GGUFs keep the
    # Hugging Face order, where dimension i rotates with i + head_dim/2 ("half", NeoX style).
    rope_style: str = "interleaved"
    qkv_bias: bool = False  # Qwen2 adds biases to the Q, K and V projections

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def shape(self) -> ModelShape:
        """The sizes the cost model (cost.py) needs."""
        return ModelShape(layers=self.n_layers, d_model=self.d_model, heads=self.n_heads, kv_heads=self.n_kv_heads,
                          head_dim=self.head_dim, d_ff=self.d_ff, vocab=self.vocab_size,
                          tied_embeddings=self.tied_embeddings, qkv_bias=self.qkv_bias)

    def to_dict(self) -> dict:
        return asdict(self)
