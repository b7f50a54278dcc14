"""``plan`` and ``build``: a PyTorch module and a device mesh in, a sharding problem or a solved,
optionally verified plan out (docs/frontends.md)."""

from __future__ import annotations

import time
from typing import Any, Optional, Sequence

from .build import Built, Progress, build_problem
from .devices import device as device_profile
from .memory import BudgetLike, budget_bytes
from .mesh import MeshLike, device_mesh, mesh_shape
from .plan import ShardPlan
from .trace import trace


def build(module: Any, example_inputs: Sequence[Any], mesh: MeshLike = (2, 4), *,
          memory: BudgetLike = None, training: bool = False, optimizer: str = "adam",
          device: str = "h100", progress: Optional[Progress] = None, name: Optional[str] = None) -> Built:
    """The sharding problem of ``module`` on ``example_inputs`` over ``mesh`` (``(2, 4)``,
    ``"2x4"``, ``8``): its nodes named by module path (``built.names``), its limit ``memory``
    per rank (bytes, ``"12GiB"``, or ``"60%"`` of the plan that replicates everything; None: no
    limit), priced for ``device`` (``h100``, ``a100``, ``tpu-v5e``, ``cpu``). ``training``: the
    joint forward and backward, with gradients and ``optimizer`` state (``adam``, ``sgd``).
    ``progress(stage, done, total)`` is called while it builds."""
    shape = mesh_shape(mesh)
    profile = device_profile(device)
    if progress is not None:
        progress("tracing", 0, 1)
    started = time.perf_counter()
    traced = trace(module, example_inputs, training=training, optimizer=optimizer)
    traced_in = time.perf_counter() - started
    built = build_problem(traced, device_mesh(shape), profile, progress=progress,
                          name=name or type(module).__name__)
    built.seconds = {"trace": traced_in, **built.seconds}
    return built.with_budget(budget_bytes(memory, built.unsharded_peak))


def plan(module: Any, example_inputs: Sequence[Any], mesh: MeshLike = (2, 4), *,
         memory: BudgetLike = None, time_limit: float = 30.0, training: bool = False,
         device: str = "h100", verify: bool = False, optimizer: str = "adam",
         progress: Optional[Progress] = None, **solve_options: Any) -> ShardPlan:
    """Builds the problem (:func:`build`), solves it with the portfolio in ``time_limit`` seconds
    (the build comes first and is not counted) and returns the :class:`ShardPlan`; with
    ``verify``, runs the plan on every rank and attaches the check (``plan.check``; ``plan.check.ok``
    is False when anything differed). ``solve_options`` are :func:`portfolio.solve`'s
    (``backends``, ``seed``, ``deterministic``, ``work``, ``backend_options``, ``config``,
    ``dask_workers``, ...); ``warm_start`` may be an earlier plan of the same model (a
    ``ShardPlan``, its ``to_dict()`` or that document's JSON file). A budget no plan fits gives a
    plan with ``plan.plan`` None and ``plan.result.memory`` saying why, in module paths."""
    from .solving import solve_built

    built = build(module, example_inputs, mesh, memory=memory, training=training,
                  optimizer=optimizer, device=device, progress=progress)
    result, mapping = solve_built(built, time_limit, **solve_options)
    import numpy as np

    chosen = np.asarray(result.plan, dtype=np.int64) if result.feasible else None
    shard_plan = ShardPlan(built, chosen, result, built.budget)
    if mapping is not None:
        shard_plan.notes.append(f"warm start mapped by {mapping['by']}: {mapping['kept']:,} of "
                                f"{mapping['nodes']:,} nodes kept")
    if verify and chosen is not None:
        from .verify import verify_plan

        shard_plan.check = verify_plan(shard_plan, module, example_inputs)
    return shard_plan
