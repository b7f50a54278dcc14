"""The zoo's index: each model's factory, a line about it, the aten ops its inference graph holds,
and its real size; ``describe`` prints it with parameter counts computed on the meta device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .common import ModelAndInputs, parameter_count
from .gpt2 import gpt2
from .llama import llama
from .mlp import mlp
from .moe import moe

_SHAPING = frozenset({"aten.view.default", "aten.permute.default"})
_DECODER = _SHAPING | frozenset({
    "aten.embedding.default", "aten.slice.Tensor", "aten.alias.default", "aten.add.Tensor",
    "aten.mul.Tensor", "aten.mm.default", "aten.bmm.default", "aten.expand.default",
    "aten.clone.default", "aten._softmax.default"})


@dataclass(frozen=True)
class Entry:
    """One model of the zoo."""

    factory: Callable[..., ModelAndInputs]
    description: str
    inference_ops: frozenset[str]
    """Call targets of ``torch.export.export(m, x).run_decompositions()`` at the test sizes
    (torch 2.13; ``getitem`` is Python's ``operator.getitem`` on a multi-output op)."""
    real: dict[str, Any] = field(default_factory=dict)
    """Arguments for the real-size model (a published model's shapes)."""


ZOO: dict[str, Entry] = {
    "mlp": Entry(mlp, "MLP: layers of up projection, GELU, down projection",
                 frozenset({"aten.permute.default", "aten.addmm.default", "aten.gelu.default"}),
                 dict(d_model=8192, hidden=32768, layers=2, batch=1024)),
    "gpt2": Entry(gpt2, "GPT-2-shaped decoder: embeddings, LayerNorm, causal attention, GELU MLP, "
                        "tied head",
                  _DECODER | {"aten.native_layer_norm.default", "getitem", "aten.addmm.default",
                              "aten.gelu.default"},
                  dict(layers=12, d_model=768, heads=12, vocab=50257, seq=1024)),
    "llama": Entry(llama, "LLaMA-shaped decoder: RMSNorm, grouped-query attention with rotary "
                          "embeddings, SwiGLU MLP",
                   _DECODER | {"getitem", "aten.pow.Tensor_Scalar", "aten.mean.dim",
                               "aten.rsqrt.default", "aten.neg.default", "aten.cat.default",
                               "aten.split_with_sizes.default", "aten.unsqueeze.default",
                               "aten.sigmoid.default"},
                   dict(layers=32, d_model=4096, heads=32, kv_heads=8, hidden=14336,
                        vocab=128256, seq=8192, theta=500000.0)),
    "moe": Entry(moe, "mixture-of-experts layer: router, top-k gating, stacked GELU experts "
                      "(dense dispatch)",
                 _SHAPING | {"aten.mm.default", "aten._softmax.default", "aten.topk.default",
                             "getitem", "aten.slice.Tensor", "aten.ge.Tensor", "aten.mul.Tensor",
                             "aten.sum.dim_IntList", "aten.div.Tensor", "aten.unsqueeze.default",
                             "aten.expand.default", "aten.bmm.default", "aten.gelu.default"},
                 dict(d_model=4096, hidden=14336, experts=8, top_k=2, batch=1, seq=4096)),
}
"""The models by name (``portfolio shard`` takes any factory; these are the ones shipped)."""


def count_parameters(name: str, **sizes: Any) -> int:
    """Parameters of zoo model ``name`` at ``sizes`` (its defaults otherwise), counted from shapes
    on the meta device: a real-size model costs no memory."""
    module, _ = ZOO[name].factory(**sizes, device="meta")
    return parameter_count(module)


def describe() -> str:
    """One line a model: its name, what it is, its parameters at the test and the real size."""
    lines = []
    for name, entry in ZOO.items():
        tiny, real = count_parameters(name), count_parameters(name, **entry.real)
        lines.append(f"{name}: {entry.description}; {tiny:,} parameters (test size), "
                     f"{real:,} at real size")
    return "\n".join(lines)
