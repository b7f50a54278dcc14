"""The ``mip`` backend: HiGHS (through highspy) on the standard ILP, the formulation of Alpa and
PyTorch's AutoParallel, exact on presolved instances, exact LNS windows on the rest. The engine is
the library's :mod:`portfolio.mip` (:class:`~portfolio.mip.MipEngine`, run by the exact driver of
:mod:`portfolio.exact`); this module is its backend: metadata, its options (the engine's keyword
arguments), and the hook.
"""

from __future__ import annotations

from portfolio.backend import BackendMeta
from portfolio.backend_options import Option
from portfolio.exact import ExactBackend
from portfolio.hookspecs import backends_hook
from portfolio.mip import LINKINGS, MEMORY_MODES, PRESOLVE, MipEngine

__all__ = ["MipBackend"]


class MipBackend(ExactBackend):
    name = "mip"
    description = "HiGHS MIP on the standard ILP: exact on presolved instances, LNS windows above"
    meta = BackendMeta(default=False, engines=("highspy", "numba", "numpy"),
                       requirement="highspy>=1.16",
                       requires=("highspy",), deterministic=True, options=(
                           Option("linking", "choice", "marginal", choices=LINKINGS,
                                  help="edge columns tied to both ends' strategies (marginal) "
                                       "or only pushed up by them where they cost (weak)"),
                           Option("memory", "choice", "auto", choices=MEMORY_MODES,
                                  help="memory rows all at once, added as plans overflow them "
                                       "(lazy), or by their size (auto)"),
                           Option("presolve", "choice", "off", choices=PRESOLVE,
                                  help="HiGHS's own presolve (off: measured faster on B, G, A)"),
                           Option("heuristic_effort", "float", 0.05, low=0.0, high=1.0,
                                  help="HiGHS's mip_heuristic_effort: share of the search "
                                       "spent in primal heuristics"),
                       ))
    engine_type = MipEngine
    polish_full_model = False   # HiGHS proves B, G and A unhinted in 1-7 s; the polish took 10 s


portfolio_backends = backends_hook(MipBackend)
