"""The model's hyper-parameters in one place (nanoGPT-style frozen dataclass)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

FLOAT32_BYTES = 4


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
    def layer_params(self) -> int:
        """Parameters of one transformer block (projections, biases, two norm vectors)."""
        d = self.d_model
        qkv = d * (self.q_dim + 2 * self.kv_dim) + (self.q_dim + 2 * self.kv_dim if self.qkv_bias else 0)
        return qkv + self.q_dim * d + 3 * d * self.d_ff + 2 * d

    @property
    def n_params(self) -> int:
        """All parameters, counting a tied embedding/LM-head matrix once."""
        embedding = self.vocab_size * self.d_model
        head = 0 if self.tied_embeddings else self.vocab_size * self.d_model
        return embedding + head + self.n_layers * self.layer_params + self.d_model

    @property
    def weight_bytes(self) -> int:
        """Bytes of all parameters held as float32."""
        return self.n_params * FLOAT32_BYTES

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V, every layer, one token, float32."""
        return 2 * self.n_layers * self.kv_dim * FLOAT32_BYTES

    def to_dict(self) -> dict:
        return asdict(self)
