"""iopddl-portfolio: a solver portfolio for the IOPDDL intra-operator parallelism problem.

The first lines take the moment the interpreter imports this package, with the CPU time used by then:
:mod:`portfolio.clock` estimates from them when the command started (before any heavy import).

The Python API (docs/api.md) is exported lazily, by :func:`__getattr__`: ``import portfolio`` stays
light (no numpy, numba or solver import) and each name loads its module on first use.
"""

import time as _time

IMPORTED = _time.monotonic()
"""``time.monotonic()`` at the first import of this package."""

IMPORTED_CPU = _time.process_time()
"""CPU seconds this process had used by then (they carry over an exec)."""

from typing import TYPE_CHECKING, Any  # noqa: E402 -- after the clock on purpose

if TYPE_CHECKING:
    from .api import (OnImprove, ProblemLike, SolveResult, backends, example_path, load,
                      problem_from_arrays, resolve, solve, tradeoff, tune)
    from .errors import ProblemError
    from .evaluate import Evaluation, evaluate
    from .problem import Problem

_EXPORTS = {
    "solve": "portfolio.api", "resolve": "portfolio.api", "tradeoff": "portfolio.api", "tune": "portfolio.api", "SolveResult": "portfolio.api", "OnImprove": "portfolio.api",
    "load": "portfolio.api", "backends": "portfolio.api", "example_path": "portfolio.api",
    "problem_from_arrays": "portfolio.api", "ProblemLike": "portfolio.api",
    "ProblemError": "portfolio.errors", "Problem": "portfolio.problem",
    "Evaluation": "portfolio.evaluate",
}
"""Each API name and the module it comes from."""

__all__ = sorted([*_EXPORTS, "evaluate"])


def __getattr__(name: str) -> Any:
    """Import an API name's module on first use (PEP 562).

    ``evaluate`` is the submodule ``portfolio.evaluate`` itself, made callable there: importing a
    submodule always binds its name on the package, so a function of that name could not stay.
    """
    import importlib

    if name == "evaluate":
        return importlib.import_module("portfolio.evaluate")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'portfolio' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
