"""The ``maxsat`` backend: python-sat's core-guided RC2 on a weighted partial MaxSAT model, exact on
presolved instances, LNS windows above. The engine is the library's :mod:`portfolio.maxsat`
(:class:`~portfolio.maxsat.MaxSatEngine`, run by the exact driver of :mod:`portfolio.exact`); this
module is its backend: metadata, its options (the engine's keyword arguments), and the hook.
"""

from __future__ import annotations

from portfolio.backend import BackendMeta
from portfolio.backend_options import Option
from portfolio.exact import ExactBackend
from portfolio.hookspecs import backends_hook
from portfolio.maxsat import MaxSatEngine

__all__ = ["MaxSatBackend"]


class MaxSatBackend(ExactBackend):
    name = "maxsat"
    description = "python-sat RC2 (core-guided MaxSAT): exact on presolved instances, LNS windows above"
    meta = BackendMeta(engines=("python-sat", "numba", "numpy"), requirement="python-sat>=1.8.dev13",
                       requires=("pysat", "pysat.examples", "pysat.examples.rc2"),
                       deterministic=True, options=(
                           Option("edge_form", "choice", MaxSatEngine.edge_form,
                                  choices=("pairs", "direct"),
                                  help="edges as pairs with marginal linking, or as binary "
                                       "soft clauses"),
                           Option("exhaust", "bool", MaxSatEngine.exhaust,
                                  help="RC2's core exhaustion"),
                           Option("minz", "bool", MaxSatEngine.minz,
                                  help="RC2's core minimisation"),
                           Option("blo", "choice", MaxSatEngine.blo, choices=("basic", "div"),
                                  help="RC2's stratification of the weights"),
                           Option("solver", "choice", MaxSatEngine.solver,
                                  choices=("g3", "g4", "mgh", "m22"),
                                  help="pysat's SAT oracle (interruptible ones only: CaDiCaL "
                                       "ignores the deadline)"),
                           Option("diffusion", "float", MaxSatEngine.diffusion, low=0.0,
                                  high=0.5, help="share of the time limit for min-sum "
                                                 "diffusion (at most 10 s)"),
                           Option("memory", "choice", MaxSatEngine.memory,
                                  choices=("lazy", "eager"),
                                  help="memory rows added as models break them, or all at once"),
                       ))
    engine_type = MaxSatEngine


portfolio_backends = backends_hook(MaxSatBackend)
