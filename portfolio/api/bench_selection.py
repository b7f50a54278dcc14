"""A selector in a bench sweep (``portfolio bench -b 'sel=portfolio[selector=FILE]'``): the
step each task of such a configuration applies before its run, handed to the sweep by its
caller, since the bench floor does not import the selection (docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..options import RunOptions
from ..problem import Problem
from .selecting import UserChoice, open_selector, select_run
from .solving import choose


@dataclass(frozen=True)
class SelectorStep:
    """A bench task's selector (``portfolio[selector=FILE|default]``): applied to the task's run
    as ``solve --selector`` applies it, inside the task's budget. Picklable (the spec only), so
    that it travels with the task to the process that runs it; the bench floor calls it without
    importing this module (:attr:`portfolio.bench.plan.Configuration.prepare`)."""

    spec: str

    def __call__(self, problem: Problem, registry: Any, task: Any,
                 options: RunOptions) -> tuple[list, RunOptions, dict]:
        from ..bench.plan import option_dict

        given = option_dict(task.options)
        picked = choose(list(task.backends), task.time_limit, registry=registry,
                        backend_options=given, warn=lambda _: None)
        picked, options, record = select_run(open_selector(self.spec), problem, picked, options,
                                             user=UserChoice(), warn=lambda _: None,
                                             choose=choose, backend_options=given)
        return picked.backends, options, record


def selector_step(spec: str) -> SelectorStep:
    """The step for ``portfolio[selector=SPEC]`` in a bench sweep, its file checked now (a
    :class:`~portfolio.bench.plan.BenchError` line when it is no selector, or ``default`` when
    this installation's default run uses none)."""
    from ..bench.plan import BenchError
    from ..selection import SelectorError

    try:
        if open_selector(spec) is None:
            raise BenchError(f"portfolio[selector={spec}]: this installation's default run uses "
                             f"no selector")
    except SelectorError as exc:
        raise BenchError(f"portfolio[selector={spec}]: {exc}") from None
    return SelectorStep(spec)
