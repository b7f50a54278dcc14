"""A module's plan in words, one line per module with parameters, per mesh axis:

- ``column-parallel``: a linear layer's weight split by output features (``Shard(0)`` of
  ``[out, in]``), used where it lies; ``row-parallel``: split by input features (``Shard(1)``);
  an embedding's table split by vocabulary (``vocabulary-parallel``) or by its width
  (``column-parallel``); any other weight: ``weight dim D sharded``;
- ``weight sharded, gathered before use (FSDP)``: sharded, then all-gathered on that axis for
  its op;
- ``data-parallel``: the weight replicated and the module's output split on its first (batch)
  dimension; ``activations sharded on dim D`` for another dimension;
- ``replicated``: neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch.distributed.tensor.placement_types import Partial, Shard

from .build import Built
from .collectives import edge_steps


def _weight_words(kind: str, dim: int, ndim: int) -> str:
    if kind == "Embedding" and ndim == 2:
        return "vocabulary-parallel" if dim == 0 else "column-parallel"
    if ndim == 2 and kind in ("Linear", "NonDynamicallyQuantizableLinear", "LazyLinear"):
        return "column-parallel" if dim == 0 else "row-parallel"
    if ndim == 2:
        return "column-parallel" if dim == 0 else "row-parallel"
    return f"weight dim {dim} sharded"


def _gathered_axes(built: Built, plan: np.ndarray, node: int) -> set[int]:
    """Axes on which the parameter is all-gathered on its way to an op that uses it."""
    axes: set[int] = set()
    for e, (u, v, args) in enumerate(built.edges):
        if u != node or all(a == -1 for a, _ in args):
            continue
        for src, _dst, steps in edge_steps(built, plan, e):
            if src == built.nodes[node]:
                axes.update(s.axis for s in steps if s.kind == "all_gather")
    return axes


def _module_output(built: Built, path: str) -> Any:
    """The last forward node made in module ``path`` (its output is the module's)."""
    traced = built.traced
    last = None
    for i, name in enumerate(built.nodes):
        if traced.module_of.get(name) == path and name not in traced.backward \
                and name not in traced.param_of and name not in traced.buffer_of:
            last = i
    return last


def axis_words(built: Built, plan: np.ndarray, weight: int, output: Any, axis: int,
               kind: str, gathered: set[int]) -> str:
    w = built.options[weight].outputs[plan[weight]][axis]
    ndim = len(built.options[weight].metas.shape)
    if isinstance(w, Shard):
        if axis in gathered:
            return "weight sharded, gathered before use (FSDP)"
        return _weight_words(kind, w.dim, ndim)
    if output is not None:
        out = built.options[output].outputs[plan[output]]
        p = out[axis] if out and not isinstance(out[0], tuple) and out[0] is not None else None
        if isinstance(p, Shard):
            return "data-parallel" if p.dim == 0 else f"activations sharded on dim {p.dim}"
        if isinstance(p, Partial):
            return "output as partial sums"
    return "replicated"


def module_lines(built: Built, plan: np.ndarray) -> dict[str, str]:
    """Per module with parameters, its plan in words (see the module docstring)."""
    traced = built.traced
    by_module: dict[str, list[tuple[str, str]]] = {}
    for node, param in traced.param_of.items():
        path, _, attr = param.rpartition(".")
        by_module.setdefault(path, []).append((attr, node))
    lines: dict[str, str] = {}
    for path, params in by_module.items():
        node = dict(params).get("weight") or params[0][1]
        weight = built.index(node)
        kind = traced.module_types.get(path, "")
        output = _module_output(built, path)
        gathered = _gathered_axes(built, plan, weight)
        words = [axis_words(built, plan, weight, output, a, kind, gathered)
                 for a in range(len(built.mesh_shape))]
        lines[path or "<root>"] = _join(words)
    return lines


def _join(words: list[str]) -> str:
    """``column-parallel on axis 1, data-parallel on axis 0``: what the weight does first, then
    what the activations do, then replicated axes; equal words joined (``replicated on axes 0
    and 1``)."""
    order: dict[str, list[int]] = {}
    for axis, word in enumerate(words):
        order.setdefault(word, []).append(axis)

    def rank(word: str) -> int:
        if word == "replicated":
            return 2
        return 1 if word == "data-parallel" or word.startswith(("activations", "output")) else 0
    parts = sorted(order.items(), key=lambda kv: (rank(kv[0]), kv[1]))
    out = []
    for word, axes in parts:
        where = f"axis {axes[0]}" if len(axes) == 1 else \
            "axes " + ", ".join(map(str, axes[:-1])) + f" and {axes[-1]}"
        out.append(f"{word} on {where}")
    return ", ".join(out)
