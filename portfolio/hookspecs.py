"""The whole extension surface of the portfolio, in one hook.

A plugin is a module (or object) with a function decorated by :data:`hookimpl` named
``portfolio_backends`` that returns the backends it provides (:func:`backends_hook` writes the
common one: an instance of each backend class). Installed packages announce such a module
under the entry-point group ``portfolio.backends``; the registry calls the hook through its plugin
manager, one plugin at a time; see ``docs/plugins.md``.
"""

from __future__ import annotations

from typing import Callable

import pluggy

PROJECT = "portfolio"
ENTRY_POINT_GROUP = "portfolio.backends"
PLUGINS_ENV = "PORTFOLIO_PLUGINS"
"""The other way in: comma-separated module names registered as plugins without an install (the
registry reads it; deterministic mode's identity and every run's record name what it held)."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def portfolio_backends() -> list:
    """Return a list of backend objects (see :class:`portfolio.backend.Backend`).

    Keep this cheap: import heavy solver libraries inside ``solve`` or ``available``, so that listing
    backends works even when a dependency is missing.
    """


def backends_hook(*classes: type) -> Callable[[], list]:
    """The ``portfolio_backends`` hook that returns one instance of each of ``classes``, for a
    plugin module to name as its own: ``portfolio_backends = backends_hook(MyBackend)``."""

    @hookimpl
    def portfolio_backends() -> list:
        return [cls() for cls in classes]

    return portfolio_backends
