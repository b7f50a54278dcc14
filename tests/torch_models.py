"""Tiny PyTorch modules for the front end's tests, each showing one case the zoo does not:
a module torch cannot trace, an op without a sharding rule, shapes no mesh axis divides.
Also a model file for ``portfolio shard`` run as a process (its factories return
``(module, example_inputs)``)."""

from __future__ import annotations

import torch
from torch import nn


class Branchy(nn.Module):
    """Control flow on a tensor's value: ``torch.export`` refuses it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        if y.sum() > 0:
            return y
        return -y


class Bucketed(nn.Module):
    """``searchsorted`` has no DTensor rule in torch 2.13: replicated, and listed."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("bounds", torch.linspace(-1, 1, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return y + torch.searchsorted(self.bounds, y.contiguous()).to(y.dtype)


class Odd(nn.Module):
    """Widths of 3, 5 and 7 and a batch of 3: no axis of a mesh of 8, 2 or 4 divides them."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(5, 7)
        self.down = nn.Linear(7, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


def branchy() -> tuple:
    torch.manual_seed(0)
    return Branchy(), (torch.randn(4, 8),)


def bucketed() -> tuple:
    torch.manual_seed(0)
    return Bucketed(), (torch.randn(8, 8),)


def odd() -> tuple:
    torch.manual_seed(0)
    return Odd(), (torch.randn(3, 5),)


def mlp() -> tuple:
    """The zoo's MLP at its test size (``portfolio shard tests/torch_models.py:mlp``)."""
    from portfolio.frontends.torch.zoo import mlp as zoo_mlp

    return zoo_mlp(d_model=16, hidden=64, layers=1, batch=8)


def broken() -> tuple:
    raise RuntimeError("no such checkpoint")
