"""benchmarks/autoparallel_ilp.py, the field's standard ILP as a peer: its plans on tiny instances are
the brute-force optimum (conftest's independent reference), with CBC and with HiGHS; it answers
like a contest entry, and `portfolio bench` puts it on a leaderboard through `cmd:`.
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FORBIDDEN, all_plans, extra, reference_cost, reference_forbidden, reference_memory
from portfolio.bench import run_sweep
from portfolio.cli import bundled_example

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "autoparallel_ilp.py"
extra("pulp")     # test extras: skipped without them, failed under CI
extra("highspy")


def tiny_doc(seed: int) -> dict:
    """A small contest document: pair edges, some forbidden entries, a memory limit that binds."""
    rng = random.Random(seed)
    n = rng.randint(3, 6)
    counts = [rng.randint(1, 3) for _ in range(n)]
    value = lambda: FORBIDDEN if rng.random() < 0.12 else rng.randint(0, 100)  # noqa: E731
    intervals = [[s, s + rng.randint(0, 5)] for s in (rng.randint(0, 8) for _ in range(n))]
    usages = [[rng.randint(0, 30) for _ in range(k)] for k in counts]
    pairs = [(u, v) for u in range(n) for v in range(n) if u < v]
    edges = rng.sample(pairs, min(len(pairs), rng.randint(1, n + 1)))
    problem = {"name": f"tiny{seed}",
               "nodes": {"intervals": intervals, "costs": [[value() for _ in range(k)] for k in counts],
                         "usages": usages},
               "edges": {"nodes": [list(e) for e in edges],
                         "costs": [[value() for _ in range(counts[u] * counts[v])] for u, v in edges]},
               "usage_limit": rng.randint(25, 90)}
    return {"problem": problem}


def brute_optimum(doc: dict):
    """The least cost of a plan with no forbidden entry within the memory limit (None: no such plan)."""
    counts = [len(c) for c in doc["problem"]["nodes"]["costs"]]
    costs = [reference_cost(doc, p) for p in all_plans(counts)
             if reference_forbidden(doc, p) == (0, 0) and reference_memory(doc, p)["feasible"]]
    return min(costs, default=None)


def run(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(path), *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_the_ilp_finds_the_brute_force_optimum(tmp_path, solver):
    checked = 0
    for seed in range(12):
        doc = tiny_doc(seed)
        path = tmp_path / f"t{seed}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(doc).encode()))
        best = brute_optimum(doc)
        done = run(path, "--solver", solver)
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout.strip().splitlines()[-1])
        if best is None:
            assert plan == [] and f"{solver} says infeasible" in done.stderr, (seed, done.stderr)
            continue
        checked += 1
        assert reference_cost(doc, plan) == best, (seed, done.stderr)
        assert reference_forbidden(doc, plan) == (0, 0) and reference_memory(doc, plan)["feasible"]
        assert f"objective: {best} " in done.stderr and f"optimal: proven by {solver}" in done.stderr
    assert checked >= 6   # most of the draws have a plan: the test judges plans, not only `[]`


def test_it_answers_like_a_contest_entry(tmp_path):
    done = run(bundled_example(), "30")
    assert done.stdout.strip().splitlines()[-1] == "[0, 0, 0, 2, 0, 0, 1, 1]"   # the optimum, 305
    assert "objective: 305 " in done.stderr and "wall" in done.stderr
    no_time = run(bundled_example(), "--time-limit", "0.001")
    assert no_time.stdout.strip() == "[]" and "no time left after building" in no_time.stderr
    (tmp_path / "bad.json").write_text('{"problem": {"nodes": {}}}')
    bad = run(tmp_path / "bad.json")
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert "bad.json: not a contest problem file" in bad.stderr
    assert run(bundled_example(), "5", "--time-limit", "6").returncode == 2


def test_bench_puts_it_on_the_leaderboard(tmp_path):
    command = f"cbc=cmd:{sys.executable} {SCRIPT} {{file}} {{timeout}}"
    run_sweep([bundled_example()], backends=[command, "minusage"], time_limit=20.0, name="peer",
              runs_dir=tmp_path)
    rows = {json.loads(line)["configuration"]: json.loads(line)
            for line in (tmp_path / "peer" / "results.jsonl").read_text().splitlines()}
    assert (rows["cbc"]["status"], rows["cbc"]["cost"]) == ("feasible", 305)
    assert rows["cbc"]["command"]["argv"][-1] == "20"
    assert "optimal: proven by cbc" in "\n".join(rows["cbc"]["command"]["stderr_tail"])
