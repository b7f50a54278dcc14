"""One solve across a cluster, the parts that need no cluster: the shard split, the plan wire
format, the shard process's protocol, and the driver's verification inside a real local run (plans
that fail verification are rejected and never published; held backends start when the cluster is
lost). The cluster itself is tested in test_distributed_faults.py and test_distributed_e2e.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from portfolio.backend import Capabilities, Status
from portfolio.distributed.driver import HELD, ClusterDriver
from portfolio.distributed.link import probe
from portfolio.distributed.plans import (PlanDecodeError, decode_plan, encode_plan, from_text,
                                         to_text)
from portfolio.distributed.split import SEED_STRIDE, WorkerInfo, split_shards
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.io.write import write_problem


@dataclass
class FakeBackend:
    name: str
    capabilities: Capabilities


GREEDY = FakeBackend("greedy", Capabilities(reduced=True))
LOCAL = FakeBackend("localsearch", Capabilities(anytime=True, warm_start=True, randomized=True))
TB2 = FakeBackend("toulbar2", Capabilities(exact=True, anytime=True, randomized=True))
CPSAT = FakeBackend("cpsat", Capabilities(exact=True, anytime=True))
BOUND = FakeBackend("bound", Capabilities(exact=True))


def _workers(*threads: int) -> list[WorkerInfo]:
    return [WorkerInfo(f"tcp://10.0.0.{i}:8786", f"node{i}", t) for i, t in enumerate(threads)]


# ------------------------------------------------------------------------------------------ split
def test_one_worker_runs_everything():
    [shard] = split_shards(_workers(2), [GREEDY, LOCAL, TB2, CPSAT, BOUND], seed=7)
    assert shard.backends == ["greedy", "localsearch", "toulbar2", "cpsat", "bound"]
    assert shard.seed == 7 and shard.host == "node0" and shard.threads == 2


def test_every_backend_runs_once_dealt_by_threads():
    chosen = [GREEDY, LOCAL, TB2, CPSAT, BOUND]
    shards = split_shards(_workers(1, 4, 1), chosen, seed=3)
    assert [s.threads for s in shards] == [4, 1, 1]
    heavy = {"localsearch", "toulbar2", "cpsat", "bound"}
    placed = [n for s in shards for n in s.backends if n in heavy and n not in ("localsearch", "toulbar2")]
    assert sorted(placed) == ["bound", "cpsat"]           # proofs and bounds: once
    assert heavy <= {n for s in shards for n in s.backends}
    assert "greedy" in shards[0].backends and all("greedy" not in s.backends for s in shards[1:])
    seeds = [s.seed for s in shards]
    assert seeds == [3, 3 + SEED_STRIDE, 3 + 2 * SEED_STRIDE]


def test_every_shard_has_a_randomized_backend_for_its_idle_threads():
    shards = split_shards(_workers(1, 1), [GREEDY, LOCAL, TB2, CPSAT, BOUND], seed=0)
    assert all({"localsearch", "toulbar2"} & set(s.backends) for s in shards)
    # two one-thread workers share the five search backends as one machine's two cores would
    assert len(shards[0].backends) + len(shards[1].backends) <= 5 + 2 + 1


def test_workers_beyond_the_backends_run_more_seeds():
    shards = split_shards(_workers(1, 1, 1, 1, 1, 1), [LOCAL, TB2], seed=0)
    assert [len(s.backends) for s in shards] == [1] * 6
    assert {s.backends[0] for s in shards[2:]} == {"localsearch", "toulbar2"}


def test_without_randomized_backends_the_others_rerun_the_search_with_new_seeds():
    shards = split_shards(_workers(2, 2, 2), [GREEDY, CPSAT], seed=0)
    assert shards[0].backends == ["greedy", "cpsat"]
    assert shards[2].backends == ["cpsat"] and shards[2].seed == 2 * SEED_STRIDE
    assert split_shards([], [GREEDY], 0) == [] and split_shards(_workers(1), [], 0) == []


def test_shard_labels_name_the_machine_and_the_backends():
    shard = split_shards(_workers(2), [LOCAL], seed=5)[0]
    assert shard.label == "shard-0@node0"
    assert "tcp://10.0.0.0:8786" in shard.describe() and "localsearch" in shard.describe()


# ------------------------------------------------------------------------------------------ plans
@pytest.mark.parametrize("top, dtype", [(3, "u1"), (255, "u1"), (256, "u2"), (70000, "u4")])
def test_plans_round_trip_in_the_smallest_type(top, dtype):
    plan = np.random.default_rng(1).integers(0, top + 1, size=5000)
    plan[0] = top
    message = encode_plan(plan)
    assert message["dtype"] == dtype
    assert np.array_equal(decode_plan(message), plan)
    assert np.array_equal(decode_plan(from_text(json.loads(json.dumps(to_text(message))))), plan)


def test_a_41k_node_plan_is_a_few_kilobytes():
    plan = np.random.default_rng(0).integers(0, 6, size=41_000)
    assert len(encode_plan(plan)["data"]) < 25_000


@pytest.mark.parametrize("damage", ["truncate", "count", "dtype", "garbage"])
def test_damaged_plan_messages_are_refused(damage):
    message = encode_plan(np.arange(100) % 7)
    if damage == "truncate":
        message["data"] = message["data"][:-5]
    elif damage == "count":
        message["n"] = 99
    elif damage == "dtype":
        message["dtype"] = "f8"
    else:
        message["data"] = b"not zlib at all"
    with pytest.raises(PlanDecodeError):
        decode_plan(message)


def test_negative_indices_are_not_encoded():
    with pytest.raises(ValueError):
        encode_plan([0, -1, 2])


def test_probe_reports_a_closed_port_at_once():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    t0 = time.monotonic()
    why = probe(f"tcp://127.0.0.1:{port}")
    assert why is not None and str(port) in why
    assert time.monotonic() - t0 < 1.5
    assert probe("tcp://nohostname") is not None   # no port
    assert probe("inproc://x") is None             # not checked here


# ------------------------------------------------------------------------------------------ shard process
def _spec(path: Path, seconds: float, **extra) -> dict:
    return dict({"problem": str(path), "backends": ["greedy", "localsearch"], "seed": 1,
                 "threads": 1, "end_wall": time.time() + seconds, "presolve": True}, **extra)


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> tuple[Path, object]:
    problem = generate_problem(300, 6, seed=4)
    path = tmp_path_factory.mktemp("dist") / "medium.json"
    write_problem(problem, path)
    return path, problem


def _shard(spec: dict, incoming: list[dict] = (), wait: float = 30.0) -> list[dict]:
    proc = subprocess.Popen([sys.executable, "-m", "portfolio.distributed.shard_main"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    proc.stdin.write(json.dumps(spec) + "\n")
    for message in incoming:
        proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    try:
        out, _ = proc.communicate(timeout=wait)
    finally:
        proc.kill()
    return [json.loads(line) for line in out.splitlines()]


def test_the_shard_process_streams_verified_plans_and_ends_on_time(medium):
    path, problem = medium
    t0 = time.monotonic()
    lines = _shard(_spec(path, 6.0))
    assert time.monotonic() - t0 < 8.0
    kinds = [m["kind"] for m in lines]
    assert kinds[0] == "hello" and kinds[1] == "ready" and kinds[-1] == "done"
    plans = [m for m in lines if m["kind"] == "plan"]
    assert plans, kinds
    costs = [m["cost"] for m in plans]
    assert costs == sorted(costs, reverse=True) and len(set(costs)) == len(costs)
    for m in plans:   # every plan sent is feasible and costs what it says
        ev = evaluate(problem, decode_plan(from_text(m)))
        assert ev.feasible and ev.cost == m["cost"]
    assert lines[-1]["cost"] == costs[-1]


def test_the_shard_process_takes_the_clusters_incumbent(medium):
    """A cheaper plan sent on stdin becomes the shard's incumbent and is not sent back."""
    path, problem = medium
    good = _shard(_spec(path, 6.0, backends=["localsearch"], seed=9))
    best = [m for m in good if m["kind"] == "plan"][-1]
    plan = from_text(best)
    incoming = dict(to_text({k: plan[k] for k in ("n", "dtype", "data")}), version=1,
                    cost=best["cost"])
    lines = _shard(_spec(path, 4.0, backends=["greedy"]), [incoming])
    done = lines[-1]
    assert [r[0] for r in done["received"]] == [1]
    assert done["cost"] <= best["cost"]
    assert all(m["cost"] < best["cost"] for m in lines if m["kind"] == "plan")


