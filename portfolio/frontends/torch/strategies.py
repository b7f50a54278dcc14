"""Each node's options: the placements DTensor's own sharding rules allow, on the whole mesh.

For an op, the rule registered with DTensor's sharding propagator is asked with every placement its
producers may take (an ``OpStrategy`` of all of them per tensor argument, a ``TupleStrategy`` for a
list argument), so what it returns is every combination the op accepts. Rules of two kinds:
full-mesh strategies (``op_strategy_funcs``), called as they are, and single-mesh-dimension rules
(``op_single_dim_strategy_funcs``), whose placeholders are filled with plain ``Shard`` here and
which are expanded to every mesh axis by torch's ``expand_to_full_mesh_op_strategy`` (the
propagator's own expansion asserts when an input has several placements). Torch's redistribution
cost rows are not used (their cost here is ours, :mod:`.costs`): while the rules run, the cost
function they call is a constant, which is what made the build slow (techniques.md, section 11).

Kept: options whose every input and output is evenly sharded (each sharded dimension divisible by
the devices sharding it) and without ``_StridedShard``; duplicates removed. Placeholders
(parameters, buffers, inputs) take every combination of ``Replicate`` and ``Shard(d)`` per axis.
An op with no rule, or whose rule fails, gets one option: everything replicated; it is listed
(:attr:`NodeOptions.fallback`), never dropped. A factory op with no tensor input (``arange``,
``full``) makes a replicated tensor.
"""

from __future__ import annotations

import itertools
import math
import operator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

import torch
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.distributed.tensor._op_schema import OpSchema, OpSpec, OpStrategy, TupleStrategy
from torch.distributed.tensor.placement_types import Partial, Replicate, Shard, _StridedShard

Placements = tuple  # one Placement per mesh axis
"""A tensor's placement on the mesh: one :class:`Placement` per axis, outer axis first."""


@dataclass
class NodeOptions:
    """The strategies of one node.

    ``outputs[k]``: strategy k's output placements (for an op with several outputs, a tuple with one
    entry per output, None where the output is not a tensor). ``inputs[k][a]``: the placements
    strategy k needs for its a-th tensor argument, produced by node ``sources[a]`` (its element
    ``source_items[a]`` when that node has several outputs). ``kind``: ``placeholder``, ``rule``
    (DTensor's rule), ``getitem``, ``factory`` or ``fallback`` (replicated, ``why``)."""

    outputs: list
    inputs: list[tuple]
    sources: list[str]
    source_items: list[Optional[int]]
    kind: str
    why: str = ""
    metas: Any = None

    def __len__(self) -> int:
        return len(self.outputs)


@dataclass
class Fallbacks:
    """Ops that fell back to replication, by op name: their node names and why (the first reason)."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)

    def add(self, op: str, node: str, why: str) -> None:
        self.nodes.setdefault(op, []).append(node)
        self.why.setdefault(op, why)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.nodes.values())


def tensor_meta(value: Any) -> Optional[TensorMeta]:
    """The :class:`TensorMeta` of a traced value (a fake tensor), or None for a non-tensor."""
    if isinstance(value, torch.Tensor):
        return TensorMeta(shape=value.shape, stride=value.stride(), dtype=value.dtype)
    return None


def is_even(shape: Sequence[int], placements: Placements, mesh_shape: Sequence[int]) -> bool:
    """Every sharded dimension divisible by the devices sharding it (no ``_StridedShard``)."""
    ways = [1] * len(shape)
    for axis, p in enumerate(placements):
        if isinstance(p, _StridedShard):
            return False
        if isinstance(p, Shard):
            if p.dim >= len(shape) or p.dim < -len(shape):
                return False
            ways[p.dim % len(shape)] *= mesh_shape[axis]
    return all(size % w == 0 and (w == 1 or size >= w) for size, w in zip(shape, ways))


def placeholder_placements(shape: Sequence[int], mesh_shape: Sequence[int]) -> list[Placements]:
    """Every combination of ``Replicate`` and ``Shard(d)`` per axis that shards ``shape`` evenly."""
    per_axis = [Replicate()] + [Shard(d) for d in range(len(shape))]
    return [combo for combo in itertools.product(per_axis, repeat=len(mesh_shape))
            if is_even(shape, combo, mesh_shape)]


def spec(mesh: DeviceMesh, placements: Placements, meta: Optional[TensorMeta]) -> DTensorSpec:
    return DTensorSpec(mesh, tuple(placements), tensor_meta=meta)


def as_strategy(mesh: DeviceMesh, placements: Sequence[Placements], meta: TensorMeta) -> OpStrategy:
    """A producer's options as the ``OpStrategy`` a rule takes for an argument."""
    return OpStrategy([OpSpec(spec(mesh, p, meta)) for p in placements])


