"""The field's standard ILP as a peer solver: the formulation PyTorch's AutoParallel (and Alpa) build,
solved by PuLP's bundled CBC as AutoParallel calls it, or by HiGHS. Figures: docs/benchmarks/peers.md.

    python benchmarks/autoparallel_ilp.py FILE [TIMEOUT] [--solver cbc|highs] [--time-limit S]

FILE is a contest problem (``.json`` or ``.json.gz``). It runs like a contest entry, so that
``portfolio bench FILES -b 'cbc=cmd:python benchmarks/autoparallel_ilp.py {file} {timeout}'`` puts it
on the same leaderboard (docs/bench.md, "Any contest-style solver"): the last stdout line is the
plan ``[s0, s1, ...]``, or ``[]`` when the solver found none; stderr says the solve status, the
plan's exact cost (and the solver's own objective), the wall time, and whether the solver proved
the plan optimal.

The model, built the way AutoParallel's ``optimize_sharding`` builds its own (facts from reading
it; this is our code):

* one binary per node strategy, exactly one per node;
* one binary per edge strategy pair (per entry of an edge's cost table), tied to both ends by
  flow constraints: for each strategy ``a`` of an end node, the pair variables whose entry uses
  ``a`` there sum to that node's variable (which also makes exactly one pair chosen);
* a variable whose cost is forbidden (10**18) is forced to 0 by a row of its own, as AutoParallel
  forces its infinite-cost choices (not by an upper bound of 0: with such bounds in its MPS
  file, the bundled CBC 2.10.3's preprocessing calls contest instance B infeasible);
* memory as one linear row per time step: the usage of every node live at that step, at most the
  limit; only the steps where an interval starts get a row (a live set only grows there, so the
  rows of the other steps are implied);
* the objective: chosen node costs plus chosen edge entries.

Solvers. ``--solver cbc`` (default): PuLP's bundled CBC through ``PULP_CBC_CMD``, with AutoParallel's
call (no time limit, CBC's defaults: one thread, no gap). ``--solver highs``: HiGHS through
PuLP's ``HiGHS`` interface (highspy), the solver AutoParallel keeps commented out beside CBC, with
its relative gap set to 0 (its default 1e-4 would stop within 0.01 % and call that optimal).

Time. Without TIMEOUT or ``--time-limit`` the solver runs until it is done (AutoParallel's way).
With one (the contest's second argument; ``--time-limit`` names the same for other callers), the
limit counts from this script's start: building the model is inside it, and the solver gets what
is left less a margin to print the answer; nothing left after building answers ``[]``.

Install: ``pip install 'iopddl-portfolio[peers]'`` (pulp, highspy). The solver's claims are its
own: ``portfolio bench`` re-verifies every plan with the exact evaluator, and stderr says here
when the plan breaks a limit the solver's tolerances let through.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import time

STARTED = time.monotonic()   # the limit counts from here: the interpreter's start is all before it
FORBIDDEN = 10**18
ANSWER_MARGIN = 0.5
"""Seconds of a time limit kept for reading the solution and printing it."""


class InputError(Exception):
    """A file that is not a contest problem: one line, exit 2."""


def read_problem(path: str) -> dict:
    """The ``problem`` object of a contest file, plain or gzipped (by its magic number)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        problem = json.loads(data)["problem"]
        nodes, edges = problem["nodes"], problem["edges"]
        for key in ("intervals", "costs", "usages"):
            if len(nodes[key]) != len(nodes["costs"]):
                raise InputError(f"{path}: problem.nodes.{key} has {len(nodes[key])} entries, "
                                 f"costs {len(nodes['costs'])}")
        if len(edges["nodes"]) != len(edges["costs"]):
            raise InputError(f"{path}: problem.edges.nodes and problem.edges.costs differ in length")
        return problem
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a contest problem file ({type(exc).__name__}: {exc})") from None


