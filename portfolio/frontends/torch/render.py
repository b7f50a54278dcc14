"""The plan's tables (rich): summary, parameters, modules, collectives, peak, fallbacks, the check.

How to read them is docs/frontends.md, "Reading the table".
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich.markup import escape
from rich.table import Table

from .memory import bytes_text
from .strategies import placements_text

COLLECTIVE_ROWS = 20
"""Collective groups shown (the largest by time); ``--json`` has every collective."""


def _ns(ns: int) -> str:
    if ns >= 10**6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 10**3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns} ns"


def render_plan(plan: Any, console: Any) -> None:
    """Prints the plan on ``console``."""
    b = plan.built
    t = b.traced
    mode = f"training ({t.optimizer})" if t.training else "inference"
    console.print(f"[bold]mesh[/] {'x'.join(map(str, b.mesh_shape))} on {b.device.name}, {mode}: "
                  f"{b.problem.num_nodes:,} nodes, {b.problem.num_edges:,} edges, "
                  f"{int(b.problem.strategy_counts.sum()):,} strategies", highlight=False)
    console.print(plan.summary(), highlight=False)
    if plan.plan is None:
        return
    _parameters(plan, console)
    _modules(plan, console)
    _collectives(plan, console)
    holders = plan.peak_holders()
    if holders:
        console.print("peak held by: " + ", ".join(f"{escape(n)} {bytes_text(v)}" for n, v in holders),
                      highlight=False, soft_wrap=True)
    for op, nodes in b.fallbacks.nodes.items():
        console.print(f"[yellow]replicated (no sharding rule):[/] {escape(op)} x{len(nodes)} "
                      f"({escape(b.fallbacks.why[op])})", highlight=False, soft_wrap=True)
    for note in list(b.notes) + list(plan.notes):
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    if plan.check is not None:
        console.print(plan.check.text(), highlight=False, soft_wrap=True)


def _parameters(plan: Any, console: Any) -> None:
    axes = len(plan.built.mesh_shape)
    table = Table(title="parameters", title_justify="left")
    table.add_column("parameter")
    table.add_column("shape")
    for a in range(axes):
        table.add_column(f"axis {a} ({plan.built.mesh_shape[a]})")
    table.add_column("per rank", justify="right")
    for node, name in plan.built.traced.param_of.items():
        texts = placements_text(plan.output_of(node))
        table.add_row(escape(name), "x".join(map(str, plan.shape_of(node))), *texts,
                      bytes_text(plan.per_rank_bytes(node)))
    console.print(table)


def _modules(plan: Any, console: Any) -> None:
    table = Table(title="modules", title_justify="left")
    table.add_column("module")
    table.add_column("plan")
    for path, line in plan.modules.items():
        table.add_row(escape(path), line)
    console.print(table)


def _collectives(plan: Any, console: Any) -> None:
    b = plan.built
    groups: dict[tuple, list] = defaultdict(lambda: [0, 0, 0])
    for c in plan.collectives:
        src = b.traced.module_of.get(c.producer) or b.traced.param_of.get(c.producer) or "<root>"
        dst = b.traced.module_of.get(c.consumer) or "<root>"
        phase = "backward" if c.consumer in b.traced.backward else "forward"
        if c.producer in b.traced.grad_of:
            phase, dst = "gradient", b.traced.grad_of[c.producer]
        g = groups[(c.kind, c.axis, phase, src, dst)]
        g[0] += 1
        g[1] += c.bytes
        g[2] += c.ns
    table = Table(title=f"collectives ({sum(g[0] for g in groups.values())})", title_justify="left")
    for col in ("kind", "axis", "phase", "from", "to", "count", "bytes per rank", "time"):
        table.add_column(col, justify="right" if col in ("count", "bytes per rank", "time") else "left")
    ranked = sorted(groups.items(), key=lambda kv: -kv[1][2])
    for (kind, axis, phase, src, dst), (count, nbytes, ns) in ranked[:COLLECTIVE_ROWS]:
        table.add_row(kind, str(axis), phase, escape(src), escape(dst), str(count), bytes_text(nbytes), _ns(ns))
    if len(ranked) > COLLECTIVE_ROWS:
        rest = ranked[COLLECTIVE_ROWS:]
        table.add_row("...", "", "", f"{len(rest)} more groups", "", str(sum(g[0] for _, g in rest)),
                      bytes_text(sum(g[1] for _, g in rest)), _ns(sum(g[2] for _, g in rest)))
    console.print(table)
