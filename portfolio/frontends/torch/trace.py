"""From a module and example inputs to one aten graph: the forward for inference, the joint
forward and backward for training, every node with the module path it came from.

Capture is ``torch.export`` (a module torch cannot trace fails here, in one line naming what it
could not trace); the aten graph is then traced from the exported program with ``make_fx`` on fake
tensors (no memory, no arithmetic) and torch's core ATen decompositions, parameters and buffers
lifted to graph inputs. Training adds ``torch.autograd.grad`` of a scalar loss, the sum of the
float outputs: a stand-in for any loss (the backward's shapes, and so the plan's costs and memory,
do not depend on which scalar it is). Module paths come from export's ``nn_module_stack``; a
backward node takes the path of the forward node whose autograd function produced it (matched by
autograd's sequence number, set on each backward node while it is traced).
"""

from __future__ import annotations

import io
import logging
import operator
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
import torch.fx.traceback as fx_traceback
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils import _pytree as pytree

from ...errors import ProblemError

OPTIMIZER_STATES = {"sgd": 0, "adam": 2}
"""Optimizer state tensors per parameter, each the parameter's shape (SGD without momentum: none;
Adam: its two moments)."""


class TraceError(ProblemError):
    """The module cannot be traced: one line naming the op or the source line torch refused."""


@dataclass
class Traced:
    """A traced module: the aten graph and what each of its nodes is.

    ``graph``: its placeholders are the parameters, then the buffers, then the flattened inputs;
    its output is ``(outputs, gradients)`` flattened (gradients: training only, None for a
    parameter that gets none). ``module_of``: node name -> module path ('' for the root module);
    ``backward``: the names of the backward's nodes. ``param_of``, ``buffer_of``: placeholder
    name -> parameter or buffer name; ``inputs``: the user inputs' placeholder names; ``grad_of``:
    gradient node name -> parameter name; ``outputs``: the user outputs' node names."""

    graph: torch.fx.GraphModule
    training: bool
    optimizer: str
    param_of: dict[str, str]
    buffer_of: dict[str, str]
    inputs: list[str]
    outputs: list[str]
    grad_of: dict[str, str]
    module_of: dict[str, str] = field(default_factory=dict)
    backward: set[str] = field(default_factory=set)
    module_types: dict[str, str] = field(default_factory=dict)
    """Module path -> its class's name (``Linear``), for every module a node came from."""
    values: dict[str, Any] = field(default_factory=dict, repr=False)
    """Placeholder name -> the real tensor it stands for (parameters, buffers, inputs), for
    verification."""

    @property
    def nodes(self) -> list[torch.fx.Node]:
        """The graph's nodes in execution order."""
        return list(self.graph.graph.nodes)


