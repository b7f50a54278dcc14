"""What every zoo model shares: seeded construction, weight initialisation, the masks, the loss.

A factory builds its module and its example inputs inside :func:`seeded`, so the same arguments
give the same weights and inputs without touching the caller's random state, and on the device it
is given (``"meta"`` builds a real-size model from shapes alone, allocating nothing).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
from torch import Tensor, nn

ModelAndInputs = tuple[nn.Module, tuple[Tensor, ...]]
"""What a factory returns: the module (random weights, eval mode) and its example inputs."""

INIT_STD = 0.02
"""Standard deviation of every weight matrix and embedding (GPT-2's choice): outputs stay O(1)."""

MASKED = -1e9
"""The causal mask's additive entry: finite, so a sharded sum of masked scores never meets inf - inf."""


@contextlib.contextmanager
def seeded(seed: int, device: str | torch.device) -> Iterator[None]:
    """Build under ``seed`` on ``device``, leaving the caller's random state as it was."""
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed)
        yield


def init_weights(module: nn.Module) -> None:
    """Normal(0, INIT_STD) weights, zero biases, unit norm gains: the same for every model, so a
    model's numbers depend only on its shapes and seed."""
    for sub in module.modules():
        if isinstance(sub, (nn.Linear, nn.Embedding)):
            nn.init.normal_(sub.weight, std=INIT_STD)
            if getattr(sub, "bias", None) is not None:
                nn.init.zeros_(sub.bias)


def ready(module: nn.Module) -> nn.Module:
    """``module`` with its weights initialised, in eval mode (no dropout anywhere: deterministic)."""
    init_weights(module)
    return module.eval()


def causal_mask(seq: int) -> Tensor:
    """(seq, seq) additive mask: 0 on and below the diagonal, MASKED above (a buffer, sliced to the
    input's length, so attention uses an add and no comparison or factory op)."""
    upper = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    return torch.zeros(seq, seq).masked_fill(upper, MASKED)


def rotary_tables(seq: int, head_dim: int, theta: float) -> tuple[Tensor, Tensor]:
    """(seq, head_dim) cosine and sine tables of rotary position embeddings, in the half-split
    layout: channel i and i + head_dim/2 rotate together by position * theta^(-2i/head_dim)."""
    half = head_dim // 2
    freq = theta ** (-torch.arange(half, dtype=torch.float32) * 2 / head_dim)
    angles = torch.arange(seq, dtype=torch.float32)[:, None] * freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotary embedding of ``x`` (..., seq, head_dim) with real arithmetic only (split, neg, cat,
    mul, add: no complex numbers, which DTensor has no rules for; a split rather than two slices,
    whose backward would zero-fill a ``full`` tensor, a factory op DTensor has no rule for)."""
    first, second = x.split(x.shape[-1] // 2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin


def loss(output: Tensor) -> Tensor:
    """The zoo's training loss: the mean of the squared output, a scalar every model's output
    gives (``aten.pow.Tensor_Scalar`` and ``aten.mean.default``; both have DTensor rules)."""
    return output.pow(2).mean()


def parameter_count(module: nn.Module) -> int:
    """Parameters of ``module``, a tied weight counted once (works on the meta device)."""
    return sum(p.numel() for p in module.parameters())


def check_heads(d_model: int, heads: int, kv_heads: int) -> int:
    """The head width, after checking the sizes fit together (a clear ValueError otherwise)."""
    if d_model % heads:
        raise ValueError(f"d_model={d_model} is not a multiple of heads={heads}")
    if heads % kv_heads:
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
    return d_model // heads


def attention_scale(head_dim: int) -> float:
    """1/sqrt(head_dim), the scores' scale."""
    return 1.0 / math.sqrt(head_dim)
