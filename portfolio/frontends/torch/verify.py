"""Run the plan on every rank, in this process, and check it against the unsharded module.

Under ``LocalTensorMode`` every DTensor holds each rank's shard, and a collective computes what the
ranks would exchange. The traced graph is run node by node: each input is redistributed (DTensor's
own ``redistribute``) to the placement the node's planned strategy needs, the op runs through
DTensor's dispatch, and its output must have the planned placement. Parameters start in their
planned placement; in training, each gradient is moved to its parameter's placement and kept there
with the optimizer's state (zeros of the parameter's shard), as the problem holds them.

Checked, each difference named with its node:
- outputs (and in training every parameter's gradient) close to the unsharded module's
  (:func:`close`);
- per rank, the peak over the steps of the bytes of the tensors alive (a tensor is freed after its
  last user's step) equals the problem's peak for the plan;
- the collectives executed (counted by ``CommDebugMode``) equal, kind by kind, those the plan
  implies;
- every op's output placement is the planned one.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch.distributed.tensor import DTensor, distribute_tensor
from torch.distributed.tensor.placement_types import Replicate
from torch.utils import _pytree as pytree

from .memory import bytes_text
from .plan import ShardPlan
from .trace import OPTIMIZER_STATES, _loss

RTOL, ATOL = 1e-4, 1e-5
"""How close a sharded result must be to the unsharded one: its largest difference at most
``ATOL + RTOL * (the unsharded tensor's largest magnitude)`` (float32 sums in another order differ
by a few units in the last place of the largest terms, not of each element)."""


def close(got: torch.Tensor, ref: torch.Tensor) -> tuple[bool, float]:
    """(within tolerance, the largest absolute difference) of two tensors of one shape."""
    if got.numel() == 0:
        return True, 0.0
    diff = float((got.double() - ref.double()).abs().max())
    return diff <= ATOL + RTOL * float(ref.double().abs().max()), diff

COMM_KINDS = {"all_reduce": "all_reduce", "all_gather_into_tensor": "all_gather",
              "reduce_scatter_tensor": "reduce_scatter", "all_to_all_single": "all_to_all",
              "shard_dim_alltoall": "all_to_all"}
"""``c10d_functional`` collectives as the plan names them."""

VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)
"""Ops that need their input's memory in order: a redistributed shard is made contiguous first (a
copy, as ``reshape`` makes, not counted: what a redistribution makes on its way never is)."""


@dataclass
class CheckReport:
    """What verification found (see the module docstring); ``ok`` when nothing differed."""

    outputs: dict[str, float] = field(default_factory=dict)
    """Output node -> the largest absolute difference from the unsharded module."""
    gradients: dict[str, float] = field(default_factory=dict)
    """Parameter -> the largest absolute difference of its gradient."""
    measured_peaks: list[int] = field(default_factory=list)
    """Per rank, the peak of live tensors' bytes."""
    predicted_peak: int = 0
    planned: dict[str, int] = field(default_factory=dict)
    executed: dict[str, int] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict:
        return {"ok": self.ok, "outputs": self.outputs, "gradients": self.gradients,
                "measured_peaks": self.measured_peaks, "predicted_peak": self.predicted_peak,
                "collectives_planned": self.planned, "collectives_executed": self.executed,
                "differences": self.differences, "seconds": round(self.seconds, 3)}

    def text(self) -> str:
        """One paragraph: verified, or what differed and where."""
        worst = max(list(self.outputs.values()) + list(self.gradients.values()) or [0.0])
        peak = max(self.measured_peaks or [0])
        what = (f"outputs{' and gradients' if self.gradients else ''} within {worst:.2g} of the "
                f"unsharded module; peak per rank {bytes_text(peak)} measured, "
                f"{bytes_text(self.predicted_peak)} predicted; collectives "
                f"{sum(self.executed.values())} executed, {sum(self.planned.values())} planned")
        if self.ok:
            return f"verified on every rank ({self.seconds:.1f} s): {what}"
        shown = "; ".join(self.differences[:5])
        more = f" (and {len(self.differences) - 5} more)" if len(self.differences) > 5 else ""
        return f"verification FAILED: {shown}{more}. ({what})"


