"""The mixture-of-experts layer: a router, top-k gating, experts as GELU MLPs, in a shape-static
form that ``torch.export`` traces without data-dependent shapes.

Dense dispatch: every expert runs on every token, and each token's outputs are summed weighted by
its gates, which are the router's softmax kept on the token's k largest entries (a mask: the
probability >= the k-th largest, by ``topk``) and renormalised to sum to one. The experts' weights
are stacked, one (experts, in, out) tensor per projection applied with ``bmm``, so sharding the
expert dimension is expert parallelism. Ties at the k-th probability keep every tied expert (with
random weights and inputs, a measure-zero event).

Module paths: ``router``, ``experts.up``, ``experts.down``. Mixtral's layer shapes (with GELU
experts of two matrices instead of SwiGLU's three) are ``moe(d_model=4096, hidden=14336,
experts=8, top_k=2)``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .common import INIT_STD, ModelAndInputs, ready, seeded


class StackedLinear(nn.Module):
    """One bias-free linear map per expert: (experts, tokens, in) -> (experts, tokens, out)."""

    def __init__(self, experts: int, d_in: int, d_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(experts, d_in, d_out))
        nn.init.normal_(self.weight, std=INIT_STD)

    def forward(self, x: Tensor) -> Tensor:
        return torch.bmm(x, self.weight)


class Experts(nn.Module):
    """Every expert's MLP (up, GELU, down) on every token: (tokens, d) -> (experts, tokens, d)."""

    def __init__(self, experts: int, d_model: int, hidden: int):
        super().__init__()
        self.count = experts
        self.up = StackedLinear(experts, d_model, hidden)
        self.down = StackedLinear(experts, hidden, d_model)

    def forward(self, x: Tensor) -> Tensor:
        wide = x.unsqueeze(0).expand(self.count, *x.shape)
        return self.down(nn.functional.gelu(self.up(wide), approximate="tanh"))


class MoE(nn.Module):
    """(batch, seq, d_model) in and out; each token mixes its top-k experts' outputs."""

    def __init__(self, d_model: int, hidden: int, experts: int, top_k: int):
        super().__init__()
        if not 1 <= top_k <= experts:
            raise ValueError(f"top_k={top_k} must lie in 1..experts={experts}")
        self.top_k = top_k
        self.router = nn.Linear(d_model, experts, bias=False)
        self.experts = Experts(experts, d_model, hidden)

    def gates(self, tokens: Tensor) -> Tensor:
        """(tokens, experts): the router's probabilities on each token's top-k experts, zero
        elsewhere, renormalised."""
        probs = torch.softmax(self.router(tokens), dim=-1)
        kth = probs.topk(self.top_k, dim=-1).values[:, -1:]
        kept = probs * (probs >= kth)  # a bool factor: no dtype conversion in the graph
        return kept / kept.sum(dim=-1, keepdim=True)

    def forward(self, x: Tensor) -> Tensor:
        tokens = x.reshape(-1, x.shape[-1])
        gates = self.gates(tokens)
        mixed = (self.experts(tokens) * gates.t().unsqueeze(-1)).sum(dim=0)
        return mixed.view(x.shape)


def moe(d_model: int = 64, hidden: int = 128, experts: int = 8, top_k: int = 2, batch: int = 4,
        seq: int = 8, *, seed: int = 0, device: str | torch.device = "cpu") -> ModelAndInputs:
    """A mixture-of-experts layer and an input (batch, seq, d_model) of standard normal numbers."""
    with seeded(seed, device):
        module = ready(MoE(d_model, hidden, experts, top_k))
        return module, (torch.randn(batch, seq, d_model),)