def build(problem: dict, pulp):
    """The standard ILP of ``problem`` as a PuLP model: (model, node variables per node)."""
    nodes, edges = problem["nodes"], problem["edges"]
    costs, usages, intervals = nodes["costs"], nodes["usages"], nodes["intervals"]
    model = pulp.LpProblem("autoparallel_ilp", pulp.LpMinimize)
    objective: list = []
    x = []
    for i, row in enumerate(costs):
        own = [pulp.LpVariable(f"x_{i}_{k}", cat=pulp.LpBinary) for k in range(len(row))]
        for var, cost in zip(own, row):
            if cost >= FORBIDDEN:
                model += pulp.LpAffineExpression([(var, 1)]) == 0
            elif cost:
                objective.append((var, cost))
        model += pulp.LpAffineExpression([(v, 1) for v in own]) == 1
        x.append(own)
    for e, (members, table) in enumerate(zip(edges["nodes"], edges["costs"])):
        radix = [len(costs[v]) for v in members]
        pairs = [pulp.LpVariable(f"y_{e}_{j}", cat=pulp.LpBinary) for j in range(len(table))]
        for var, cost in zip(pairs, table):
            if cost >= FORBIDDEN:
                model += pulp.LpAffineExpression([(var, 1)]) == 0
            elif cost:
                objective.append((var, cost))
        # flow: at each end, the pairs that use strategy a there sum to that end's x[.][a]
        stride = len(table)
        for position, v in enumerate(members):
            stride //= radix[position]
            by_strategy: list[list] = [[] for _ in range(radix[position])]
            for j, var in enumerate(pairs):
                by_strategy[(j // stride) % radix[position]].append((var, 1))
            for a, terms in enumerate(by_strategy):
                model += pulp.LpAffineExpression(terms + [(x[v][a], -1)]) == 0
    limit = problem.get("usage_limit")
    if limit is not None:
        for t in sorted({s for s, end in intervals if end > s}):
            terms = [(x[i][k], u) for i, (s, end) in enumerate(intervals) if s <= t < end
                     for k, u in enumerate(usages[i]) if u]
            if terms:
                model += pulp.LpAffineExpression(terms) <= limit
    model += pulp.LpAffineExpression(objective)
    return model, x


def solver_of(name: str, seconds, pulp):
    """PuLP's solver object: CBC as AutoParallel calls it, or HiGHS with no gap."""
    if name == "cbc":
        return pulp.PULP_CBC_CMD(msg=False, timeLimit=seconds)
    return pulp.HiGHS(msg=False, timeLimit=seconds, gapRel=0.0)


@contextlib.contextmanager
def stdout_to_stderr():
    """The solver's own printing (HiGHS's banner) to stderr: stdout carries the answer alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def checked(problem: dict, plan: list[int]) -> tuple[int, bool, int]:
    """The plan's exact cost (Python ints), whether it avoids forbidden entries and keeps to the
    memory limit at every step, and its peak usage."""
    nodes, edges = problem["nodes"], problem["edges"]
    costs = nodes["costs"]
    chosen = [costs[i][s] for i, s in enumerate(plan)]
    for members, table in zip(edges["nodes"], edges["costs"]):
        index = 0
        for v in members:
            index = index * len(costs[v]) + plan[v]
        chosen.append(table[index])
    steps = sorted({s for s, end in nodes["intervals"] if end > s})
    peak = max((sum(nodes["usages"][i][plan[i]] for i, (s, end) in enumerate(nodes["intervals"])
                    if s <= t < end) for t in steps), default=0)
    limit = problem.get("usage_limit")
    ok = all(c < FORBIDDEN for c in chosen) and (limit is None or peak <= limit)
    return sum(chosen), ok, peak


def main(argv=None) -> int:
    t0 = STARTED
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="contest problem file (.json or .json.gz)")
    parser.add_argument("timeout", nargs="?", type=float, help="seconds for the whole run (the contest's argument)")
    parser.add_argument("--time-limit", type=float, help="the same as TIMEOUT, for callers other than a contest harness")
    parser.add_argument("--solver", choices=("cbc", "highs"), default="cbc")
    args = parser.parse_args(argv)
    if args.timeout is not None and args.time_limit is not None and args.timeout != args.time_limit:
        parser.error("TIMEOUT and --time-limit disagree; give one")
    limit = args.timeout if args.timeout is not None else args.time_limit
    if limit is not None and limit <= 0:
        parser.error("the time limit must be positive")
    try:
        import pulp
    except ImportError:
        print("autoparallel_ilp: needs PuLP: pip install 'iopddl-portfolio[peers]'", file=sys.stderr)
        return 2
    try:
        problem = read_problem(args.file)
    except InputError as exc:
        print(f"autoparallel_ilp: {exc}", file=sys.stderr)
        return 2
    model, x = build(problem, pulp)
    built = time.monotonic() - t0
    say = lambda text: print(text, file=sys.stderr)  # noqa: E731
    say(f"model: {len(model.variables())} binaries, {len(model.constraints)} rows "
        f"(built in {built:.2f} s); solver: {args.solver} (PuLP {pulp.__version__})")
    seconds = None if limit is None else limit - built - ANSWER_MARGIN
    if seconds is not None and seconds <= 0:
        say(f"status: not solved (no time left after building the model); wall {built:.2f} s")
        print("[]")
        return 0
    with stdout_to_stderr():
        model.solve(solver_of(args.solver, seconds, pulp))
    wall = time.monotonic() - t0
    status = pulp.LpStatus[model.status]
    proven = model.sol_status == pulp.LpSolutionOptimal
    values = [[v.value() for v in own] for own in x]
    found = model.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) and all(
        any(val is not None and val > 0.5 for val in own) for own in values)
    if not found:
        why = f"{args.solver} says infeasible" if model.status == pulp.LpStatusInfeasible else "no plan found"
        say(f"status: {status} ({why}); optimal: not proven; wall {wall:.2f} s")
        print("[]")
        return 0
    plan = [max(range(len(own)), key=lambda k: own[k] or 0.0) for own in values]
    cost, ok, peak = checked(problem, plan)
    say(f"status: {status}; objective: {cost} (the solver's: {pulp.value(model.objective)}); "
        f"optimal: {'proven by ' + args.solver if proven else 'not proven'}; wall {wall:.2f} s "
        f"(build {built:.2f} s)")
    if not ok:
        say(f"warning: the plan breaks a limit the solver's tolerances let through (peak {peak}, "
            f"limit {problem.get('usage_limit')}, or a forbidden entry)")
    print(json.dumps(plan))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)   # no teardown: freeing a large PuLP model takes seconds a contest would count
