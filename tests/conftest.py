"""Shared fixtures and helpers for the test suite.

The helpers here are deliberately independent of the library: the reference evaluator reads plain
Python structures (the contest JSON document) and uses Python ints only, so it can judge
``portfolio.evaluate`` rather than repeat it.
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest
from hypothesis import strategies as st

pytest_plugins = ["portfolio.testing"]   # the fixture ``portfolio_cli``: every command run as a process

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
"""This folder: on ``PYTHONPATH`` for the test plugins (``faulty_backends``, ``det_backends``)."""
BENCH = REPO.parent / "shared" / "benchmarks"
BENCH_NAMES = ("A", "B", "G", "K", "M", "N", "S")
FORBIDDEN = 10**18
INT64_MAX = 2**63 - 1


# ------------------------------------------------------------------------------------------ paths
def bundled_example_path() -> Path:
    return Path(str(resources.files("portfolio.data") / "example.json"))


@pytest.fixture(scope="session")
def bundled_example() -> Path:
    """The small example shipped inside the package (8 nodes, limit 70, optimum 305)."""
    path = bundled_example_path()
    assert path.is_file(), f"bundled example missing at {path}"
    return path


@pytest.fixture(scope="session")
def bundled_doc(bundled_example: Path) -> dict:
    return json.loads(bundled_example.read_text())


@pytest.fixture
def fresh_bundled_doc(bundled_doc: dict) -> dict:
    """A deep copy that a test may mutate."""
    return copy.deepcopy(bundled_doc)


def in_ci() -> bool:
    """``CI=true`` (or 1/yes), as CI services set it."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def skip_or_fail(message: str, needed: str) -> NoReturn:
    """Skip for something this machine lacks, but fail under CI (``needed`` says what CI must
    have), so a green CI run cannot hide a test that never ran. Works at module level too."""
    if in_ci():
        pytest.fail(f"{message} (CI=true: {needed})", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def shared(path: Path) -> Path:
    """``path`` inside ../shared (contest instances): skip when it is missing, but fail under CI."""
    if not path.exists():
        skip_or_fail(f"shared benchmarks not found at {path}", "the contest instances must be present")
    return path


def extra(module: str) -> ModuleType:
    """A module of the test extras (``pip install -e '.[test]'``: Dask, matplotlib), imported: skip
    without it, fail under CI. The hard dependencies (numba, OR-tools, python-sat, pytoulbar2,
    psutil) are imported plainly: a broken install fails, it never skips."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        skip_or_fail(f"{module} is not installed ({exc}): pip install -e '.[test]'",
                     "the test extras must be installed")


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    return shared(BENCH)


@pytest.fixture(scope="session")
def contest_example(bench_dir: Path) -> Path:
    """The contest's own example.json (5 nodes, limit 50)."""
    return shared(bench_dir / "example.json")


def bench_path(name: str) -> Path:
    """A contest instance by letter (A, B, G, K, M, N, S); see :func:`shared`."""
    return shared(BENCH / f"asplos-2025-iopddl-{name}.json.gz")


# ------------------------------------------------------------------------------------------ reference
def reference_cost(doc: dict, solution: list[int]) -> int:
    """Cost by the contest definition, with Python ints (mixed radix, first node most significant)."""
    prob = doc["problem"]
    costs = prob["nodes"]["costs"]
    total = sum(costs[i][s] for i, s in enumerate(solution))
    for nodes, table in zip(prob["edges"]["nodes"], prob["edges"]["costs"]):
        index = 0
        for v in nodes:
            index = index * len(costs[v]) + solution[v]
        total += table[index]
    return total


def reference_forbidden(doc: dict, solution: list[int]) -> tuple[int, int]:
    """(forbidden node choices, forbidden edge entries chosen), counted as written."""
    prob = doc["problem"]
    costs = prob["nodes"]["costs"]
    nodes_bad = sum(1 for i, s in enumerate(solution) if costs[i][s] == FORBIDDEN)
    edges_bad = 0
    for nodes, table in zip(prob["edges"]["nodes"], prob["edges"]["costs"]):
        index = 0
        for v in nodes:
            index = index * len(costs[v]) + solution[v]
        edges_bad += table[index] == FORBIDDEN
    return nodes_bad, edges_bad


def reference_memory(doc: dict, solution: list[int]) -> dict:
    """Slow memory check: the usage at every integer time from the smallest start to the largest end.

    Returns peak usage, the first time it is reached, feasibility, the first violating time, the
    number of violating interval starts, and limit - peak (None without a limit).
    """
    prob = doc["problem"]
    intervals = prob["nodes"]["intervals"]
    usages = prob["nodes"]["usages"]
    limit = prob.get("usage_limit")
    chosen = [usages[i][s] for i, s in enumerate(solution)]
    lo = min((a for a, _ in intervals), default=0)
    hi = max((b for _, b in intervals), default=0)
    peak, peak_time, first_violation = 0, None, None
    usage_at: dict[int, int] = {}
    for t in range(lo, hi):
        u = sum(c for (a, b), c in zip(intervals, chosen) if a <= t < b)
        usage_at[t] = u
        if u > peak:  # strictly: the first time the peak is reached; None when usage stays 0
            peak, peak_time = u, t
        if limit is not None and u > limit and first_violation is None:
            first_violation = t
    starts = {a for a, b in intervals if b > a}
    violated_starts = sum(1 for t in starts if limit is not None and usage_at[t] > limit)
    return {
        "peak": peak,
        "peak_time": peak_time,
        "feasible": first_violation is None,
        "first_violation": first_violation,
        "violated_starts": violated_starts,
        "margin": None if limit is None else limit - peak,
    }


def all_plans(counts: list[int]):
    """Every strategy assignment for nodes with the given strategy counts (small instances only)."""
    plan = [0] * len(counts)
    while True:
        yield list(plan)
        i = len(counts) - 1
        while i >= 0:
            plan[i] += 1
            if plan[i] < counts[i]:
                break
            plan[i] = 0
            i -= 1
        if i < 0:
            return


def write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------------------------------ hypothesis
@st.composite
def instances(draw) -> dict:
    """A tiny contest document exercising every corner of the format."""
    n = draw(st.integers(1, 6))
    counts = [draw(st.integers(1, 4)) for _ in range(n)]
    value = st.one_of(
        st.integers(0, 100),
        st.just(FORBIDDEN),
        st.integers(0, 2**62),
        st.sampled_from([0, 2**62, FORBIDDEN - 1, FORBIDDEN + 1]),
    )
    usage = st.one_of(st.integers(0, 40), st.integers(0, 2**62), st.just(2**62))
    intervals = []
    for _ in range(n):
        start = draw(st.integers(0, 12))
        intervals.append([start, start + draw(st.integers(0, 6))])  # length 0 = empty interval
    costs = [[draw(value) for _ in range(k)] for k in counts]
    usages = [[draw(usage) for _ in range(k)] for k in counts]

    edge_nodes: list[list[int]] = []
    for _ in range(draw(st.integers(0, 6))):
        arity = draw(st.integers(1, 3))
        edge_nodes.append([draw(st.integers(0, n - 1)) for _ in range(arity)])
    if draw(st.booleans()):  # a self-loop
        v = draw(st.integers(0, n - 1))
        edge_nodes.append([v, v])
    if edge_nodes and draw(st.booleans()):  # a duplicate edge (its own table)
        edge_nodes.append(list(draw(st.sampled_from(edge_nodes))))
    edge_costs = [[draw(value) for _ in range(math.prod(counts[v] for v in nodes))]
                  for nodes in edge_nodes]

    problem: dict = {
        "name": "hypothesis",
        "nodes": {"intervals": intervals, "costs": costs, "usages": usages},
        "edges": {"nodes": edge_nodes, "costs": edge_costs},
    }
    limit = draw(st.one_of(st.none(), st.integers(0, 120), st.integers(0, INT64_MAX)))
    if limit is not None:
        problem["usage_limit"] = limit
    return {"problem": problem}


@st.composite
def instance_and_plan(draw) -> tuple[dict, list[int]]:
    doc = draw(instances())
    counts = [len(c) for c in doc["problem"]["nodes"]["costs"]]
    plan = [draw(st.integers(0, k - 1)) for k in counts]
    return doc, plan




# ------------------------------------------------------------------------------------------ numba
@pytest.fixture(scope="session", autouse=True)
def compiled_kernels() -> None:
    """Compile (or load from cache) every numba kernel once, before any test starts a timed run.

    On a fresh checkout the first compile takes tens of seconds; inside a test's 2-3 s time limit it
    would turn into a spurious timeout. Processes started later by the tests read the same cache.
    """
    from portfolio.kernels.engine import warmup
    from portfolio.presolve import warm_up

    warm_up()
    warmup()


# ------------------------------------------------------------------------------------------ fresh copies
def fresh_checkout(target: Path) -> Path:
    """The files git tracks or would track (elsewhere: the tree without build products), copied to
    ``target/repo``, with ``target/shared`` pointing at the real ``../shared`` when there is one."""
    repo = target / "repo"
    try:
        files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], capture_output=True, check=True
                               ).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        files = []
    if files and files != [""]:
        for name in filter(None, files):
            source = REPO / name
            if source.is_file():
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, repo / name)
    else:
        shutil.copytree(REPO, repo, ignore=shutil.ignore_patterns(
            ".venv", "__pycache__", ".git", "build", "dist", "*.egg-info", "runs", ".hypothesis"))
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (target / "shared").symlink_to(shared)
    return repo


def live_children() -> set[int]:
    """Pids of this process's descendants still running (zombies not counted): a test compares
    them before and after to show that nothing it started was left behind."""
    import psutil

    return {c.pid for c in psutil.Process().children(recursive=True)
            if c.is_running() and c.status() != psutil.STATUS_ZOMBIE}
