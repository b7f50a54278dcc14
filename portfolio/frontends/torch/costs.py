"""Costs in integer nanoseconds: an op's compute on its local shard, and a redistribution's
collectives, on a device profile (:mod:`.devices`).

Node cost: the roofline of the op on one rank's shards, ``max(FLOPs / peak FLOP/s, bytes moved /
memory bandwidth)``, FLOPs from torch's own formulas (``torch.utils.flop_counter``: matmuls,
convolutions, attention) and one per element for everything else, bytes moved the local inputs
read plus the local outputs written. Ops that only re-describe memory (views, permutes, expands,
getitems) cost nothing. Cached by (op, local shapes, dtypes).

Edge cost: each step of the redistribution (:mod:`.redistribution`) on its axis's link, the
alpha-beta model of a ring collective over the axis's ``n`` devices, ``b`` the bytes one rank
holds before the step, ``B`` the link's bandwidth and ``a`` its latency: all-gather
``(n-1) a + (n-1) b / B``; reduce-scatter and all-to-all ``(n-1) a + (n-1)/n b / B``; all-reduce
twice a reduce-scatter; a local chunk (Replicate -> Shard) copies its output at memory bandwidth.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import torch
from torch.distributed.tensor._dtensor_spec import TensorMeta

from .devices import Device, Link
from .redistribution import Step
from .strategies import Placements, local_shape

NS = 1e9
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "unsqueeze", "squeeze",
    "alias", "detach", "slice", "select", "split", "split_with_sizes", "unbind", "as_strided",
    "view_as", "expand_as", "getitem", "lift_fresh_copy", "unflatten", "flatten", "narrow",
})
"""Ops (by name, overload dropped) that move no data: their cost is 0."""


def op_name(target: Any) -> str:
    """``aten.view.default`` -> ``view``; ``operator.getitem`` -> ``getitem``."""
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return str(packet.__name__)
    return str(getattr(target, "__name__", target))


def seconds_to_ns(seconds: float) -> int:
    """Integer nanoseconds, rounded up: a step that costs anything costs at least 1 ns."""
    return int(math.ceil(seconds * NS)) if seconds > 0 else 0


class CostModel:
    """Costs of nodes and redistributions for one device profile and mesh."""

    def __init__(self, device: Device, mesh_shape: Sequence[int]) -> None:
        self.device = device
        self.mesh_shape = tuple(mesh_shape)
        self.links: list[Link] = device.links(self.mesh_shape)
        self._node_cache: dict[tuple, int] = {}

    # ------------------------------------------------------------------------------ compute
    def node_ns(self, node: torch.fx.Node, inputs: Sequence[tuple[TensorMeta, Placements]],
                outputs: Sequence[tuple[Optional[TensorMeta], Optional[Placements]]]) -> int:
        """The roofline time of ``node`` on one rank, its tensor inputs and outputs placed as given."""
        name = op_name(node.target)
        if node.op != "call_function" or name in VIEW_OPS:
            return 0
        ins = tuple((local_shape(m.shape, p, self.mesh_shape), m.dtype) for m, p in inputs)
        outs = tuple((local_shape(m.shape, p, self.mesh_shape), m.dtype)
                     for m, p in outputs if m is not None and p is not None)
        key = (node.target, ins, outs, _static_args(node))
        found = self._node_cache.get(key)
        if found is None:
            found = self._roofline(node, ins, outs)
            self._node_cache[key] = found
        return found

    def _roofline(self, node: torch.fx.Node, ins: tuple, outs: tuple) -> int:
        moved = sum(math.prod(s) * d.itemsize for s, d in ins + outs)
        flops = _flops(node, ins, outs)
        dtype = str((outs or ins)[0][1]) if (outs or ins) else "float32"
        seconds = max(flops / self.device.peak_flops(dtype), moved / self.device.memory_bandwidth)
        return seconds_to_ns(seconds)

    def update_ns(self, param_bytes: int, states: int) -> int:
        """An optimizer step on one rank's shard of a parameter: read the parameter, its gradient
        and ``states`` state tensors, write the parameter and the states (memory-bound)."""
        moved = param_bytes * (2 + states) + param_bytes * (1 + states)
        return seconds_to_ns(moved / self.device.memory_bandwidth)

    # ------------------------------------------------------------------------------ communication
    def step_seconds(self, step: Step) -> float:
        """One redistribution step on its axis's link (see the module docstring)."""
        n = self.mesh_shape[step.axis]
        link = self.links[step.axis]
        b = step.bytes_in
        if step.kind == "all_gather":
            return (n - 1) * link.latency + (n - 1) * b / link.bandwidth
        if step.kind in ("reduce_scatter", "all_to_all"):
            return (n - 1) * link.latency + (n - 1) / n * b / link.bandwidth
        if step.kind == "all_reduce":
            return 2 * ((n - 1) * link.latency + (n - 1) / n * b / link.bandwidth)
        return step.bytes_out / self.device.memory_bandwidth

    def steps_ns(self, steps: Sequence[Step]) -> int:
        return seconds_to_ns(sum(self.step_seconds(s) for s in steps))


def _static_args(node: torch.fx.Node) -> str:
    """The node's non-tensor arguments, for the cache key (a matmul's FLOPs do not depend on them,
    but a convolution's stride does)."""
    def plain(value: Any) -> Any:
        if isinstance(value, torch.fx.Node):
            return "T"
        if isinstance(value, (list, tuple)):
            return tuple(plain(v) for v in value)
        return value
    return repr(tuple(plain(a) for a in node.args)) + repr(sorted((k, plain(v)) for k, v in node.kwargs.items()))


def _flops(node: torch.fx.Node, ins: tuple, outs: tuple) -> float:
    """FLOPs of the op on local shapes: torch's formula when it has one, else one per element of
    the larger side."""
    from torch.utils.flop_counter import flop_registry

    formula = flop_registry.get(getattr(node.target, "overloadpacket", None))
    elements = max([math.prod(s) for s, _ in ins + outs] or [0])
    if formula is None:
        return float(elements)
    shapes = iter(ins)

    def local(value: Any) -> Any:
        if isinstance(value, torch.fx.Node) and isinstance(value.meta.get("val"), torch.Tensor):
            shape, dtype = next(shapes)
            return torch.empty(shape, dtype=dtype, device="meta")
        if isinstance(value, (list, tuple)):
            return type(value)(local(v) for v in value)
        return value

    try:
        args = [local(a) for a in node.args]
        kwargs = {k: local(v) for k, v in node.kwargs.items()}
        out = [torch.empty(s, dtype=d, device="meta") for s, d in outs]
        return float(formula(*args, out_val=out[0] if len(out) == 1 else tuple(out), **kwargs))
    except Exception:  # a formula that wants what the graph does not say: count elements
        return float(elements)
