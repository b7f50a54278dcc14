"""A solved plan as a person reads it and a program uses it.

Per parameter its placement on each mesh axis; per module a line in words (what its weight and
its output do on each axis); the collectives the plan implies (each redistribution's steps, with
the modules it runs between); the predicted time (the plan's cost, split into compute and
communication) and the per-rank peak with the nodes that hold it. ``table()`` renders it all,
``to_dict()`` is the ``--json`` document.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .build import Built
from .collectives import Collective, collectives_of
from .describe import module_lines
from .memory import bytes_text
from .strategies import local_bytes, placements_text


@dataclass
class ShardPlan:
    """What :func:`portfolio.frontends.torch.plan` returns (see the module docstring).

    ``plan``: one strategy per problem node (None when no plan fits the budget); ``result``: the
    portfolio's :class:`~portfolio.api.solving.SolveResult`; ``budget``: bytes per rank (None: no
    limit); ``check``: the verification's report (None when not asked)."""

    built: Built
    plan: Optional[np.ndarray]
    result: Any
    budget: Optional[int]
    check: Any = None
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------------------ numbers
    @property
    def feasible(self) -> bool:
        return self.plan is not None

    @property
    def problem(self) -> Any:
        """The problem solved (with the budget as its limit)."""
        return self.built.problem

    @property
    def cost(self) -> Optional[int]:
        """The plan's predicted time per step in nanoseconds (compute plus communication)."""
        return None if self.result is None else self.result.cost

    @property
    def compute_ns(self) -> int:
        if self.plan is None:
            return 0
        p = self.built.problem
        return int(sum(int(p.node_costs[p.strategy_offsets[i] + s]) for i, s in enumerate(self.plan)))

    @property
    def communication_ns(self) -> int:
        return 0 if self.cost is None else self.cost - self.compute_ns

    @property
    def peak(self) -> Optional[int]:
        """Bytes per rank at the plan's peak."""
        if self.plan is None:
            return None
        from ...evaluate import evaluate

        return int(evaluate(self.built.problem, self.plan).peak_usage)

    def peak_holders(self, top: int = 5) -> list[tuple[str, int]]:
        """The nodes holding the most bytes at the peak: (name, bytes)."""
        if self.plan is None:
            return []
        from ...evaluate import evaluate

        p = self.built.problem
        t = evaluate(p, self.plan).peak_time
        if t is None:
            return []
        live = np.flatnonzero((p.interval_start <= t) & (p.interval_end > t))
        held = [(self.built.names[int(p.interval_node[j])],
                 int(p.interval_usages[p.interval_usage_offsets[j] + self.plan[p.interval_node[j]]]))
                for j in live]
        return sorted(held, key=lambda x: -x[1])[:top]

    # ------------------------------------------------------------------------------ placements
    def output_of(self, node_name: str) -> Any:
        i = self.built.index(node_name)
        return self.built.options[i].outputs[self.plan[i]]

    @property
    def placements(self) -> dict[str, list]:
        """Per parameter, its placement on each mesh axis (``[Shard(0), Replicate()]``)."""
        if self.plan is None:
            return {}
        return {param: list(self.output_of(node)) for node, param in self.built.traced.param_of.items()}

    @property
    def modules(self) -> dict[str, str]:
        """Per module with parameters, its plan in words (``column-parallel on axis 1, ...``)."""
        return {} if self.plan is None else module_lines(self.built, self.plan)

    @property
    def collectives(self) -> list[Collective]:
        return [] if self.plan is None else collectives_of(self.built, self.plan)

    # ------------------------------------------------------------------------------ output
    def to_dict(self) -> dict:
        """The ``--json`` document."""
        b = self.built
        traced = b.traced
        doc: dict = {
            "mesh": list(b.mesh_shape), "device": b.device.name, "training": traced.training,
            "optimizer": traced.optimizer if traced.training else None,
            "feasible": self.feasible, "cost_ns": self.cost, "compute_ns": self.compute_ns,
            "communication_ns": self.communication_ns, "peak_bytes": self.peak,
            "budget_bytes": self.budget, "unsharded_peak_bytes": b.unsharded_peak,
            "problem": {"nodes": b.problem.num_nodes, "edges": b.problem.num_edges,
                        "strategies": int(b.problem.strategy_counts.sum()),
                        "edge_entries": int(len(b.problem.edge_costs))},
            "build_seconds": {k: round(v, 3) for k, v in b.seconds.items()},
            "fallbacks": {op: {"nodes": nodes, "why": b.fallbacks.why[op]}
                          for op, nodes in b.fallbacks.nodes.items()},
            "notes": list(b.notes) + list(self.notes),
            "parameters": {name: {"shape": list(self.shape_of(node)),
                                  "placements": placements_text(self.output_of(node))
                                  if self.plan is not None else None}
                           for node, name in traced.param_of.items()},
            "modules": self.modules,
            "collectives": [c.to_dict(b) for c in self.collectives],
            "peak_holders": [{"node": n, "bytes": v} for n, v in self.peak_holders()],
            "plan": None if self.plan is None else [int(s) for s in self.plan],
            "nodes": [{"name": b.names[i], "strategy": None if self.plan is None else int(self.plan[i]),
                       "output": None if self.plan is None else
                       placements_text(b.options[i].outputs[self.plan[i]])}
                      for i in range(b.problem.num_nodes)],
            "solve": None if self.result is None else {
                k: v for k, v in self.result.to_dict().items() if k not in ("plan", "run")},
            "check": None if self.check is None else self.check.to_dict(),
        }
        return doc

    def shape_of(self, node: str) -> tuple:
        """The global shape of graph node ``node``'s tensor."""
        return tuple(self.built.options[self.built.index(node)].metas.shape)

    def table(self, width: int = 120) -> str:
        """The plan as text: summary, parameters, modules, collectives, notes."""
        from rich.console import Console

        from .render import render_plan

        console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
        render_plan(self, console)
        return console.export_text()

    def per_rank_bytes(self, node_name: str) -> int:
        """What node ``node_name``'s output holds on one rank under the plan."""
        i = self.built.index(node_name)
        opts = self.built.options[i]
        return local_bytes(opts.metas, opts.outputs[self.plan[i]], self.built.mesh_shape)

    def summary(self) -> str:
        """One line: predicted time and peak."""
        if self.plan is None:
            return f"no plan fits {bytes_text(self.budget)} per rank"
        return (f"predicted {self.cost / 1e6:.3f} ms per step (compute {self.compute_ns / 1e6:.3f}, "
                f"communication {self.communication_ns / 1e6:.3f}), peak {bytes_text(self.peak)} per "
                f"rank (budget {bytes_text(self.budget)}, unsharded {bytes_text(self.built.unsharded_peak)})")
