"""``portfolio warmup``: compile and cache the JIT kernels before timed runs."""

from __future__ import annotations

import time

import click

from .app import cli
from .backends import _select_backends, reads_plugins
from .common import console


@cli.command()
@click.option("--backends", "-b", help="Comma-separated backend names (default: all available).")
@click.option("--serial", is_flag=True, help="One step after another in this process (for comparisons, "
              "or to keep to one core); by default every step runs in a process of its own, at once.")
@reads_plugins
def warmup(backends: str | None, serial: bool) -> None:
    """Compile and cache every JIT kernel (loader, presolve, backends) before timed runs.

    The first run after an install otherwise spends its budget compiling (about a minute of CPU on
    a 2-core machine); `portfolio solve` still answers on time then, but only with the plans that
    need no compilation. The steps run side by side, the kernels they share compiled once. Safe to
    run again: a warm cache loads in about a second.
    """
    from ..runner.warmup import warm_up_all, warm_up_serial

    t0 = time.monotonic()
    chosen = _select_backends(backends).backends
    steps = (warm_up_serial if serial else warm_up_all)(chosen)
    for step in steps:
        if step.error:
            console.print(f"[yellow]warning:[/] {step.name}: {step.error}", highlight=False)
    done = ", ".join(f"{s.name} {s.seconds:.2f} s" for s in steps if not s.error)
    console.print(f"warmup ({'one after another' if serial else 'side by side'}; each step's end "
                  f"since the start): {done}; total {time.monotonic() - t0:.2f} s", highlight=False)
