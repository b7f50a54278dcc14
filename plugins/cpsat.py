"""The ``cpsat`` backend: OR-tools CP-SAT, exact on presolved instances, exact LNS windows on the
rest. The engine is the library's :mod:`portfolio.cpsat` (:class:`~portfolio.cpsat.CpSatEngine`,
run by the exact driver of :mod:`portfolio.exact`); this module is its backend: metadata, its
options (the engine's keyword arguments), and the hook.
"""

from __future__ import annotations

from dataclasses import replace

from portfolio.backend import BackendMeta
from portfolio.backend_options import Option
from portfolio.cpsat import LINKINGS, MEMORY_ENCODINGS, CpSatEngine
from portfolio.exact import ExactBackend
from portfolio.hookspecs import backends_hook

__all__ = ["CpSatBackend"]


class CpSatBackend(ExactBackend):
    name = "cpsat"
    description = "OR-tools CP-SAT: exact on presolved instances, exact LNS windows on the rest"
    capabilities = replace(ExactBackend.capabilities, threads=True)   # CP-SAT's parallel workers
    meta = BackendMeta(engines=("ortools", "numba", "numpy"), requirement="ortools>=9.10",
                       requires=("ortools", "ortools.sat.python", "ortools.sat.python.cp_model"),
                       deterministic=True, options=(
                           Option("memory", "choice", "auto", choices=MEMORY_ENCODINGS,
                                  help="how the memory limit is encoded (auto: by model size; "
                                       "docs/benchmarks/cpsat.md)"),
                           Option("linking", "choice", "marginal", choices=LINKINGS,
                                  help="how edge variables are tied to node variables"),
                       ))
    engine_type = CpSatEngine


portfolio_backends = backends_hook(CpSatBackend)
