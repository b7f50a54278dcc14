"""The PyTorch front end (issue 48): what `portfolio bench` cannot measure, since its input is a
model, not a problem file. Figures: docs/benchmarks/frontends.md.

    python benchmarks/frontends.py matrix [--seconds 10] [--models gpt2,llama,mlp,moe]
        every zoo model at its test size x mesh {8, 2x4} x {inference, training} x memory {none,
        70 %, 50 % of the unsharded peak}: planned and verified on every rank (outputs,
        gradients, per-rank peak, collectives)
    python benchmarks/frontends.py build [--repeat 3]
        build times at real widths, on the meta device (no weights): GPT-2 (12 layers, d = 768)
        on 2x4 in training, LLaMA (8 layers) on 4x8 in inference and training; per stage, the
        planner's calls against the edge entries it priced
    python benchmarks/frontends.py textbook [--seconds 60]
        the MLP on 2x4 under memory pressure: the plan found, and the cost of the textbook plan
        (column-parallel up, row-parallel down on one axis, data-parallel on the other) under the
        same model, its parameters fixed and the rest solved
    python benchmarks/frontends.py solve [--seconds 30]
        the real-size GPT-2 training problem on 2x4 at 50 % of its unsharded peak, solved: cost,
        peak and the plan in words

Timings are wall clock, run without nice; every part prints `uptime` first (the machine is
shared). Prints markdown tables.
"""

from __future__ import annotations

import argparse
import subprocess
import time

import numpy as np

from common import fmt, header, run_part

MESHES = ((8,), (2, 4))
MEMORY = (None, "70%", "50%")


def _start(**options: float) -> argparse.Namespace:
    """The part's options (``--NAME`` with its default's type) parsed, and the machine's load
    printed (the timings are wall clock on a shared machine)."""
    parser = argparse.ArgumentParser()
    for name, default in options.items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    args = parser.parse_args()
    print(f"machine: `{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}`\n")
    return args


def matrix_main() -> None:
    args = _start(seconds=10.0, models="gpt2,llama,mlp,moe")
    from portfolio.frontends.torch import plan, zoo

    header("model | mesh | mode | memory | nodes | budget | peak | predicted ms | outputs, grads within | "
           "peak measured = predicted | collectives executed = planned | verified | s")
    for name in args.models.split(","):
        for mesh in MESHES:
            for training in (False, True):
                for memory in MEMORY:
                    module, inputs = zoo.ZOO[name].factory()
                    t0 = time.perf_counter()
                    p = plan(module, inputs, mesh=mesh, memory=memory, training=training,
                             verify=True, time_limit=args.seconds)
                    seconds = time.perf_counter() - t0
                    c = p.check
                    worst = max([*c.outputs.values(), *c.gradients.values()]) if c else None
                    print(f"| {name} | {'x'.join(map(str, mesh))} | {'training' if training else 'inference'} "
                          f"| {memory or 'none'} | {p.built.problem.num_nodes:,} | {fmt(p.budget)} | {fmt(p.peak)} "
                          f"| {p.cost / 1e6:.3f} | {worst:.1e} | "
                          f"{'yes' if c and set(c.measured_peaks) == {c.predicted_peak} else 'NO'} | "
                          f"{sum(c.executed.values()) if c else '-'} = {sum(c.planned.values()) if c else '-'} | "
                          f"{'yes' if c and c.ok else 'NO'} | {seconds:.1f} |", flush=True)


BUILDS = (("gpt2", (2, 4), True, {}), ("llama", (4, 8), False, {"layers": 8}),
          ("llama", (4, 8), True, {"layers": 8}))


