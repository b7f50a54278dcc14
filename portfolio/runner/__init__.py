"""The portfolio runner: many backends, one wall-clock deadline, the best verified plan wins.

``core`` holds a run's event loop, which owns the workers (``crew``) and composes the run's parts,
each an object owning its state and given the run's ``context`` (``RunContext``): ``rows`` (the
rows of the backend runs and their one writer, by named transitions), ``launch`` (starting workers), ``supervise`` (reading and ending
them), ``answers`` (verification, claims, the incumbent, the answer), ``presolving`` (presolve in
a child under the deadline), and one rule each: ``order`` (start order), ``demotion`` (low CPU
demand), ``focus`` (the CPU weights and the adaptive rule, over ``credit``: who made the
incumbent better), ``stopping`` (early stop, signals; the deadlines are ``deadlines``), ``exchange``
(deterministic mode's exchange points); ``worker`` is the worker side and its protocol, ``points``
deterministic mode's worker side; ``validate`` checks every message; ``claims`` keeps what backends
claim apart from what was verified; ``schedule`` shares the cores; ``fallback`` is the instant plan
from plain numpy; ``result`` holds what a run returns.
Linux/POSIX only (fork, process groups, /proc).
"""

from ..options import DEFAULT_POLICY, POLICIES, RunOptions
from .claims import Claim, ClaimBook
from .core import FALLBACK, Portfolio, deadline_plan, run_portfolio
from .presolving import PRESOLVE_SHARE, presolve_for
from .result import BackendRun, Incumbent, PortfolioResult
from .worker import REPORT_INTERVAL, PlanMapping, SharedBest

__all__ = ["BackendRun", "Claim", "ClaimBook", "DEFAULT_POLICY", "FALLBACK", "Incumbent",
           "PRESOLVE_SHARE", "POLICIES", "PlanMapping", "Portfolio", "PortfolioResult",
           "REPORT_INTERVAL", "RunOptions", "SharedBest", "deadline_plan", "presolve_for",
           "run_portfolio"]
