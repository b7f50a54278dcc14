"""``portfolio check-plugin``: a backend run through the contract of docs/plugins.md, every breach named.

``instances`` holds what it runs on (with what is known of each: an optimum by enumeration, a cost
known beforehand, feasibility), ``checks`` runs one instance and judges it, ``report`` draws the
tables. :func:`check_backend` is the whole check for one backend (an object, or a name the registry
knows, or the name of a plugin whose backends are all checked); ``portfolio.testing`` offers it to a
plugin's own tests. POSIX only, like the runner it uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from ..backend import BackendLike
from ..errors import ProblemError
from .checks import CHECKS, DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_LIMIT, Breach, InstanceOutcome
from .instances import CheckInstance, check_instances

__all__ = ["CHECKS", "Breach", "CheckReport", "InstanceOutcome", "check_backend", "check_instances"]


@dataclass
class BackendReport:
    """One backend's check: registration breaches and one outcome per instance."""

    name: str
    package: str = ""
    registration: list[Breach] = field(default_factory=list)
    outcomes: list[InstanceOutcome] = field(default_factory=list)

    @property
    def breaches(self) -> list[Breach]:
        return self.registration + [b for o in self.outcomes for b in o.breaches]

    def to_dict(self) -> dict:
        return {"backend": self.name, "package": self.package, "ok": not self.breaches,
                "registration": [b.to_dict() for b in self.registration],
                "instances": [o.to_dict() for o in self.outcomes]}


@dataclass
class CheckReport:
    """The check of one target (a backend, or every backend of a plugin)."""

    target: str
    backends: list[BackendReport] = field(default_factory=list)
    registration: list[Breach] = field(default_factory=list)
    """Breaches of a plugin none of whose backends could be listed (its hook raised, hung,
    returned junk); with backends, each backend's report holds its plugin's."""

    @property
    def breaches(self) -> list[Breach]:
        return self.registration + [b for r in self.backends for b in r.breaches]

    @property
    def ok(self) -> bool:
        """No breach at all, and at least one backend checked."""
        return bool(self.backends) and not self.breaches

    def to_dict(self) -> dict:
        return {"target": self.target, "ok": self.ok, "checks": list(CHECKS),
                "registration": [b.to_dict() for b in self.registration],
                "backends": [b.to_dict() for b in self.backends]}

    def text(self, width: int = 120) -> str:
        """The tables as plain text (for an assertion message)."""
        from .report import render_text

        return render_text(self, width)


def _warnings_of(warnings: list[str], package: str) -> list[str]:
    """The registry's warnings about ``package`` (a distribution or a module named in
    PORTFOLIO_PLUGINS)."""
    word = re.compile(rf"(?<![\w.-]){re.escape(package)}(?![\w.-])")
    return [w for w in warnings if word.search(w)]


def _targets(target: Union[str, BackendLike]) -> tuple[str, list[tuple[BackendLike, str]], list[Breach]]:
    """(label, [(backend, package)], registration breaches) for a name or a backend object."""
    if not isinstance(target, str):
        from ..registry import _junk_reason

        why = _junk_reason(target)
        if why:
            raise ProblemError(f"check_backend: {why}, not a backend")
        return target.name, [(target, "")], []
    from ..registry import Registry

    registry = Registry()
    info = registry.info(target)
    if info is not None:
        found, package = [info], info.package
    else:
        found = [i for i in registry.infos() if i.package == target]
        package = target
    warnings = _warnings_of(registry.warnings, package)
    breaches = [Breach("registers", "-", w) for w in warnings]
    if not found and not warnings:
        known = ", ".join(registry.names()) or "(none)"
        raise ProblemError(f"unknown backend or plugin {target!r}; known backends: {known}")
    return target, [(i.backend, i.package) for i in found], breaches


def declaration_breaches(backend: BackendLike) -> list[Breach]:
    """What is wrong with a backend's declarations (its ``meta``, its options: a name, a type, a
    default outside what it allows, a missing help line, a budget threshold out of order), each a
    "registers" breach: the registry ignores such a declaration, so the plugin does not get what it
    declared."""
    from ..backend import declared

    return [Breach("registers", "-", f"backend {backend.name!r} {problem}")
            for problem in declared(backend)[1]]


def check_backend(target: Union[str, BackendLike], *, time_limit: float = DEFAULT_TIME_LIMIT,
                  memory_limit: Optional[int] = DEFAULT_MEMORY_LIMIT,
                  instances: Optional[Sequence[CheckInstance]] = None) -> CheckReport:
    """Run a backend through the contract on the check instances and report every breach.

    ``target``: a backend object (installed or not), a backend name the registry knows (entry
    points and ``PORTFOLIO_PLUGINS``), or a plugin's name (its distribution, or its module named in
    ``PORTFOLIO_PLUGINS``: every backend it registers, and its own registration). ``time_limit``:
    the budget of each instance's run in seconds. A backend whose ``available()`` raises, hangs or
    answers nonsense is a breach; one that says honestly that it cannot run here raises
    :class:`ProblemError` (nothing can be checked). An unknown name raises it too."""
    from ..registry import check_available
    from .checks import run_instance

    label, found, registration = _targets(target)
    report = CheckReport(label, registration=[] if found else registration)
    chosen = list(instances) if instances is not None else check_instances()
    answers = check_available([b for b, _ in found]) if found else []
    for (backend, package), (ok, why) in zip(found, answers):
        entry = BackendReport(backend.name, package, registration=list(registration))
        entry.registration += [b for b in declaration_breaches(backend)   # unless the registry said so
                               if not any(b.detail in r.detail for r in entry.registration)]
        report.backends.append(entry)
        if not ok:
            if "available()" not in why:   # honest: a missing engine
                raise ProblemError(f"{backend.name} is not available here: {why}")
            entry.registration.append(Breach("registers", "-", why))
            continue
        for inst in chosen:
            entry.outcomes.append(run_instance(backend, inst, time_limit, memory_limit))
    return report