def build_main() -> None:
    args = _start(repeat=3)
    from portfolio.frontends.torch import build, zoo

    header("model | mesh | mode | build s (best of runs) | trace | sharding rules | node costs | edge costs "
           "| assemble | nodes | edges | strategies (max) | edge entries | planner calls")
    for name, mesh, training, sizes in BUILDS:
        kw = {**zoo.ZOO[name].real, **sizes}
        best = None
        for _ in range(args.repeat):
            module, inputs = zoo.ZOO[name].factory(**kw, device="meta")
            t0 = time.perf_counter()
            b = build(module, inputs, mesh=mesh, training=training)
            total = time.perf_counter() - t0
            if best is None or total < best[0]:
                best = (total, b)
        total, b = best
        s, p = b.seconds, b.problem
        print(f"| {name} ({kw['layers']} layers, d = {kw['d_model']}) | {'x'.join(map(str, mesh))} | "
              f"{'training' if training else 'inference'} | {total:.1f} | {s['trace']:.1f} | "
              f"{s['sharding rules']:.1f} | {s['node costs']:.1f} | {s['edge costs']:.1f} | "
              f"{s['assemble']:.1f} | {p.num_nodes:,} | {p.num_edges:,} | "
              f"{int(p.strategy_counts.sum()):,} ({int(p.strategy_counts.max())}) | "
              f"{len(p.edge_costs):,} | {b.redistributions.planned:,} |", flush=True)


TEXTBOOK = (  # (d_model, hidden, batch, budget)
    (1024, 4096, 4096, "25%"), (1024, 4096, 64, "30%"), (256, 1024, 1024, "25%"))


def _fixed(built, placements: dict):
    """The problem with each named parameter held to the given placement (others forbidden)."""
    from dataclasses import replace

    from portfolio.frontends.torch.build import FORBIDDEN
    from portfolio.frontends.torch.strategies import placements_text

    costs = built.problem.node_costs.copy()
    for i, name in enumerate(built.names):
        want = placements.get(name)
        if want is None:
            continue
        for k, out in enumerate(built.options[i].outputs):
            if placements_text(out) != want:
                costs[built.problem.strategy_offsets[i] + k] = FORBIDDEN
    return replace(built.problem, node_costs=costs)


def textbook_main() -> None:
    args = _start(seconds=60.0)
    from portfolio.api import solve
    from portfolio.frontends.torch import ShardPlan, build, zoo

    header("d, hidden, batch | budget | found: up | found: down | found ns (status) | textbook ns "
           "(tp axis 0 / 1) | collectives found")
    for d, h, batch, memory in TEXTBOOK:
        b = build(*zoo.mlp(d_model=d, hidden=h, layers=1, batch=batch), mesh=(2, 4), memory=memory)
        found = solve(b.conversion(), time_limit=args.seconds, warm_start=[int(s) for s in b.replicated])
        p = ShardPlan(b, np.asarray(found.plan), found, b.budget)
        costs = []
        for tp in (0, 1):
            def axes(on_tp: str, on_dp: str = "Replicate()") -> list:
                return [on_tp, on_dp] if tp == 0 else [on_dp, on_tp]
            fixed = _fixed(b, {"layers.0.up.weight": axes("Shard(0)"), "layers.0.up.bias": axes("Shard(0)"),
                               "layers.0.down.weight": axes("Shard(1)"),
                               "layers.0.down.bias": axes("Replicate()"),
                               "input:0": axes("Replicate()", "Shard(0)")})
            r = solve(fixed, time_limit=args.seconds)
            costs.append(f"{fmt(r.cost)} ({r.status})")
        kinds = ", ".join(f"{c.kind} axis {c.axis} {c.bytes:,} B" for c in p.collectives)
        print(f"| {d}, {h}, {batch} | {memory} | {p.modules['layers.0.up']} | {p.modules['layers.0.down']} | "
              f"{fmt(found.cost)} ({found.status}) | {' / '.join(costs)} | {kinds} |", flush=True)


def solve_main() -> None:
    args = _start(seconds=30.0)
    from portfolio.api import solve
    from portfolio.frontends.torch import ShardPlan, build, zoo

    module, inputs = zoo.ZOO["gpt2"].factory(**zoo.ZOO["gpt2"].real, device="meta")
    b = build(module, inputs, mesh=(2, 4), training=True, memory="50%")
    t0 = time.perf_counter()
    r = solve(b.conversion(), time_limit=args.seconds, warm_start=[int(s) for s in b.replicated])
    p = ShardPlan(b, None if not r.feasible else np.asarray(r.plan), r, b.budget)
    print(f"solved in {time.perf_counter() - t0:.1f} s: {p.summary()}; {r.status} by {r.winner}; "
          f"warm start {r.warm_start}\n")
    print(p.table(width=140))


MODES = {"matrix": (matrix_main, False), "build": (build_main, False),
         "textbook": (textbook_main, False), "solve": (solve_main, False)}

if __name__ == "__main__":
    run_part(MODES, __doc__)
