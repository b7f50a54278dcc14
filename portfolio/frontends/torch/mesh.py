"""The device mesh, in this one process: torch's fake process group behind ``init_device_mesh``.

Building a plan needs DTensor's sharding rules, which need a :class:`DeviceMesh`, which needs a
process group of the mesh's size. The fake process group (``FakeStore``, the ``fake`` backend of
torch's test utilities) gives one in a single process, no GPU, no network: its collectives do
nothing, which is all the rules need. Verification runs the ranks' real arithmetic under
``LocalTensorMode`` on the same mesh (:mod:`.verify`).

A process has one default group; a mesh of another size replaces it (the group of the previous
size is destroyed first, so a host that keeps its own group should not call the front end).
"""

from __future__ import annotations

import math
import re
from typing import Sequence, Union

import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from ...errors import ProblemError

MeshLike = Union[int, str, Sequence[int]]
"""``8``, ``"2x4"`` or ``(2, 4)``: the mesh's shape, outer axis first."""

AXIS_NAMES = ("dp", "tp", "cp", "ep")
"""Names of a mesh's axes, outer first (only names: the plan decides what each axis does)."""


def mesh_shape(mesh: MeshLike) -> tuple[int, ...]:
    """The mesh's shape from ``8``, ``"2x4"`` or ``(2, 4)``; :class:`ProblemError` naming the value
    otherwise (one or more axes, each at least 1, at most four axes)."""
    if isinstance(mesh, bool):
        raise ProblemError(f"mesh: expected a shape such as 8, '2x4' or (2, 4), got {mesh!r}")
    if isinstance(mesh, int):
        shape: tuple[int, ...] = (mesh,)
    elif isinstance(mesh, str):
        if not re.fullmatch(r"\s*\d+(\s*x\s*\d+)*\s*", mesh):
            raise ProblemError(f"mesh: expected a shape such as 8 or 2x4, got {mesh!r}")
        shape = tuple(int(x) for x in mesh.split("x"))
    else:
        try:
            shape = tuple(int(x) for x in mesh)
        except (TypeError, ValueError):
            raise ProblemError(f"mesh: expected a shape such as 8, '2x4' or (2, 4), got {mesh!r}") from None
    if not shape or len(shape) > len(AXIS_NAMES) or any(x < 1 for x in shape):
        raise ProblemError(f"mesh: expected 1 to {len(AXIS_NAMES)} axes of at least 1 device, "
                           f"got {mesh!r}")
    return shape


def mesh_text(shape: Sequence[int]) -> str:
    """``(2, 4)`` -> ``"2x4"``."""
    return "x".join(str(x) for x in shape)


def _register_fake_backend() -> type:
    """The fake process group's store; importing its module registers the ``fake`` backend."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    return FakeStore


def device_mesh(shape: Sequence[int]) -> DeviceMesh:
    """A CPU :class:`DeviceMesh` of ``shape`` over a fake process group of its size (made, or
    remade when the current group has another size)."""
    size = math.prod(shape)
    if dist.is_initialized() and dist.get_world_size() != size:
        dist.destroy_process_group()
    if not dist.is_initialized():
        store = _register_fake_backend()()
        dist.init_process_group("fake", store=store, rank=0, world_size=size)
    names = AXIS_NAMES[:len(shape)]
    return init_device_mesh("cpu", tuple(shape), mesh_dim_names=names)