def _reference(module: torch.nn.Module, inputs: tuple, names: list[str], training: bool) -> tuple:
    """The unsharded module's flat tensor outputs, and in training its gradients by name."""
    named = dict(module.named_parameters(remove_duplicate=False))
    params = [named[n] for n in names if n in named]
    with torch.enable_grad() if training else torch.no_grad():
        outs = [o for o in pytree.tree_leaves(module(*inputs)) if isinstance(o, torch.Tensor)]
        grads = {}
        if training:
            got = torch.autograd.grad(_loss(outs), params, allow_unused=True)
            grads = {n: g for n, g in zip([n for n in names if n in named], got) if g is not None}
    return [o.detach() for o in outs], grads


def _local_bytes(value: Any, ranks: int) -> list[int]:
    """Per rank, the bytes of a value's local shards (none for a non-tensor)."""
    if isinstance(value, DTensor):
        local = value._local_tensor
        shards = getattr(local, "_local_tensors", None)
        if shards is not None:
            return [t.numel() * t.element_size() for _, t in sorted(shards.items())]
        return [local.numel() * local.element_size()] * ranks  # the same tensor on every rank
    if isinstance(value, (tuple, list)):
        parts = [_local_bytes(v, ranks) for v in value]
        parts = [p for p in parts if p]
        return [sum(col) for col in zip(*parts)] if parts else []
    return []


def move(value: DTensor, placements: Any) -> DTensor:
    """``value`` redistributed to ``placements`` by DTensor's own redistribution (the one its ops
    use: it also splits a replicated tensor into a Partial's shares, which the public
    ``redistribute`` refuses)."""
    from torch.distributed.tensor._dtensor_spec import DTensorSpec
    from torch.distributed.tensor._redistribute import redistribute_local_tensor

    placements = tuple(placements)
    if tuple(value.placements) == placements:
        return value
    target = DTensorSpec(value.device_mesh, placements, tensor_meta=value._spec.tensor_meta)
    local = redistribute_local_tensor(value._local_tensor, value._spec, target)
    return DTensor.from_local(local, value.device_mesh, placements, run_check=False,
                              shape=value.shape, stride=value.stride())


def masked_left_to_dtensor(have: Any, want: Any) -> tuple:
    """``want``, except where it asks a replicated tensor for a ``_MaskPartial`` (the indices of a
    vocabulary-parallel embedding): that axis stays replicated, and DTensor's own dispatch masks
    the indices as the op runs (the mask it keeps for the output's reduction is made there)."""
    from torch.distributed.tensor._ops._embedding_ops import _MaskPartial

    return tuple(h if isinstance(w, _MaskPartial) and isinstance(h, Replicate) else w
                 for h, w in zip(have, want))


def _full(value: DTensor) -> torch.Tensor:
    full = value.full_tensor()
    return full.reconcile() if hasattr(full, "reconcile") else full