def _one_line(exc: BaseException) -> str:
    """An exception's first meaningful line (torch's tracing errors span screens)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    source = next((ln for ln in lines if ln.startswith("File ") or "line " in ln), None)
    if source and source != text:
        text = f"{text} ({source})"
    return text if len(text) <= 300 else text[:297] + "..."


@contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """torch's own warnings and prints off while it traces (for a module it cannot trace, export
    prints the partial graph, a screen of it, twice; what failed is said in one line instead)."""
    loggers = [logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict)
               if name == "torch" or name.startswith("torch.")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with redirect_stderr(io.StringIO()):
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _export(module: torch.nn.Module, inputs: tuple) -> torch.fx.GraphModule:
    """``torch.export`` of the module, as a graph module with parameters as attributes."""
    try:
        with quiet_torch_logs():
            program = torch.export.export(module, inputs, strict=False)
    except Exception as exc:  # torch raises many types here; all mean "cannot trace"
        raise TraceError(f"torch cannot trace {type(module).__name__}: {type(exc).__name__}: "
                         f"{_one_line(exc)}") from None
    return program.module()


def _mark_backward(loss: torch.Tensor) -> None:
    """Hooks on every autograd function behind ``loss``: while one runs in the backward, the nodes
    traced carry its sequence number, the forward node's (``fx.traceback``'s own mechanism)."""
    seen: set[Any] = set()
    stack = [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        number = fn._sequence_nr()
        fn.register_prehook(lambda grads, n=number: fx_traceback.set_grad_fn_seq_nr(n))
        fn.register_hook(lambda grads_in, grads_out: fx_traceback.reset_grad_fn_seq_nr())
        stack.extend(next_fn for next_fn, _ in fn.next_functions)


KEPT_WHOLE = ("embedding_dense_backward",)
"""Ops kept out of the core decompositions: they have a sharding rule, their decomposition does not
(``embedding_dense_backward`` becomes ``full``, ``index_put``, ``where`` and ``scalar_tensor``)."""


def _decompositions() -> dict:
    table = dict(core_aten_decompositions())
    for op in list(table):
        if getattr(getattr(op, "overloadpacket", None), "__name__", "") in KEPT_WHOLE:
            del table[op]
    return table


def _unique(named: Any) -> tuple[list[str], dict[str, int]]:
    """Tied tensors (a head sharing the embedding's weight) once: the first name of each tensor,
    and every name's index among them."""
    first: dict[int, int] = {}
    names: list[str] = []
    alias: dict[str, int] = {}
    for name, tensor in named:
        if id(tensor) not in first:
            first[id(tensor)] = len(names)
            names.append(name)
        alias[name] = first[id(tensor)]
    return names, alias


def _loss(outputs: list) -> torch.Tensor:
    """The stand-in loss: the sum of every float output's sum."""
    floats = [o for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()
              and o.requires_grad]
    if not floats:
        raise TraceError("training needs a float output that depends on the parameters; the "
                         "module returns none")
    total = floats[0].sum()
    for o in floats[1:]:
        total = total + o.sum()
    return total


def trace(module: torch.nn.Module, example_inputs: Sequence[Any], training: bool = False,
          optimizer: str = "adam") -> Traced:
    """The module's aten graph on ``example_inputs`` (see the module docstring)."""
    if optimizer not in OPTIMIZER_STATES:
        raise ProblemError(f"optimizer: expected one of {', '.join(OPTIMIZER_STATES)}, got {optimizer!r}")
    if not isinstance(module, torch.nn.Module):
        raise ProblemError(f"expected a torch.nn.Module, got {type(module).__name__}")
    inputs = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    exported = _export(module, inputs)
    param_names, param_aliases = _unique(exported.named_parameters(remove_duplicate=False))
    buffer_names, buffer_aliases = _unique(exported.named_buffers(remove_duplicate=False))
    flat_inputs, _ = pytree.tree_flatten(inputs)
    if any(not isinstance(x, torch.Tensor) for x in flat_inputs):
        raise ProblemError("example inputs: every input must be a tensor (or a list or tuple of them)")

    def step(params: list, buffers: list, args: list) -> tuple:
        state = {alias: params[i] for alias, i in param_aliases.items()}
        state.update({alias: buffers[i] for alias, i in buffer_aliases.items()})
        with torch.nn.utils.stateless._reparametrize_module(exported, state):
            out = torch.fx.Interpreter(exported).run(*args)
        outs, _ = pytree.tree_flatten(out)
        if not training:
            return outs, []
        loss = _loss(outs)
        _mark_backward(loss)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        return outs, list(grads)

    named = dict(exported.named_parameters(remove_duplicate=False))
    params = [named[n].detach().clone().requires_grad_(training) for n in param_names]
    named = dict(exported.named_buffers(remove_duplicate=False))
    buffers = [named[n].detach().clone() for n in buffer_names]
    try:
        # attention as matmuls and a softmax, forward and backward: the fused CPU kernels have no
        # sharding rule
        with fx_traceback.preserve_node_meta(), sdpa_kernel(SDPBackend.MATH), quiet_torch_logs():
            graph = make_fx(step, tracing_mode="fake",
                            decomposition_table=_decompositions())(params, buffers, list(flat_inputs))
    except Exception as exc:
        raise TraceError(f"torch cannot trace {type(module).__name__} to aten ops: "
                         f"{type(exc).__name__}: {_one_line(exc)}") from None
    traced = _describe(graph, training, optimizer, param_names, buffer_names, len(flat_inputs))
    holders = [n.name for n in traced.nodes if n.op == "placeholder"]
    traced.values = {name: t.detach() for name, t in zip(holders, params + buffers + list(flat_inputs))}
    return traced


def _path(meta: dict) -> str | None:
    """The innermost module path of a node's ``nn_module_stack`` ('' for the root), or None."""
    stack = meta.get("nn_module_stack")
    if not stack:
        return None
    path = list(stack.values())[-1][0]
    return str(path)


def _describe(graph: torch.fx.GraphModule, training: bool, optimizer: str, param_names: list[str],
              buffer_names: list[str], num_inputs: int) -> Traced:
    """What each node of the traced graph is (see :class:`Traced`)."""
    nodes = list(graph.graph.nodes)
    holders = [n for n in nodes if n.op == "placeholder"]
    params = holders[:len(param_names)]
    buffers = holders[len(param_names):len(param_names) + len(buffer_names)]
    inputs = holders[len(param_names) + len(buffer_names):]
    assert len(inputs) == num_inputs, "placeholders do not match the parameters, buffers and inputs"
    output = nodes[-1]
    flat_out = pytree.tree_leaves(output.args[0])
    num_grads = len(param_names) if training else 0
    user_outs = flat_out[:len(flat_out) - num_grads]
    grads = flat_out[len(flat_out) - num_grads:]
    traced = Traced(graph, training, optimizer,
                    param_of={n.name: name for n, name in zip(params, param_names)},
                    buffer_of={n.name: name for n, name in zip(buffers, buffer_names)},
                    inputs=[n.name for n in inputs],
                    outputs=[n.name for n in user_outs if isinstance(n, torch.fx.Node)],
                    grad_of={g.name: name for g, name in zip(grads, param_names)
                             if isinstance(g, torch.fx.Node)})
    forward_path: dict[int, str] = {}
    for n in nodes:
        for path, kind in (n.meta.get("nn_module_stack") or {}).values():
            kind_name = getattr(kind, "__name__", None) or str(kind).rsplit(".", 1)[-1]
            traced.module_types.setdefault(str(path), kind_name)
        path = _path(n.meta)
        seq = n.meta.get("seq_nr")
        if path is not None and seq is not None:
            forward_path.setdefault(seq, path)
    in_backward = False
    for n in nodes:
        if n.op != "call_function":
            continue
        path = _path(n.meta)
        if path is None:
            in_backward = in_backward or training
            path = forward_path.get(n.meta.get("seq_nr"), "")
        if in_backward:
            traced.backward.add(n.name)
        traced.module_of[n.name] = path
    for name in list(traced.param_of) + list(traced.buffer_of):
        owner = (traced.param_of.get(name) or traced.buffer_of[name]).rsplit(".", 1)
        traced.module_of[name] = owner[0] if len(owner) == 2 else ""
    for name in traced.inputs:
        traced.module_of[name] = ""
    _attach_getitems(nodes, traced)
    return traced


def _attach_getitems(nodes: list, traced: Traced) -> None:
    """A ``getitem`` belongs where its producer does (forward or backward, same module)."""
    for n in nodes:
        if n.op == "call_function" and n.target is operator.getitem:
            src = n.args[0]
            traced.module_of[n.name] = traced.module_of.get(src.name, "")
            if src.name in traced.backward:
                traced.backward.add(n.name)
            else:
                traced.backward.discard(n.name)
