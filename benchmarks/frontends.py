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
    python benchmarks/frontends.py family [--models gpt2,llama,mlp,moe] [--meshes 8,2x4,4x8]
            [--modes infer,train] [--memory none,70,50] [--out runs/models] [--size real|test]
            [--set llama.layers=32] [--force]
        a benchmark family from the models' own graphs (issue 49): each zoo model at the size
        users shard x mesh x mode x memory (none, or % of the unsharded peak) exported the way
        `portfolio shard --export` does, one contest file with node names a member
        (`gpt2-2x4-train-m70.json.gz`), cached beside its recipe; prints each file's size.
        Figures: docs/benchmarks/models.md

Timings are wall clock; every part prints `uptime` first (the machine is shared). Prints
markdown tables.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Optional

import numpy as np

from common import REPO, fmt, header, run_part

MESHES = ((8,), (2, 4))
MEMORY = (None, "70%", "50%")


def _start(**options: float) -> argparse.Namespace:
    """The part's options (``--NAME`` with its default's type) parsed, and the machine's load
    printed (the timings are wall clock on a shared machine)."""
    parser = argparse.ArgumentParser()
    for name, default in options.items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    args = parser.parse_args()
    print(f"machine: `{_uptime()}`\n")
    return args


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


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


FAMILY_SIZES = {  # beyond the zoo's `real` shapes: LLaMA cut to 8 layers (build time), batches named
    "gpt2": {"batch": 8}, "llama": {"layers": 8, "batch": 8}, "mlp": {}, "moe": {"batch": 8}}
FAMILY_MODES = {"infer": False, "train": True}


def _family_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="the model-graph benchmark family")
    parser.add_argument("--models", default="gpt2,llama,mlp,moe")
    parser.add_argument("--meshes", default="8,2x4,4x8")
    parser.add_argument("--modes", default="infer,train")
    parser.add_argument("--memory", default="none,70,50", help="none, or a % of the unsharded peak")
    parser.add_argument("--size", choices=("real", "test"), default="real",
                        help="real: the sizes users shard; test: the zoo's tiny defaults")
    parser.add_argument("--set", action="append", default=[], metavar="MODEL.ARG=VALUE",
                        help="override one size (repeatable), e.g. llama.layers=32")
    parser.add_argument("--out", type=Path, help="the cache folder (default runs/models, "
                        "runs/models-test for --size test; runs/ is git-ignored)")
    parser.add_argument("--force", action="store_true", help="replace files without a recipe")
    args = parser.parse_args()
    args.out = args.out or REPO / "runs" / ("models" if args.size == "real" else "models-test")
    args.models, args.meshes, args.modes = (v.split(",") for v in (args.models, args.meshes, args.modes))
    args.memory = [m.strip().rstrip("%") for m in args.memory.split(",")]
    wrong = ([f"--models {m}" for m in args.models if m not in FAMILY_SIZES]
             + [f"--meshes {m}" for m in args.meshes if not re.fullmatch(r"[1-9]\d*(x[1-9]\d*)*", m)]
             + [f"--modes {m}" for m in args.modes if m not in FAMILY_MODES]
             + [f"--memory {m}" for m in args.memory if m != "none" and not (re.fullmatch(r"\d+(\.\d+)?", m) and float(m) > 0)]
             + [f"--set {s}" for s in args.set if not re.fullmatch(rf"({'|'.join(FAMILY_SIZES)})\.\w+=.+", s)])
    if wrong:   # one line and exit code 2, as argparse says any bad option
        parser.error(f"unknown {', '.join(wrong)} (models: {', '.join(FAMILY_SIZES)}; meshes: "
                     f"8, 2x4, ...; modes: infer, train; memory: none or a percent; --set MODEL.ARG=VALUE)")
    return args


def _family_sizes(args: argparse.Namespace, name: str) -> dict:
    """Every size argument of model ``name``'s factory (its defaults filled in), so the recipe
    names the whole shape."""
    import inspect
    from ast import literal_eval

    from portfolio.frontends.torch import zoo

    entry = zoo.ZOO[name]
    sizes = {k: p.default for k, p in inspect.signature(entry.factory).parameters.items()
             if p.kind is p.POSITIONAL_OR_KEYWORD}
    if args.size == "real":
        sizes.update(entry.real, **FAMILY_SIZES[name])
    for item in args.set:
        key, _, value = item.partition("=")
        model, _, arg = key.partition(".")
        if model == name:
            if arg not in sizes:
                raise SystemExit(f"--set {item}: {name} has no size {arg!r} (it has {', '.join(sizes)})")
            try:
                sizes[arg] = literal_eval(value)
            except (ValueError, SyntaxError):
                raise SystemExit(f"--set {item}: {value!r} is not a number") from None
    return sizes


def _source_digest() -> str:
    """A digest of the front end's source: a changed front end builds other problems, whatever
    the package's version says (a development checkout keeps one version)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((REPO / "portfolio" / "frontends").rglob("*.py")):
        digest.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _cached(path: Path, recipe: dict) -> Optional[dict]:
    """The member's record when the file and its recipe are there and the recipe is ``recipe``."""
    sidecar = path.with_name(path.name.replace(".json.gz", ".recipe.json"))
    try:
        record = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return None
    if record.get("recipe") != recipe or not path.is_file() or path.stat().st_size != record["sizes"]["bytes"]:
        return None
    return record


