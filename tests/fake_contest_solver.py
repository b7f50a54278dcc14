"""A tiny contest-style solver for tests of ``cmd:`` configurations: ``fake_contest_solver.py MODE FILE TIMEOUT``.

It reads the instance (plain JSON; gzip only in mode ``gz``) the way a contest entry would, and
answers per MODE:

* ``plan``, ``gz``: the least-usage strategy of every node (the cheapest among ties), a feasible
  plan of the instances the tests give it; ``gz`` insists on a gzipped file;
* ``late``: that plan, after sleeping past the timeout by half a second;
* ``infeasible``: the most-usage strategy of every node;
* ``short``: a plan one node short;
* ``garbage``: a line that is no plan;
* ``empty``: ``[]``;
* ``sleep``: sleeps far past the timeout (killed), after starting a child that sleeps too;
* ``crash``: a stderr message and exit code 3, no plan;
* ``orphan``: the plan at once, leaving a child behind that writes a file if it is not killed
  (the path is the fourth argument).
"""

import gzip
import json
import os
import sys
import time


def load(path: str, gz: bool) -> dict:
    if gz != path.endswith(".gz"):
        sys.exit(f"fake solver: expected a {'gzipped' if gz else 'plain'} file, got {path}")
    with (gzip.open(path, "rt") if gz else open(path)) as f:
        return json.load(f)["problem"]


def pick(problem: dict, most: bool) -> list[int]:
    plan = []
    for usages, costs in zip(problem["nodes"]["usages"], problem["nodes"]["costs"]):
        order = sorted(range(len(usages)), key=lambda k: ((-1 if most else 1) * usages[k], costs[k]))
        plan.append(order[0])
    return plan


def main() -> None:
    mode, path, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    print("# fake solver", mode, timeout, flush=True)
    if mode == "garbage":
        print("no plan here, just words")
        return
    if mode == "empty":
        print("[]")
        return
    if mode == "crash":
        print("fake solver: out of luck", file=sys.stderr)
        sys.exit(3)
    if mode == "sleep":
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        time.sleep(timeout + 600)
        return
    problem = load(path, gz=mode == "gz")
    plan = pick(problem, most=mode == "infeasible")
    if mode == "short":
        plan = plan[:-1]
    if mode == "late":
        time.sleep(timeout + 0.5)
    if mode == "orphan" and os.fork() == 0:
        time.sleep(2.0)
        with open(sys.argv[4], "w") as f:
            f.write("the orphan outlived its command\n")
        os._exit(0)
    print(json.dumps(plan), flush=True)
    print("# fake solver: done (a comment after the plan, as the contest winner prints them)")


if __name__ == "__main__":
    main()
