"""The blocks the zoo's models are made of: attention, the two MLP kinds, RMSNorm.

Each block names its projections the way the front end reports them (``attn.q``, ``mlp.up``), and
uses only ops that ``torch.export`` keeps plain and DTensor has sharding rules for: linear, bmm
through matmul, softmax, elementwise ops, views. No ``scaled_dot_product_attention``: its
decomposition depends on the backend, and the plain form shows the sharding problem every matmul.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .common import attention_scale, check_heads, rotate


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention; grouped-query when ``kv_heads < heads`` (each key/value
    head serves ``heads // kv_heads`` query heads), rotary when the tables are given."""

    def __init__(self, d_model: int, heads: int, kv_heads: int | None = None, bias: bool = True):
        super().__init__()
        kv_heads = heads if kv_heads is None else kv_heads
        self.heads, self.kv_heads = heads, kv_heads
        self.head_dim = check_heads(d_model, heads, kv_heads)
        self.q = nn.Linear(d_model, heads * self.head_dim, bias=bias)
        self.k = nn.Linear(d_model, kv_heads * self.head_dim, bias=bias)
        self.v = nn.Linear(d_model, kv_heads * self.head_dim, bias=bias)
        self.out = nn.Linear(heads * self.head_dim, d_model, bias=bias)

    def _split(self, x: Tensor, heads: int) -> Tensor:
        """(batch, seq, heads * head_dim) -> (batch, heads, seq, head_dim)."""
        batch, seq, _ = x.shape
        return x.view(batch, seq, heads, self.head_dim).transpose(1, 2)

    def _widen(self, x: Tensor) -> Tensor:
        """Key/value heads repeated for their query heads: (b, kv, s, d) -> (b, heads, s, d),
        by expand and reshape (static shapes, no repeat_interleave)."""
        group = self.heads // self.kv_heads
        if group == 1:
            return x
        batch, _, seq, dim = x.shape
        wide = x[:, :, None].expand(batch, self.kv_heads, group, seq, dim)
        return wide.reshape(batch, self.heads, seq, dim)

    def forward(self, x: Tensor, mask: Tensor, rotary: tuple[Tensor, Tensor] | None = None) -> Tensor:
        batch, seq, _ = x.shape
        q = self._split(self.q(x), self.heads)
        k = self._split(self.k(x), self.kv_heads)
        v = self._split(self.v(x), self.kv_heads)
        if rotary is not None:
            q, k = rotate(q, *rotary), rotate(k, *rotary)
        k, v = self._widen(k), self._widen(v)
        scores = torch.matmul(q, k.transpose(-2, -1)) * attention_scale(self.head_dim) + mask
        mixed = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(mixed.transpose(1, 2).reshape(batch, seq, self.heads * self.head_dim))


class GeluMLP(nn.Module):
    """up, GELU, down: GPT-2's feed-forward block (tanh GELU, as GPT-2) and the MLP model's layer."""

    def __init__(self, d_model: int, hidden: int, bias: bool = True):
        super().__init__()
        self.up = nn.Linear(d_model, hidden, bias=bias)
        self.down = nn.Linear(hidden, d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(nn.functional.gelu(self.up(x), approximate="tanh"))


class SwiGLU(nn.Module):
    """LLaMA's feed-forward block: down(silu(gate(x)) * up(x)), no biases."""

    def __init__(self, d_model: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(d_model, hidden, bias=False)
        self.up = nn.Linear(d_model, hidden, bias=False)
        self.down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(nn.functional.silu(self.gate(x)) * self.up(x))


class RMSNorm(nn.Module):
    """x / rms(x) * weight, written out (pow, mean, add, rsqrt, mul) rather than ``nn.RMSNorm``,
    whose aten form varies across releases."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