def _file_sizes(path: Path) -> dict:
    """A written member read back as any command reads it: its sizes, the usage limit against the
    certified least peak (trivial stage, as `portfolio info`), and presolve's reduction."""
    from portfolio.api.inputs import read
    from portfolio.cli.info import problem_summary
    from portfolio.presolve import presolve

    conversion = read(path)
    p = conversion.problem
    names = conversion.naming.names
    assert names is not None and len(names) == p.num_nodes, f"{path}: node names lost"
    summary = problem_summary(p)
    pre = presolve(p).report
    return {"nodes": p.num_nodes, "edges": p.num_edges, "strategies": summary["strategies"],
            "edge_entries": summary["edge_table_entries"],
            "endpoints": int(len(np.unique(np.concatenate([p.interval_start, p.interval_end])))),
            "time_points": summary["distinct_time_points"], "usage_limit": p.usage_limit,
            "least_peak": summary["least_peak"]["value"], "bytes": path.stat().st_size,
            "presolved": pre["after"], "presolve_s": pre["seconds"], "first_name": names[0]}


def _family_row(stem: str, record: dict, state: str) -> None:
    s = record["sizes"]
    st, limit, least, after = s["strategies"], s["usage_limit"], s["least_peak"], s["presolved"]
    ratio = "-" if limit is None or not least else f"{limit / least:.3f}"
    reduced = "infeasible" if after is None else \
        f"{after['free_nodes']:,} / {after['strategies']:,} / {after['edges']:,}"
    print(f"| {stem} | {s['nodes']:,} | {s['edges']:,} | {st['total']:,} | {st['mean']:.1f} | {st['max']} | "
          f"{s['edge_entries']:,} | {s['endpoints']:,} | {fmt(limit)} | {fmt(least)} | {ratio} | {reduced} | "
          f"{s['bytes'] / 1e3:,.0f} | {record['built']['seconds']:.1f} | {state} |", flush=True)


def family_main() -> None:
    import importlib.metadata
    from dataclasses import replace

    args = _family_args()
    print(f"machine: `{_uptime()}`; out: {args.out}\n")
    from portfolio.frontends.torch import build, zoo
    from portfolio.frontends.torch.memory import budget_bytes
    from portfolio.frontends.torch.solving import export_problem

    versions = {"torch": importlib.metadata.version("torch"),
                "package": importlib.metadata.version("iopddl-portfolio"), "frontend": _source_digest()}
    args.out.mkdir(parents=True, exist_ok=True)
    header("file | nodes | edges | strategies | mean | max | edge entries | time steps | usage limit | "
           "least peak | limit / least | presolved: free nodes / strategies / edges | kB | build s | state")
    for name in args.models:
        sizes = _family_sizes(args, name)
        for mesh in args.meshes:
            for mode in args.modes:
                members = []
                for memory in args.memory:
                    stem = f"{name}-{mesh}-{mode}-{'nolimit' if memory == 'none' else 'm' + memory}"
                    recipe = {"model": name, "sizes": sizes, "mesh": mesh, "mode": mode,
                              "memory": None if memory == "none" else f"{memory}%",
                              "optimizer": "adam", "device": "h100", **versions}
                    path = args.out / f"{stem}.json.gz"
                    members.append((stem, path, recipe, _cached(path, recipe)))
                built = None
                for stem, path, recipe, record in members:
                    if record is not None:
                        _family_row(stem, record, "cached")
                        continue
                    if path.exists() and not path.with_name(f"{stem}.recipe.json").exists() and not args.force:
                        raise SystemExit(f"error: {path}: exists without a recipe (not ours?); "
                                         f"--force replaces it")
                    if built is None:   # one build serves every memory level: the limit is its last step
                        module, inputs = zoo.ZOO[name].factory(**sizes, device="meta")
                        t0 = time.perf_counter()
                        built = build(module, inputs, mesh=mesh, training=FAMILY_MODES[mode])
                        seconds = time.perf_counter() - t0
                    member = built.with_budget(budget_bytes(recipe["memory"], built.unsharded_peak))
                    member = replace(member, problem=replace(member.problem, name=stem))
                    partial = path.with_name(f".{stem}.partial.json.gz")  # a crash leaves no member
                    t0 = time.perf_counter()
                    export_problem(member, partial)
                    record = {"recipe": recipe, "built": {
                        "seconds": round(seconds, 2), "stages": {k: round(v, 2) for k, v in built.seconds.items()},
                        "export_seconds": round(time.perf_counter() - t0, 2),
                        "unsharded_peak": built.unsharded_peak, "uptime": _uptime()},
                        "sizes": _file_sizes(partial)}
                    path.with_name(f"{stem}.recipe.json").write_text(json.dumps(record, indent=1) + "\n")
                    partial.replace(path)
                    _family_row(stem, record, "built")


MODES = {"matrix": (matrix_main, False), "build": (build_main, False),
         "textbook": (textbook_main, False), "solve": (solve_main, False),
         "family": (family_main, False)}

if __name__ == "__main__":
    run_part(MODES, __doc__)
