"""Memory budgets a user can reason about (docs/budgets.md).

``peak`` (the peak of one plan, where, and who makes it), ``domains`` (the strategies a plan without
forbidden choices can use: arc consistency; the least peak's first, light stage is
:mod:`portfolio.leastpeak`, lower in the floors),
``pairs`` and ``pointexact`` (refinements), ``bound`` (the certified lower bound on the least peak
of any plan), ``explain`` (why no plan fits), ``objective`` (the plan with the least peak:
``--objective peak``), ``budgets`` (a problem at another budget, ``--budgets`` values, the default
budgets around the file's limit), ``tradeoff`` (the cost at a range of budgets) and ``storage`` (a
tradeoff saved under ``runs/``).

The names below are exported lazily: importing a light module of the package does not import the
bound's numba kernels.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PeakBound", "PeakReport", "least_peak_bound", "peak_report"]


def __getattr__(name: str) -> Any:
    if name in ("PeakBound", "least_peak_bound"):
        from . import bound

        return getattr(bound, name)
    if name in ("PeakReport", "peak_report"):
        from . import peak

        return getattr(peak, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
