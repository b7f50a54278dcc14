"""The LLaMA-shaped decoder: token embedding, pre-norm blocks of RMSNorm, grouped-query causal
attention with rotary position embeddings and a SwiGLU MLP, a final RMSNorm, an untied LM head.
No biases anywhere, as in LLaMA.

Module paths: ``tok``, ``layers.N.attn_norm``, ``layers.N.attn.{q,k,v,out}``,
``layers.N.mlp_norm``, ``layers.N.mlp.{gate,up,down}``, ``norm``, ``head``. LLaMA-3 8B's shapes are
``llama(layers=32, d_model=4096, heads=32, kv_heads=8, hidden=14336, vocab=128256, seq=8192,
theta=500000.0)``: 8,030,261,248 parameters.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .common import ModelAndInputs, causal_mask, check_heads, ready, rotary_tables, seeded
from .layers import CausalSelfAttention, RMSNorm, SwiGLU


class LlamaBlock(nn.Module):
    """x + attn(rmsnorm(x)) with rotary, then x + swiglu(rmsnorm(x))."""

    def __init__(self, d_model: int, heads: int, kv_heads: int, hidden: int):
        super().__init__()
        self.attn_norm = RMSNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, kv_heads, bias=False)
        self.mlp_norm = RMSNorm(d_model)
        self.mlp = SwiGLU(d_model, hidden)

    def forward(self, x: Tensor, mask: Tensor, rotary: tuple[Tensor, Tensor]) -> Tensor:
        x = x + self.attn(self.attn_norm(x), mask, rotary)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    """Tokens (batch, seq) of int64 in, logits (batch, seq, vocab) out."""

    def __init__(self, layers: int, d_model: int, heads: int, kv_heads: int, hidden: int,
                 vocab: int, seq: int, theta: float):
        super().__init__()
        head_dim = check_heads(d_model, heads, kv_heads)
        if head_dim % 2:
            raise ValueError(f"rotary embeddings need an even head width, not {head_dim}")
        self.tok = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(LlamaBlock(d_model, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        cos, sin = rotary_tables(seq, head_dim, theta)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.register_buffer("mask", causal_mask(seq), persistent=False)

    def forward(self, tokens: Tensor) -> Tensor:
        seq = tokens.shape[1]
        x = self.tok(tokens)
        mask = self.mask[:seq, :seq]
        rotary = (self.cos[:seq], self.sin[:seq])
        for layer in self.layers:
            x = layer(x, mask, rotary)
        return self.head(self.norm(x))


def llama(layers: int = 2, d_model: int = 64, heads: int = 8, kv_heads: int = 2, hidden: int = 192,
          vocab: int = 512, seq: int = 16, batch: int = 8, theta: float = 10000.0, *,
          seed: int = 0, device: str | torch.device = "cpu") -> ModelAndInputs:
    """A LLaMA-shaped decoder and a batch of random tokens (batch, seq)."""
    with seeded(seed, device):
        module = ready(Llama(layers, d_model, heads, kv_heads, hidden, vocab, seq, theta))
        return module, (torch.randint(0, vocab, (batch, seq)),)
