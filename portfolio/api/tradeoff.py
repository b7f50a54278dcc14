"""``portfolio.tradeoff``: the cost of a plan at a range of memory budgets (``portfolio tradeoff``
as a function), with the CLI's defaults and checks; the rows it returns are the ones ``--json``
prints. The search itself is :func:`portfolio.memory.tradeoff.run_tradeoff`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from dataclasses import replace
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import ProblemError
from ..options import RunOptions
from .inputs import ProblemLike, as_conversion
from .solving import _ONE_RUN, choose

Budgets = Union[str, Sequence[Union[str, int, float]], None]


def tradeoff(problem: ProblemLike, *, time_limit: Optional[float] = None, budgets: Budgets = None,
             points: int = 8, backends: Union[str, Sequence[str], None] = None, seed: int = 0,
             workers: Optional[int] = None, memory_limit: Union[int, str, None] = "default",
             cost_scale: float = 1.0, runs_dir: Optional[Union[str, os.PathLike]] = None,
             name: Optional[str] = None, plot: bool = False, command: Optional[list] = None,
             on_point: Optional[object] = None,
             backend_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
             config: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], None] = None,
             assignments: Sequence[str] = ()) -> dict:
    """Solve ``problem`` at several memory budgets within ``time_limit`` seconds in all (None: 60)
    and return the document ``portfolio tradeoff --json`` prints: ``rows`` (``budget``, ``cost``,
    ``bound`` (``bound_by``, ``bound_exact``), ``status`` (``optimal`` only by a bound that proves:
    ``proof``; else ``claim``), ``false_bounds``, ``refuted``, ``plan`` in the caller's node
    order, ``peak``, ``found_at``, ``source``, ``run_cost``, ``own_limit``, and the curve's ``multiple``, ``cost_vs_limit_percent``,
    ``saved``, ``saved_per_gib``, ``saved_per_limit_percent``), ``least_peak_bound``, ``limit``,
    ``notes`` (docs/budgets.md).

    ``budgets``: absolute integers or fractions of the file's limit (``"0.9,1.0,1.1"``,
    ``[0.9, 1.0]``, ``"90%"``); None for ``points`` budgets gathered around the file's limit, from
    the least peak found to the peak of the cheapest unconstrained plan. With ``runs_dir``, the rows
    are saved there like a bench run (``name``: its folder, refused when it exists) and ``folder``
    names it; ``plot`` draws the curve into its ``plots/`` (needs ``runs_dir`` and matplotlib, both
    checked before any solving). Bad input raises :class:`ProblemError` (one line).
    ``on_point(point)`` is told each budget's result as its run ends, and again (``point.revised``)
    when a later run's plan makes it cheaper.
    ``backend_options``, ``config`` (one file or several, merged in order; and the CLI's
    ``assignments``): backend options, as :func:`portfolio.solve` takes them; each budget's run resolves budget-aware defaults for its
    own share of the time.
    """
    from ..memory.budgets import parse_budgets
    from ..memory.tradeoff import run_tradeoff

    start = time.monotonic()
    options = RunOptions(time_limit, start=start, workers=workers, seed=seed, presolve=True,
                         exhaustive=True, memory_limit=memory_limit)
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise ProblemError(f"points: expected an integer of at least 2, got {points!r}")
    if plot and runs_dir is None:
        raise ProblemError("plot: the curve is drawn into the saved run's folder: give runs_dir")
    if plot:   # before any solving: minutes of work must not end in an import error
        from ..report import ReportError
        from ..report.plots import require_matplotlib

        try:
            require_matplotlib()
        except ReportError as exc:
            raise ProblemError(str(exc)) from None
    if on_point is not None and not callable(on_point):
        raise ProblemError(f"on_point: expected a callable, got {type(on_point).__name__}")
    conversion = as_conversion(problem, float(cost_scale))
    prob = conversion.problem
    wanted = None if budgets is None else parse_budgets(budgets, prob.usage_limit)
    picked = choose(backends, options.time_limit, config=config, backend_options=backend_options,
                    assignments=assignments)
    chosen = picked.backends
    options = replace(options, backend_options=picked.options, config=picked.config)
    with _ONE_RUN:
        result = run_tradeoff(prob, chosen, options, wanted, points, on_point=on_point,
                              naming=conversion.naming)
    doc = result.to_dict()
    doc.update(outside_backends=[dict(o) for o in picked.outside], plugins_env=picked.plugins_env)
    for row in doc["rows"]:
        if row["plan"] is not None:
            row["plan"] = [int(s) for s in conversion.expand(np.asarray(row["plan"]))]
    if runs_dir is not None:
        from ..memory.storage import save_tradeoff

        path = str(problem) if isinstance(problem, (str, os.PathLike)) else prob.name
        folder = save_tradeoff(doc, path, seed, runs_dir, name, command)
        doc["folder"] = str(folder)
        if plot:
            from ..report.tradeoff_plot import write_tradeoff_plot

            doc["plots"] = [str(p) for p in write_tradeoff_plot(doc, Path(folder) / "plots")]
    return doc
