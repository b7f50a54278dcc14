"""What moving a tensor from one placement to another takes: torch's own steps, cached.

The steps are DTensor's redistribution plan (``_gen_transform_infos``: one step per mesh axis
whose placement changes, in the order DTensor's ``redistribute`` runs them), so the collectives a
plan implies are the ones verification sees executed. Each step is named by its collective
(``all_gather``, ``all_reduce``, ``reduce_scatter``, ``all_to_all``; ``local`` for a
Replicate -> Shard chunk, or a replicated tensor split into a Partial's shares) with the bytes one
rank holds before and after it. A Partial is never made from a shard or another kind of Partial:
such a move is unreachable (None), and its edge entry forbidden.

Plans are cached by (from, to, global shape, dtype): a model repeats its layers, and torch's
planner was 97 % of a build before the cache (techniques.md, section 11).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.distributed.tensor.placement_types import Partial, Placement, Replicate, Shard

from .strategies import Placements, local_shape, reachable

COLLECTIVES = ("all_gather", "all_reduce", "reduce_scatter", "all_to_all")
"""The collectives a step may be (anything else is ``local``)."""


@dataclass(frozen=True)
class Step:
    """One step of a redistribution, on one mesh axis."""

    axis: int
    kind: str
    before: Placement
    after: Placement
    bytes_in: int
    """Bytes one rank holds before the step."""
    bytes_out: int
    """Bytes one rank holds after it."""

    @property
    def is_collective(self) -> bool:
        return self.kind in COLLECTIVES


def step_kind(before: Placement, after: Placement) -> str:
    """The collective a change of one axis's placement takes."""
    if isinstance(before, Partial):
        return "all_reduce" if isinstance(after, Replicate) else "reduce_scatter"
    if isinstance(before, Shard):
        return "all_gather" if isinstance(after, Replicate) else "all_to_all"
    return "local"


class Redistributions:
    """The steps between two placements of a tensor on one mesh, cached."""

    def __init__(self, mesh: DeviceMesh) -> None:
        self.mesh = mesh
        self.mesh_shape = tuple(mesh.shape)
        self.cache: dict[tuple, Optional[tuple[Step, ...]]] = {}
        self.planned = 0
        """Plans computed by torch's planner (cache misses)."""

    def steps(self, have: Placements, want: Placements, meta: TensorMeta) -> Optional[tuple[Step, ...]]:
        """The steps from ``have`` to ``want`` for a tensor of ``meta``; ``()`` when they are the
        same, None when DTensor cannot go there."""
        if tuple(have) == tuple(want):
            return ()
        key = (tuple(have), tuple(want), tuple(meta.shape), meta.dtype)
        found = self.cache.get(key, False)
        if found is False:
            found = self._plan(tuple(have), tuple(want), meta)
            self.cache[key] = found
        return found

    def _plan(self, have: Placements, want: Placements, meta: TensorMeta) -> Optional[tuple[Step, ...]]:
        from torch.distributed.tensor._redistribute import _gen_transform_infos_non_cached

        if not reachable(have, want):
            return None
        self.planned += 1
        try:
            infos = _gen_transform_infos_non_cached(DTensorSpec(self.mesh, have, tensor_meta=meta),
                                                    DTensorSpec(self.mesh, want, tensor_meta=meta))
        except Exception:  # a pair DTensor's planner refuses: no way there
            return None
        current = list(have)
        out: list[Step] = []
        itemsize = meta.dtype.itemsize
        for info in infos:
            before, after = info.src_dst_placements
            bytes_in = math.prod(local_shape(meta.shape, tuple(current), self.mesh_shape)) * itemsize
            current[info.mesh_dim] = after
            bytes_out = math.prod(local_shape(meta.shape, tuple(current), self.mesh_shape)) * itemsize
            out.append(Step(info.mesh_dim, step_kind(before, after), before, after, bytes_in, bytes_out))
        return tuple(out)


def collective_count(steps: Sequence[Step]) -> int:
    return sum(1 for s in steps if s.is_collective)
