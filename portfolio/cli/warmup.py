"""``portfolio warmup``: compile and cache the JIT kernels before timed runs."""

from __future__ import annotations

import time

import click

from .app import cli
from .backends import _select_backends
from .common import _load, bundled_example, console


@cli.command()
@click.option("--backends", "-b", help="Comma-separated backend names (default: all available).")
def warmup(backends: str | None) -> None:
    """Compile and cache every JIT kernel (loader, presolve, backends) before timed runs.

    The first run after an install otherwise spends its budget compiling (about a minute on a
    2-core machine); `portfolio solve` still answers on time then, but only with the plans that need
    no compilation. Safe to run again: a warm cache loads in about a second.
    """
    from ..presolve import warm_up
    from ..runner.worker import prepare_key

    steps: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    _load(bundled_example())  # the fast loader's scanner
    steps.append(("loader", time.perf_counter() - t0))
    t0 = time.perf_counter()
    warm_up()
    steps.append(("presolve", time.perf_counter() - t0))
    done: set[str] = set()
    for backend in _select_backends(backends):
        key = prepare_key(backend)
        if key is None or key in done or not backend.available()[0]:
            continue
        done.add(key)
        t0 = time.perf_counter()
        try:
            backend.prepare()
        except Exception as exc:  # noqa: BLE001 -- say which backend, keep going
            console.print(f"[yellow]warning:[/] {backend.name}: prepare failed: "
                          f"{type(exc).__name__}: {exc}", highlight=False)
            continue
        steps.append((backend.name, time.perf_counter() - t0))
    total = sum(s for _, s in steps)
    console.print("warmup: " + ", ".join(f"{name} {s:.2f} s" for name, s in steps) +
                  f"; total {total:.2f} s", highlight=False)