def test_a_shard_whose_deadline_has_passed_says_so(medium):
    path, _ = medium
    lines = _shard(_spec(path, -1.0))
    assert lines[-1]["kind"] == "done" and lines[-1]["status"] == "late"


def test_a_shard_that_cannot_load_names_the_file(tmp_path):
    lines = _shard(_spec(tmp_path / "missing.json", 5.0))
    assert lines[-1]["status"] == "error" and "missing.json" in lines[-1]["note"]


# ------------------------------------------------------------------------------------------ driver
class FakeLink:
    """What the driver reads of a ClusterLink: shards, inbox, state; records publishes."""

    def __init__(self, shards) -> None:
        self.shards, self.inbox = shards, deque()
        self.state, self.error = "running", ""
        self.published: list[tuple[int, np.ndarray]] = []
        self.failed, self.summaries = {}, {}

    def alive(self) -> bool:
        return self.state in ("connecting", "running")

    def spare(self) -> set[int]:
        return set()

    def publish(self, cost, plan, origin=None) -> None:
        self.published.append((cost, np.array(plan)))


def _run_with(link: FakeLink, problem, script, seconds: float = 4.0, backends=("greedy",)):
    """A real local run with the driver's hooks; ``script(runner, t)`` feeds the inbox."""
    from portfolio.api.solving import choose_backends
    from portfolio.options import RunOptions
    from portfolio.runner import run_portfolio

    driver = ClusterDriver(link)
    start = time.monotonic()

    def hook(runner):
        script(runner, time.monotonic() - start)
        driver(runner)

    options = RunOptions(seconds, start=start)   # no exhaustive: the tiny instance is the shard's
    result = run_portfolio(problem, choose_backends(list(backends)), options,
                           hold=driver.hold, keep_open=driver.keep_open, on_update=hook)
    driver.finish(result.runs)
    return result, driver