class _Runner:
    """One run of the plan (see the module docstring)."""

    def __init__(self, plan: ShardPlan, mesh: Any) -> None:
        self.plan = plan
        self.built = plan.built
        self.traced = plan.built.traced
        self.mesh = mesh
        self.env: dict[str, Any] = {}
        self.slots: dict[str, list] = {}
        self.report = CheckReport(predicted_peak=int(plan.peak or 0))
        self.peaks = [0] * math.prod(self.built.mesh_shape)

    def placed(self, name: str) -> Any:
        return self.plan.output_of(name)

    def place(self) -> dict[str, Any]:
        """Every placeholder's value in its planned placement, and in training each parameter's
        gradient and optimizer-state slots (before the run: its collectives are not the plan's)."""
        traced = self.traced
        states = OPTIMIZER_STATES[traced.optimizer] if traced.training else 0
        placed = {}
        for node in traced.nodes:
            if node.op == "placeholder":
                value = distribute_tensor(traced.values[node.name], self.mesh, list(self.placed(node.name)))
                placed[node.name] = value
                if node.name in traced.param_of and traced.training:
                    self.slots[node.name] = [torch.zeros_like(value) for _ in range(1 + states)]
        return placed

    def run(self, placed: dict[str, Any]) -> bool:
        """Runs the graph; False when a node could not run (the report says which and why)."""
        traced = self.traced
        users_left = {n.name: len([u for u in n.users if u.op != "output"]) for n in traced.nodes}
        for node in traced.nodes:
            if node.op == "placeholder":
                self.env[node.name] = placed[node.name]
            elif node.op == "call_function":
                try:
                    self.env[node.name] = self.call(node)
                except Exception as exc:  # the plan cannot run: a difference, never a traceback
                    name = self.built.names[self.built.index(node.name)] \
                        if self.built.has(node.name) else node.name
                    line = (str(exc).strip().splitlines() or [""])[0][:200]
                    self.report.differences.append(f"{name}: could not run ({type(exc).__name__}: {line})")
                    return False
            else:
                continue
            self.measure()
            if node.name in traced.grad_of:
                self.to_slot(node)
            for src in {a.name for a in node.all_input_nodes}:
                users_left[src] -= 1
                if users_left[src] == 0 and self.frees(src):
                    self.env.pop(src, None)
            if users_left.get(node.name) == 0 and self.frees(node.name):
                self.env.pop(node.name, None)
        return True

    def hand_back(self) -> None:
        """The user outputs with their partial sums reduced, as the plan hands them back."""
        from .build import handed_back

        for name in self.traced.outputs:
            value = self.env.get(name)
            if isinstance(value, DTensor):
                self.env[name] = move(value, handed_back(value.placements))

    def frees(self, name: str) -> bool:
        """Whether a tensor is freed after its last user (parameters, buffers and outputs stay)."""
        t = self.traced
        return name not in t.param_of and name not in t.buffer_of and name not in t.outputs

    def measure(self) -> None:
        per_rank = [0] * len(self.peaks)
        for value in itertools.chain(self.env.values(), *self.slots.values()):
            for r, nbytes in enumerate(_local_bytes(value, len(per_rank))):
                per_rank[r] += nbytes
        self.peaks = [max(a, c) for a, c in zip(self.peaks, per_rank)]

    def to_slot(self, node: torch.fx.Node) -> None:
        """A gradient, moved to its parameter's placement, into the parameter's gradient slot."""
        param = next(n for n, p in self.traced.param_of.items() if p == self.traced.grad_of[node.name])
        grad = self.env[node.name]
        self.slots[param][0] = move(grad, self.placed(param))
        self.env.pop(node.name, None)

    def call(self, node: torch.fx.Node) -> Any:
        i = self.built.index(node.name) if self.built.has(node.name) else None
        if i is None:  # a node that makes no tensor: run it as it is, if DTensor can
            from .strategies import Rules

            if not Rules(self.mesh).has_rule(node.target):
                return None  # a check on metadata (``_assert_tensor_metadata``): nothing to run
            args, kwargs = pytree.tree_map_only(torch.fx.Node, lambda n: self.env[n.name],
                                                (node.args, node.kwargs))
            return node.target(*args, **kwargs)
        opts = self.built.options[i]
        k = int(self.plan.plan[i])
        if opts.kind == "getitem":
            item = self.env[opts.sources[0]][opts.source_items[0]]
            return move(item, opts.inputs[k][0])
        wanted = iter(opts.inputs[k])

        def moved(n: torch.fx.Node) -> Any:
            value = self.env[n.name]
            if isinstance(n.meta.get("val"), torch.Tensor):
                return move(value, masked_left_to_dtensor(value.placements, next(wanted)))
            return value
        args, kwargs = pytree.tree_map_only(torch.fx.Node, moved, (node.args, node.kwargs))
        if opts.kind in ("fallback", "factory"):
            return self.replicated(node, args, kwargs)
        if node.target in VIEWS:  # a shard moved by a collective may be laid out otherwise: a
            args = pytree.tree_map_only(DTensor, lambda d: d.contiguous(), args)  # copy, as reshape
        out = node.target(*args, **kwargs)
        self.check_placement(node, out, opts.outputs[k])
        return out

    def replicated(self, node: torch.fx.Node, args: Any, kwargs: Any) -> Any:
        """An op without a rule (or a factory): run on every rank's whole tensors, replicated."""
        local_args, local_kwargs = pytree.tree_map_only(DTensor, lambda d: d.to_local(), (args, kwargs))
        out = node.target(*local_args, **local_kwargs)
        rep = [Replicate()] * len(self.built.mesh_shape)
        return pytree.tree_map_only(torch.Tensor, lambda t: DTensor.from_local(
            t, self.mesh, rep, run_check=False), out)

    def check_placement(self, node: torch.fx.Node, out: Any, planned: Any) -> None:
        got = tuple(out.placements) if isinstance(out, DTensor) else tuple(
            None if o is None else tuple(o.placements) for o in out)
        if repr(got) != repr(tuple(planned)):  # by what they say: a _MaskPartial's mask is state
            self.report.differences.append(
                f"{self.built.names[self.built.index(node.name)]}: DTensor made {got}, the plan "
                f"says {tuple(planned)}")


