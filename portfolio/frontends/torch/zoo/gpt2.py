"""The GPT-2-shaped decoder: token and position embeddings, pre-norm blocks of LayerNorm, causal
multi-head attention and a GELU MLP, a final LayerNorm, the LM head tied to the token embedding.

Module paths: ``tok``, ``pos``, ``layers.N.attn_norm``, ``layers.N.attn.{q,k,v,out}``,
``layers.N.mlp_norm``, ``layers.N.mlp.{up,down}``, ``norm``, ``head`` (its weight is ``tok``'s).
GPT-2 small is ``gpt2(layers=12, d_model=768, heads=12, vocab=50257, seq=1024)``: 124,439,808
parameters (separate q, k, v projections hold what GPT-2's fused one holds).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .common import ModelAndInputs, causal_mask, ready, seeded
from .layers import CausalSelfAttention, GeluMLP


class GPT2Block(nn.Module):
    """x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads)
        self.mlp_norm = nn.LayerNorm(d_model)
        self.mlp = GeluMLP(d_model, 4 * d_model)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = x + self.attn(self.attn_norm(x), mask)
        return x + self.mlp(self.mlp_norm(x))


class GPT2(nn.Module):
    """Tokens (batch, seq) of int64 in, logits (batch, seq, vocab) out."""

    def __init__(self, layers: int, d_model: int, heads: int, vocab: int, seq: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq, d_model)
        self.layers = nn.ModuleList(GPT2Block(d_model, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tok.weight
        # buffers, not factory ops in forward: positions and the mask are sliced to the input
        self.register_buffer("positions", torch.arange(seq), persistent=False)
        self.register_buffer("mask", causal_mask(seq), persistent=False)

    def forward(self, tokens: Tensor) -> Tensor:
        seq = tokens.shape[1]
        x = self.tok(tokens) + self.pos(self.positions[:seq])
        mask = self.mask[:seq, :seq]
        for layer in self.layers:
            x = layer(x, mask)
        return self.head(self.norm(x))


def gpt2(layers: int = 2, d_model: int = 64, heads: int = 8, vocab: int = 512, seq: int = 16,
         batch: int = 8, *, seed: int = 0, device: str | torch.device = "cpu") -> ModelAndInputs:
    """A GPT-2-shaped decoder and a batch of random tokens (batch, seq)."""
    with seeded(seed, device):
        module = ready(GPT2(layers, d_model, heads, vocab, seq))
        return module, (torch.randint(0, vocab, (batch, seq)),)
