"""Compile-time guarantees of the numba kernels (cold starts depend on them, see issue 12).

* every kernel has one specialisation, whatever the caller hands over (reduced or identity views,
  general edges, read-only plans as from shared memory, literal arguments inside the kernels);
* a second process loads every kernel from numba's on-disk cache: nothing is compiled again;
* the compile locks serialise a stage between processes and never block a lone process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from portfolio.kernels import bound, engine, incremental, model, moves, search, segtree, trws
from portfolio.kernels.engine import Searcher, compile_lock, greedy_plan, prepare

from portfolio.generate import generate_problem


def _dispatchers():
    for mod in (model, incremental, moves, search, segtree, trws, bound):
        for name, obj in vars(mod).items():
            if hasattr(obj, "signatures") and hasattr(obj, "py_func"):
                yield f"{mod.__name__}.{name}", obj


def check_one_specialisation() -> dict:
    """Run the backends' kernel paths the ways callers do; the kernels compiled more than once."""
    engine.warmup()
    for k in range(4):   # with and without forbidden entries (a reduced and an identity view)
        problem = generate_problem(30, 4, seed=k, forbidden_fraction=0.1 * (k % 2),
                                   hyperedge_fraction=0.1 * (k >= 2))
        prep = prepare(problem)
        sol, ok, _ = greedy_plan(prep, 2, k, blocks=bool(k % 2))
        s = Searcher(prep, k)
        plan = np.asarray(prep.expand(sol))
        plan.setflags(write=False)          # e.g. a plan read from shared memory
        r = prep.contract(plan)
        if r is not None:
            s.offer(r)
        s.run(0.0, max_rounds=1)
    return {name: [str(sig) for sig in d.signatures] for name, d in _dispatchers()
            if len(d.signatures) > 1}


def test_one_specialisation_per_kernel():
    """In a fresh process (other tests call kernels with their own argument types)."""
    code = ("import json, sys; sys.path.insert(0, {!r}); import test_kernel_compile as t; "
            "print(json.dumps(t.check_one_specialisation()))").format(os.path.dirname(__file__))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=900).stdout
    many = json.loads(out.strip().splitlines()[-1])
    assert not many, f"kernels compiled more than once: {many}"


@pytest.mark.slow
def test_second_process_compiles_nothing():
    """Two processes run the warm-up (the first may compile into the cache); the second must
    load everything: numba's compile event never fires."""
    code = textwrap.dedent("""
        import json
        from numba.core import event
        count = [0]
        class L(event.Listener):
            def on_start(self, ev): count[0] += 1
            def on_end(self, ev): pass
        event.register("numba:compile", L())
        from portfolio.kernels import bound, engine
        engine.warmup()
        bound.warmup()
        print(json.dumps(count[0]))
    """)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, timeout=900) for _ in range(2)]
    assert json.loads(runs[1].stdout.strip().splitlines()[-1]) == 0, runs[1].stderr[-2000:]


def test_compile_lock_is_exclusive_between_processes():
    """While this process holds a stage's lock, another process waits for it."""
    code = textwrap.dedent("""
        import sys, time
        from portfolio.kernels.engine import compile_lock
        print("ready", flush=True)
        with compile_lock("test-lock"):
            print(time.time(), flush=True)
    """)
    with compile_lock("test-lock"):
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        released = time.time()
    out, _ = proc.communicate(timeout=60)
    assert float(out.strip()) >= released
    with compile_lock("test-lock"):   # free again: a lone process never waits
        pass


def test_compile_markers_follow_the_cache_folder(monkeypatch, tmp_path):
    """An exact backend asks ``compiled()`` before using the kernels: a marker written for one
    cache folder says nothing about another, and every stage up to the one asked must be marked."""
    from portfolio.presolve import jitlock

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "a"))
    assert not jitlock.compiled("greedy")
    for stage in ("presolve", "prepare", "greedy"):
        jitlock.mark_compiled(stage)
    assert jitlock.compiled("greedy") and not jitlock.compiled("moves")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "b"))
    assert not jitlock.compiled("prepare")


def test_warmup_marks_every_stage_it_compiled(compiled_kernels):
    """After the warm-up in this cache folder, every stage is marked (the fixture runs it)."""
    from portfolio.presolve import jitlock

    assert jitlock.compiled("search")


def test_a_stage_compiling_elsewhere_is_skipped_for_the_next_one_then_waited_for(monkeypatch,
                                                                               tmp_path):
    """Two processes on a cold cache fill it side by side: while another holds stage a's lock,
    this one compiles b and c first, then waits for a and loads it (marked, so not compiled)."""
    import fcntl
    import threading

    from portfolio.presolve import jitlock

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    held = open(jitlock._lock_path("t-a"), "a+")
    fcntl.flock(held, fcntl.LOCK_EX)          # "another process" compiling stage a

    def other_finishes() -> None:
        time.sleep(0.5)
        jitlock.mark_compiled("t-a")
        fcntl.flock(held, fcntl.LOCK_UN)

    calls: list[str] = []
    releaser = threading.Thread(target=other_finishes)
    releaser.start()
    jitlock.compile_stages({name: (lambda name=name: calls.append(name))
                            for name in ("t-a", "t-b", "t-c")})
    releaser.join()
    held.close()
    assert calls == ["t-b", "t-c", "t-a"]
    assert all(jitlock.is_compiled(s) for s in ("t-a", "t-b", "t-c"))


def test_a_read_only_install_keeps_its_markers_in_the_user_cache(monkeypatch):
    """numba caches in the user's folder when the package folder is read-only; so do the markers,
    else a warm read-only install would look cold to the exact backends forever."""
    from portfolio.presolve import jitlock

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert "__pycache__" in jitlock._marker_path("search") or not os.access(
        os.path.dirname(jitlock.__file__), os.W_OK)
    monkeypatch.setattr(jitlock.os, "access", lambda path, mode: False)
    assert jitlock._marker_path("search").startswith(
        os.path.join(os.path.expanduser("~"), ".cache", "portfolio-jit"))
