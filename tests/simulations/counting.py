"""An observer that adds up, from the arrays the model really multiplies, the FLOPs and bytes the cost model
predicts: shared by the cost model's tests and the batched passes' tests."""

from __future__ import annotations

from simulations import model as M


class Counting(M.Observer):
    """Adds up FLOPs and bytes from the arrays the model hands to its products, as they happen."""

    def __init__(self) -> None:
        self.flops = self.matrix_bytes = self.kv_read = 0

    def matmul(self, x, w, b):
        self.flops += 2 * x.shape[0] * w.shape[0] * w.shape[1]
        self.matrix_bytes += w.nbytes + (b.nbytes if b is not None else 0)

    def attention(self, q, k, v):
        tq, n_heads, head_dim = q.shape
        past = k.shape[1] - tq
        visible_keys = sum(past + i + 1 for i in range(tq))  # query i sees the past and itself
        self.flops += 2 * 2 * head_dim * n_heads * visible_keys  # q·k and probs·v
        self.kv_read += k.nbytes + v.nbytes