@contextmanager
def _no_torch_costs() -> Iterator[None]:
    """While the rules run, the redistribution cost they attach to each option is 0: this module
    prices edges itself, cached (:mod:`.costs`), and torch's planner is what made builds slow."""
    from torch.distributed.tensor._ops import utils

    saved = utils.redistribute_cost
    utils.redistribute_cost = lambda current, target: 0.0
    try:
        yield
    finally:
        utils.redistribute_cost = saved


def _placements_of(s: Optional[DTensorSpec]) -> Optional[Placements]:
    return None if s is None else tuple(s.placements)


class Rules:
    """DTensor's registered rules, asked on one mesh."""

    def __init__(self, mesh: DeviceMesh) -> None:
        self.mesh = mesh
        self.mesh_shape = tuple(mesh.shape)
        self.propagator = DTensor._op_dispatcher.sharding_propagator

    def has_rule(self, op: Any) -> bool:
        p = self.propagator
        return op in p.op_strategy_funcs or op in p.op_single_dim_strategy_funcs

    def ask(self, op: Any, args: tuple, kwargs: dict, out_meta: Any) -> list[OpSpec]:
        """Every option of ``op`` given arguments holding producers' ``OpStrategy``s."""
        p = self.propagator
        with _no_torch_costs():
            if op in p.op_strategy_funcs:
                schema = OpSchema(op, args, kwargs, schema_info=p.op_to_schema_info.get(op))
                result = p.op_strategy_funcs[op](schema)
            else:
                result = self._single_dim(op, args, kwargs, out_meta)
        if isinstance(result, TupleStrategy):
            raise NotImplementedError("a tuple strategy (independent outputs) is not supported")
        return list(result.strategies)

    def _single_dim(self, op: Any, args: tuple, kwargs: dict, out_meta: Any) -> OpStrategy:
        """A single-mesh-dimension rule expanded to every axis (placeholders as plain Shard)."""
        from torch.distributed.tensor._ops.single_dim_strategy import (
            _fill_single_dim_strategy_placeholders, _insert_single_dim_replication_strategy)
        from torch.distributed.tensor._ops.utils import expand_to_full_mesh_op_strategy

        info = self.propagator.op_single_dim_strategy_funcs[op]
        schema = OpSchema(op, args, kwargs,
                          schema_info=self.propagator.op_to_schema_info_for_single_dim_strategy.get(op))
        num_inputs = len(schema.args_strategy) + len(schema.kwargs_strategy)
        rules = info.func(op, schema.args_meta, schema.kwargs_meta)
        num_outputs = (len(rules[0]) - num_inputs) if rules else (
            1 if isinstance(out_meta, TensorMeta) else len(out_meta or ()))
        rules = _insert_single_dim_replication_strategy(rules, num_outputs, num_inputs, out_meta)
        rules = _fill_single_dim_strategy_placeholders({Shard(0)}, rules)
        return expand_to_full_mesh_op_strategy(
            self.mesh, schema, rules, output_tensor_meta=out_meta, input_index=num_outputs,
            allow_uneven_sharding=False)