def verify_plan(plan: ShardPlan, module: torch.nn.Module, example_inputs: Sequence[Any]) -> CheckReport:
    """Runs ``plan`` on every rank and checks it (see the module docstring)."""
    from torch.distributed._local_tensor import LocalTensorMode
    from torch.distributed.tensor.debug import CommDebugMode

    from .mesh import device_mesh

    started = time.perf_counter()
    inputs = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    traced = plan.built.traced
    names = list(traced.param_of.values())
    ref_outs, ref_grads = _reference(module, inputs, names, traced.training)
    mesh = device_mesh(plan.built.mesh_shape)
    runner = _Runner(plan, mesh)
    report = runner.report
    quiet = logging.getLogger("torch.distributed.tensor._redistribute")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its advice to flatten the mesh for two all-gathers in a row
    try:
        with LocalTensorMode(math.prod(plan.built.mesh_shape)):
            placed = runner.place()
            with CommDebugMode() as comms:
                ran = runner.run(placed)
                if ran:
                    runner.hand_back()
            outs = {name: _full(runner.env[name]) for name in traced.outputs if name in runner.env} \
                if ran else {}
            grads = {traced.param_of[p]: _full(slot[0]) for p, slot in runner.slots.items()} if ran else {}
    finally:
        quiet.setLevel(level)
    report.measured_peaks = runner.peaks
    if not ran:
        report.seconds = time.perf_counter() - started
        return report
    report.planned = dict(Counter(c.kind for c in plan.collectives))
    report.executed = dict(Counter(COMM_KINDS.get(op.__name__, op.__name__)
                                   for op, n in comms.get_comm_counts().items() for _ in range(n)))
    _compare(report, plan, traced, outs, ref_outs, grads, ref_grads)
    report.seconds = time.perf_counter() - started
    return report


def _compare(report: CheckReport, plan: ShardPlan, traced: Any, outs: dict, ref_outs: list,
             grads: dict, ref_grads: dict) -> None:
    names = plan.built.names
    index = plan.built.index
    for name, ref in zip(traced.outputs, ref_outs):
        got = outs.get(name)
        if got is None or got.shape != ref.shape:
            report.differences.append(f"output {names[index(name)]}: missing or of another shape")
            continue
        ok, report.outputs[names[index(name)]] = close(got, ref)
        if not ok:
            report.differences.append(f"output {names[index(name)]}: differs from the unsharded "
                                      f"module by up to {report.outputs[names[index(name)]]:.3g}")
    for param, ref in ref_grads.items():
        got = grads.get(param)
        if got is None:
            report.differences.append(f"gradient of {param}: not computed")
            continue
        ok, report.gradients[param] = close(got, ref)
        if not ok:
            report.differences.append(f"gradient of {param}: differs from the unsharded module's "
                                      f"by up to {report.gradients[param]:.3g}")
    for r, peak in enumerate(report.measured_peaks):
        if peak != report.predicted_peak:
            report.differences.append(f"peak of rank {r}: {peak:,} bytes measured, "
                                      f"{report.predicted_peak:,} predicted")
            break
    if report.planned != report.executed:
        report.differences.append(f"collectives: executed {report.executed}, planned {report.planned}")
