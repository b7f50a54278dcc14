"""The PyTorch front end: a module and a device mesh in, a sharding plan out, built from
DTensor's own sharding rules, solved by the portfolio, verified by running every rank
(docs/frontends.md).

    from portfolio.frontends.torch import plan
    p = plan(model, (x,), mesh=(2, 4), memory="60%", training=True, verify=True)
    print(p.table())

An optional extra (``pip install 'iopddl-portfolio[torch]'``, torch >= 2.13): importing this
package without torch, or with an older one, raises
:class:`~portfolio.frontends.torch.environment.TorchUnavailable` (a ``ProblemError``) whose one
line names the install command or the supported range. Nothing outside this package imports
torch.

The modules, one job each: ``environment`` (is torch here), ``mesh`` (the fake process group and
the mesh), ``trace`` (the aten graph, forward or joint), ``strategies`` (DTensor's rules on the
whole mesh), ``redistribution`` (the steps between placements, cached), ``devices`` and ``costs``
(device profiles, roofline and alpha-beta costs in nanoseconds), ``memory`` (liveness and budgets),
``build`` (the problem with node names), ``solving`` (through ``portfolio.solve``; warm starts
from an earlier plan, export), ``plan``, ``describe`` and ``render`` (the plan as a person and a
program read it), ``verify`` (every rank run, outputs, gradients, peak and collectives checked),
``api`` (``plan``, ``build``).
"""

from __future__ import annotations

from .environment import TorchUnavailable, require_torch

require_torch()

from .api import build, plan  # noqa: E402
from .build import Built  # noqa: E402
from .plan import ShardPlan  # noqa: E402

__all__ = ["Built", "ShardPlan", "TorchUnavailable", "build", "plan", "require_torch"]