def _tensor_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The node's tensor arguments in the order a rule's ``input_specs`` lists them: the flattened
    positional arguments, then the keyword arguments."""
    found: list[torch.fx.Node] = []
    for value in itertools.chain(node.args, node.kwargs.values()):
        for leaf in torch.utils._pytree.tree_leaves(value):
            if isinstance(leaf, torch.fx.Node) and isinstance(leaf.meta.get("val"), torch.Tensor):
                found.append(leaf)
    return found


def _dedupe(specs: list[tuple[Any, tuple]]) -> list[tuple[Any, tuple]]:
    seen: set = set()
    out = []
    for item in specs:
        key = repr(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _output_placements(op_spec: OpSpec) -> Any:
    outs = op_spec.output_specs
    if isinstance(outs, DTensorSpec):
        return tuple(outs.placements)
    return tuple(_placements_of(s) for s in outs)


def _even_spec(outputs: Any, metas: Any, inputs: tuple, shapes: list, mesh_shape: tuple) -> bool:
    """Every input and output of the option evenly sharded, none ``_StridedShard`` (shapes from
    the traced graph: a rule's specs may carry none)."""
    if isinstance(metas, TensorMeta):
        outputs, metas = (outputs,), (metas,)
    for placements, meta in zip(outputs, metas):
        if placements is not None and meta is not None and \
                not is_even(meta.shape, placements, mesh_shape):
            return False
    return all(is_even(shape, p, mesh_shape) for p, shape in zip(inputs, shapes))


class OptionBuilder:
    """The options of every node of a graph, in graph order (producers first)."""

    def __init__(self, mesh: DeviceMesh) -> None:
        self.mesh = mesh
        self.mesh_shape = tuple(mesh.shape)
        self.rules = Rules(mesh)
        self.options: dict[str, NodeOptions] = {}
        self.fallbacks = Fallbacks()

    # ------------------------------------------------------------------------------ per node
    def placeholder(self, node: torch.fx.Node) -> NodeOptions:
        meta = tensor_meta(node.meta["val"])
        outs = placeholder_placements(meta.shape, self.mesh_shape)
        return self._keep(node, NodeOptions(outs, [() for _ in outs], [], [], "placeholder", metas=meta))

    def call(self, node: torch.fx.Node) -> Optional[NodeOptions]:
        """The node's options (None for a node that makes no tensor)."""
        val = node.meta.get("val")
        if node.target is operator.getitem:
            return self._keep(node, self._getitem(node))
        metas = tensor_meta(val) if isinstance(val, torch.Tensor) else (
            tuple(tensor_meta(v) for v in val) if isinstance(val, (tuple, list)) else None)
        if metas is None or (isinstance(metas, tuple) and all(m is None for m in metas)):
            return None
        sources = _tensor_args(node)
        if not sources:
            return self._keep(node, self._replicated(node, metas, [], "factory"))
        op = node.target
        if not self.rules.has_rule(op):
            return self._keep(node, self._fallback(node, metas, sources, "no sharding rule"))
        try:
            specs = self._ask(node, metas)
        except Exception as exc:  # a rule that refuses some placements (the view rule raises on
            specs = self._ask_one_by_one(node, metas, sources)  # an uneven shard): ask one by one
            if not specs:
                return self._keep(node, self._fallback(node, metas, sources, _reason(exc)))
        shapes = [s.meta["val"].shape for s in sources]
        pairs = _dedupe([(_output_placements(s), tuple(tuple(i.placements) for i in s.input_specs))
                         for s in specs
                         if s.input_specs is not None and len(s.input_specs) == len(sources)])
        pairs = [(o, i) for o, i in pairs if _even_spec(o, metas, i, shapes, self.mesh_shape)
                 and self._inputs_offered(sources, i)]
        if not pairs:
            return self._keep(node, self._fallback(node, metas, sources, "no even option"))
        return self._keep(node, NodeOptions([o for o, _ in pairs], [i for _, i in pairs],
                                            [s.name for s in sources], [None] * len(sources),
                                            "rule", metas=metas))

    # ------------------------------------------------------------------------------ helpers
    def _keep(self, node: torch.fx.Node, options: NodeOptions) -> NodeOptions:
        self.options[node.name] = options
        return options

    def _offered(self, name: str) -> list:
        """The placements a producer offers (for an element of a multi-output node: its getitem's)."""
        return self.options[name].outputs

    def _inputs_offered(self, sources: list, inputs: tuple) -> bool:
        """Whether each input placement is one its producer can be redistributed to (not a Partial
        the producer cannot make: Replicate -> Partial is refused by DTensor's redistribute)."""
        return all(any(reachable(o, want) for o in self._offered(src.name))
                   for src, want in zip(sources, inputs))

    def _strategy_of(self, node: torch.fx.Node) -> OpStrategy:
        meta = tensor_meta(node.meta["val"])
        return as_strategy(self.mesh, self._offered(node.name), meta)

    def _arg(self, value: Any) -> Any:
        if isinstance(value, torch.fx.Node):
            if isinstance(value.meta.get("val"), torch.Tensor):
                return self._strategy_of(value)
            return value.meta.get("val")
        if isinstance(value, (list, tuple)):
            items = [self._arg(v) for v in value]
            if items and all(isinstance(i, OpStrategy) for i in items):
                return TupleStrategy(items)
            return type(value)(items)
        return value

    def _ask(self, node: torch.fx.Node, metas: Any) -> list[OpSpec]:
        args = tuple(self._arg(a) for a in node.args)
        kwargs = {k: self._arg(v) for k, v in node.kwargs.items()}
        return self.rules.ask(node.target, args, kwargs, metas)

    def _ask_one_by_one(self, node: torch.fx.Node, metas: Any, sources: list) -> list[OpSpec]:
        """For an op of one tensor argument whose rule raised: the rule asked with each of the
        producer's placements alone, the options of those it accepts."""
        if len({s.name for s in sources}) != 1:
            return []
        name = sources[0].name
        offered = self.options[name].outputs
        found: list[OpSpec] = []
        try:
            for placements in offered:
                self.options[name].outputs = [placements]
                try:
                    found.extend(self._ask(node, metas))
                except Exception:  # this placement is refused; the others may not be
                    continue
        finally:
            self.options[name].outputs = offered
        return found

    def _getitem(self, node: torch.fx.Node) -> NodeOptions:
        src, index = node.args
        outs = self.options[src.name].outputs
        mine = _dedupe([(o[index], ()) for o in outs if o[index] is not None])
        places = [o for o, _ in mine]
        meta = tensor_meta(node.meta["val"])
        return NodeOptions(places, [(p,) for p in places], [src.name], [index], "getitem", metas=meta)

    def _replicated(self, node: torch.fx.Node, metas: Any, sources: list, kind: str) -> NodeOptions:
        rep = tuple(Replicate() for _ in self.mesh_shape)
        out = rep if isinstance(metas, TensorMeta) else tuple(None if m is None else rep for m in metas)
        return NodeOptions([out], [tuple(rep for _ in sources)], [s.name for s in sources],
                           [None] * len(sources), kind, metas=metas)

    def _fallback(self, node: torch.fx.Node, metas: Any, sources: list, why: str) -> NodeOptions:
        self.fallbacks.add(str(node.target), node.name, why)
        options = self._replicated(node, metas, sources, "fallback")
        options.why = why
        return options


def reachable(have: Placements, want: Placements) -> bool:
    """Whether DTensor's redistribution goes from ``have`` to ``want``: a Partial is kept, or a
    sum's shares made from a replicated tensor (a bias added to a row-parallel product: no
    communication); never made from a shard, nor from another kind of Partial (a max's or a
    min's shares of a replicated tensor would be legal, and of no use)."""
    return all(h == w or (isinstance(h, Replicate) and w.reduce_op == "sum")
               for h, w in zip(have, want) if isinstance(w, Partial))


def _reason(exc: BaseException) -> str:
    """An exception as a short reason (its type and first line)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:120]}" if text else type(exc).__name__


def placement_text(p: Any) -> str:
    """``Shard(0)``, ``Replicate()``, ``Partial(sum)``."""
    if isinstance(p, Shard):
        return f"Shard({p.dim})"
    if isinstance(p, Replicate):
        return "Replicate()"
    if isinstance(p, Partial):
        return f"Partial({p.reduce_op})"
    return str(p)


def placements_text(ps: Any) -> list:
    """One text per axis; for an op with several outputs, one list per output."""
    if ps is None:
        return []
    if ps and isinstance(ps[0], tuple) or (ps and ps[0] is None):
        return [placements_text(p) for p in ps]
    return [placement_text(p) for p in ps]


def local_shape(shape: Sequence[int], placements: Placements, mesh_shape: Sequence[int]) -> tuple:
    """A tensor's shape on one rank (even sharding: every rank's is the same)."""
    out = list(shape)
    for axis, p in enumerate(placements):
        if isinstance(p, Shard):
            out[p.dim % len(out)] //= mesh_shape[axis]
    return tuple(out)


def local_bytes(meta: Optional[TensorMeta], placements: Optional[Placements],
                mesh_shape: Sequence[int]) -> int:
    """Bytes of a tensor on one rank (0 for a non-tensor)."""
    if meta is None or placements is None:
        return 0
    return math.prod(local_shape(meta.shape, placements, mesh_shape)) * meta.dtype.itemsize