def _plan_message(shard: int, plan, cost: int) -> dict:
    return dict(encode_plan(plan), kind="plan", shard=shard, cost=cost, source="x",
                wall=time.time())


def test_the_driver_verifies_shard_plans_and_publishes_only_verified_ones():
    problem = generate_problem(60, 4, seed=2)
    shards = split_shards(_workers(1, 1), [LOCAL], seed=0)
    link = FakeLink(shards)
    good = np.array(problem.min_usage_strategies)
    good_cost = evaluate(problem, good).cost
    bad = np.full(problem.num_nodes, 10**6)            # strategy indices out of range
    sent = {"done": False}

    def script(runner, t):
        if not sent["done"] and t > 0.2:
            sent["done"] = True
            link.inbox.append(_plan_message(1, bad % 200, 1))
            link.inbox.append(_plan_message(0, good, good_cost))
            link.inbox.append({"kind": "plan", "shard": 0, "n": 3, "dtype": "u1", "data": b"junk"})

    result, driver = _run_with(link, problem, script)
    rows = {r.name: r for r in result.runs.values()}
    assert rows[shards[1].label].status is Status.REJECTED
    assert rows[shards[0].label].status is Status.REJECTED          # the junk came after
    assert rows[shards[0].label].best_cost == good_cost             # its verified plan stays
    assert driver.rejected == 2
    for cost, plan in link.published:
        ev = evaluate(problem, plan)
        assert ev.feasible and ev.cost == cost
    assert result.cost is not None and result.cost <= good_cost
    assert evaluate(problem, result.solution).cost == result.cost


def test_an_infeasible_shard_plan_is_rejected():
    problem = generate_problem(80, 5, seed=6)
    shards = split_shards(_workers(1), [LOCAL], seed=0)
    link = FakeLink(shards)
    heavy = np.array([int(np.argmax(problem.usages_of_interval(int(problem.intervals_of(i)[0]))))
                      for i in range(problem.num_nodes)])
    assert not evaluate(problem, heavy).feasible, "the heaviest plan should overload memory"
    sent = {"done": False}

    def script(runner, t):
        if not sent["done"]:
            sent["done"] = True
            link.inbox.append(_plan_message(0, heavy, 1))

    result, driver = _run_with(link, problem, script, seconds=3.0)
    row = result.runs[shards[0].label]
    assert row.status is Status.REJECTED and "infeasible" in row.note
    assert all(evaluate(problem, p).feasible for _, p in link.published)


def test_held_backends_start_here_when_the_cluster_is_lost():
    problem = generate_problem(120, 5, seed=8)
    link = FakeLink(split_shards(_workers(1), [LOCAL], seed=0))

    def script(runner, t):
        if t > 1.0 and link.state == "running":
            link.state, link.error = "lost", "scheduler gone"

    result, driver = _run_with(link, problem, script, seconds=5.0,
                               backends=("greedy", "localsearch"))
    local = result.runs["localsearch"]
    assert local.status is not Status.PENDING and local.started is not None
    assert local.started >= 1.0
    assert result.runs[link.shards[0].label].status is Status.CRASHED


def test_held_backends_leave_the_table_when_the_cluster_did_the_work():
    problem = generate_problem(60, 4, seed=1)
    link = FakeLink(split_shards(_workers(1), [LOCAL], seed=0))

    def script(runner, t):
        if t > 1.5:
            link.state = "stopped"

    result, driver = _run_with(link, problem, script, seconds=4.0,
                               backends=("greedy", "localsearch"))
    assert "localsearch" not in result.runs
    assert "greedy" in result.runs and result.runs["greedy"].best_cost is not None
    assert HELD not in " ".join(r.note for r in result.runs.values())


def test_a_shard_claim_of_optimality_stops_the_run_early():
    problem = generate_problem(8, 3, seed=3)
    from portfolio.exhaustive import enumerate_optimum

    found = enumerate_optimum(problem)
    assert found is not None and found.plan is not None
    plan = np.asarray(found.plan)
    cost = evaluate(problem, plan).cost
    link = FakeLink(split_shards(_workers(1), [LOCAL], seed=0))
    sent = {"done": False}

    def script(runner, t):
        if not sent["done"] and t > 0.1:
            sent["done"] = True
            link.inbox.append(_plan_message(0, plan, cost))
            link.inbox.append({"kind": "done", "shard": 0, "status": "optimal", "cost": cost,
                               "bound_exact": True})

    t0 = time.monotonic()
    result, _ = _run_with(link, problem, script, seconds=20.0)
    assert time.monotonic() - t0 < 10.0
    assert result.cost == cost and result.stopped_early
    # proven when greedy found the plan (the shard's bound meets it), a lone claim otherwise
    assert result.proof is not None and "shard-0@node0" in result.proof
