"""The MLP: a stack of up projection, GELU, down projection (``layers.N.up``, ``layers.N.down``).

The textbook tensor-parallel plan is visible here: each up projection column-parallel, each down
projection row-parallel, the batch data-parallel on the other mesh axis.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .common import ModelAndInputs, ready, seeded
from .layers import GeluMLP


class MLP(nn.Module):
    """``layers`` blocks of up, GELU, down, each from and back to ``d_model`` wide."""

    def __init__(self, d_model: int, hidden: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(GeluMLP(d_model, hidden) for _ in range(layers))

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def mlp(d_model: int = 64, hidden: int = 256, layers: int = 2, batch: int = 16, *,
        seed: int = 0, device: str | torch.device = "cpu") -> ModelAndInputs:
    """An MLP and an input batch (batch, d_model) of standard normal numbers."""
    with seeded(seed, device):
        return ready(MLP(d_model, hidden, layers)), (torch.randn(batch, d_model),)
