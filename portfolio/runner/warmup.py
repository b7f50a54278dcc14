"""``portfolio warmup``: compile every JIT kernel into numba's cache, with the cores side by side.

Each step (the loader's scanner, the presolve's kernels, each backend's ``prepare``) runs in a forked
child of its own, all at once. Kernels that several steps share are compiled once: the machine-wide
stage locks of :mod:`portfolio.presolve.jitlock` hand each stage to one process while another
compiles the next stage meanwhile (out of order), and its compile slots keep the compilers to the
number of cores. One after another, the steps took 54 CPU s on a cold cache here; the longest chain
(presolve, then the search kernels' stages) is what remains of that on two cores.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ..backend import BackendLike
from .worker import prepare_key


@dataclass(frozen=True)
class WarmStep:
    """One step of a warmup: its seconds from the warmup's start to its end, or why it failed."""

    name: str
    seconds: float
    error: Optional[str] = None


def _loader() -> None:
    from importlib import resources

    from ..io import load_problem

    load_problem(str(resources.files("portfolio.data") / "example.json"))  # the fast scanner


def _presolve() -> None:
    from ..presolve import warm_up

    warm_up()


def warm_steps(backends: Sequence[BackendLike]) -> list[tuple[str, Callable[[], object]]]:
    """The steps to run: loader, presolve, then one ``prepare`` per shared implementation among the
    available ``backends`` (greedy and localsearch share the search kernels' stages, but each
    prepares up to its own stage)."""
    steps: list[tuple[str, Callable[[], object]]] = [("loader", _loader), ("presolve", _presolve)]
    done: set[str] = set()
    for backend in backends:
        key = prepare_key(backend)
        if key is None or key in done or not backend.available()[0]:
            continue
        done.add(key)
        steps.append((backend.name, backend.prepare))
    return steps


def warm_up_serial(backends: Sequence[BackendLike]) -> list[WarmStep]:
    """The steps of :func:`warm_steps` one after another in this process (``warmup --serial``: the
    way to compare, or to keep to one core); a step that fails is named and the others go on."""
    start = time.monotonic()
    steps = []
    for name, call in warm_steps(backends):
        error = None
        try:
            call()
        except Exception as exc:  # noqa: BLE001 -- say which step, keep going
            error = f"{type(exc).__name__}: {exc}"[:500]
        steps.append(WarmStep(name, time.monotonic() - start, error))
    return steps


def _child(call: Callable[[], object], conn: "mp.connection.Connection") -> None:
    try:
        call()
        conn.send(None)
    except BaseException as exc:  # noqa: BLE001 -- reported by name in the parent
        conn.send(f"{type(exc).__name__}: {exc}"[:500])
    finally:
        conn.close()


def warm_up_all(backends: Sequence[BackendLike], timeout: float = 900.0) -> list[WarmStep]:
    """Run every step of :func:`warm_steps` in its own forked child, all at once; returns each step's
    finish time (seconds since the start) in the order they finished. A child that fails or outlives
    ``timeout`` is named with the reason; the other steps go on."""
    ctx = mp.get_context("fork")
    start = time.monotonic()
    running = []
    for name, call in warm_steps(backends):
        parent, child = ctx.Pipe(duplex=False)
        process = ctx.Process(target=_child, args=(call, child), name=f"warmup-{name}", daemon=True)
        process.start()
        child.close()
        running.append((name, process, parent))
    steps: list[WarmStep] = []
    while running:
        left = start + timeout - time.monotonic()
        ready = mp.connection.wait([p.sentinel for _, p, _ in running], timeout=max(0.0, left))
        if not ready:
            for name, process, conn in running:
                process.kill()
                process.join()
                conn.close()
                steps.append(WarmStep(name, time.monotonic() - start, f"still compiling after {timeout:g} s"))
            break
        for entry in [r for r in running if r[1].sentinel in ready]:
            name, process, conn = entry
            process.join()
            error = None
            try:
                error = conn.recv() if conn.poll() else f"ended without an answer (exit code {process.exitcode})"
            except (EOFError, OSError):
                error = f"ended without an answer (exit code {process.exitcode})"
            conn.close()
            steps.append(WarmStep(name, time.monotonic() - start, error))
            running.remove(entry)
    return steps
