"""The portfolio runner: many backends, one wall-clock deadline, the best verified plan wins.

``core`` holds a run's state and event loop, with its jobs in ``launch`` (starting presolve and
workers), ``supervise`` (reading and ending workers), ``answers`` (verification, claims, the result),
and its rules one module each: ``order`` (start order), ``demotion`` (low CPU demand), ``stopping``
(deadlines, early stop, signals), ``exchange`` (deterministic mode's exchange points); ``worker``
is the worker side and its protocol, ``points`` deterministic mode's worker side; ``validate``
checks every message; ``claims`` keeps what backends claim apart from what was verified;
``schedule`` shares the cores; ``presolving`` runs presolve under the deadline;
``fallback`` is the instant plan from plain numpy; ``result`` holds what a run returns.
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
