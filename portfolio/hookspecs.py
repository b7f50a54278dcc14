"""The whole extension surface of the portfolio, in one hook.

A plugin is a module (or object) with a function decorated by :data:`hookimpl` named
``portfolio_backends`` that returns the backends it provides. Installed packages announce such a module
under the entry-point group ``portfolio.backends``; see ``docs/plugins.md``.
"""

from __future__ import annotations

import pluggy

PROJECT = "portfolio"
ENTRY_POINT_GROUP = "portfolio.backends"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def portfolio_backends() -> list:
    """Return a list of backend objects (see :class:`portfolio.backend.Backend`).

    Keep this cheap: import heavy solver libraries inside ``solve`` or ``available``, so that listing
    backends works even when a dependency is missing.
    """
