"""Deterministic mode's identity: everything besides the problem that decides the plan, and its
digest (docs/determinism.md, "What decides the plan"). Two runs of the same problem with the same
identity give the same plan; an input left out would let two runs share an identity and differ
(issue 47: presolve on and off gave B two plans under one identity).

Each field of :class:`~portfolio.options.RunOptions` is in, or out for a stated reason
(:data:`RUN_FIELDS`, :data:`LEFT_OUT`; ``tests/test_deterministic_identity.py`` flips each); so
are the warm start (by content), the backends (their names and classes), their options that can
change the plan, the package and engine versions, and the set of installed plugins: every
distribution with a ``portfolio.backends`` entry point and its version, and every module
``PORTFOLIO_PLUGINS`` names with a digest of its file (a module has no version). What can only
move *when* things run (cores, scheduling, priorities, the clock's safety net, the memory cap:
a backend ended by the net or the cap makes the run incomplete instead) is left out.

Floor 3: reads options, backends and their declarations, nothing of the runner (which calls it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .backend import DISTRIBUTION, BackendLike, declared, distribution_version, engine_versions
from .backend_options import plan_relevant
from .hookspecs import ENTRY_POINT_GROUP, PLUGINS_ENV
from .options import RunOptions

DIGEST_CHARS = 16
"""Hex digits of a digest (the identity, a warm start, a plugin module's file)."""

RUN_FIELDS = ("presolve", "exhaustive", "early_stop", "fallback", "objective", "adaptive")
"""The run options in the identity: presolve gives backends another problem; the exhaustive
scoring settles a tiny instance itself; an early stop ends the run at an earlier point; the
runner's fallback plan may be the answer; the objective says what is minimised (``peak`` is
refused in this mode, but the field says which); the adaptive rule moves work between the
backends at exchange points. The seed, the work, the warm start, ``cold`` and the CPU weights
(which scale each backend's share of the work) are in as well, beside them."""

LEFT_OUT = {
    "time_limit": "the safety net only: when it fires the run says it is not complete",
    "start": "when the budget counts from, not what is computed",
    "workers": "the same plan with any number of cores",
    "policy": "how the cores are shared moves only when things run",
    "extra_seeds": "off in this mode",
    "memory_limit": "a backend ended for memory makes the run incomplete, never another plan",
    "honour_demand": "a priority: when, not what",
    "cluster": "refused in this mode",
    "deterministic": "always true here",
    "config": "a record: its options are in backend_options, which are in",
    "backend_options": "in, as each backend's plan-changing options (given or default)",
}
"""The run options left out of the identity, each with why."""


def digest(value: Any) -> str:
    """The first :data:`DIGEST_CHARS` hex digits of the SHA-256 of ``value`` as sorted JSON."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def plan_digest(plan: Any) -> Optional[str]:
    """A plan's content digest (its int64 little-endian bytes, as ``plan_hash`` reads a plan),
    whatever its type (a list, an array); None for no plan."""
    if plan is None:
        return None
    data = np.ascontiguousarray(np.asarray(plan, dtype="<i8")).tobytes()
    return hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]


def _module_digest(name: str) -> str:
    """A digest of the file of the module ``name`` (found, not imported), or why there is none."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    origin = getattr(spec, "origin", None)
    if not origin or not os.path.isfile(origin):
        return "not found"
    with open(origin, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:DIGEST_CHARS]


def installed_plugins() -> dict:
    """The installed plugin set: each distribution with a ``portfolio.backends`` entry point and
    its version, and each module ``PORTFOLIO_PLUGINS`` names with a digest of its file."""
    from importlib.metadata import entry_points

    dists: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        if dist is not None:
            dists[dist.metadata["Name"]] = dist.version
    modules = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    return {"distributions": dict(sorted(dists.items())),
            PLUGINS_ENV: {m: _module_digest(m) for m in sorted(set(modules))}}


def _class_path(backend: BackendLike) -> str:
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"


def plan_identity(options: RunOptions, backends: Sequence[BackendLike],
                  option_values: Mapping[str, Mapping[str, Any]]) -> dict:
    """What decides a deterministic run's plan besides the problem (``inputs``), each backend's
    plan-changing ``options`` (of ``option_values``, the values in effect), and the digest of
    both (``identity``): see the module."""
    options_in = {b.name: plan_relevant(declared(b)[0].options, option_values.get(b.name, {}))
                  for b in backends}
    warm = plan_digest(options.warm_start)
    inputs = {
        "seed": options.seed, "work": options.work_budget,
        "run": {name: getattr(options, name) for name in RUN_FIELDS},
        "warm_start": warm,
        "cold": None if warm is None else (
            "default" if options.cold is None else sorted(options.cold)),
        "cpu_weights": {name: float(w) for name, w in sorted(options.cpu_weights.items())},
        "backends": {b.name: _class_path(b) for b in sorted(backends, key=lambda b: b.name)},
        "versions": {"portfolio": distribution_version(DISTRIBUTION) or "",
                     **engine_versions(backends)},
        "installed": installed_plugins(),
    }
    return {"options": options_in, "inputs": inputs,
            "identity": digest({"inputs": inputs, "options": options_in})}
