"""The shard split: one shard per Dask worker, each a local portfolio run on that worker's cores.

Why one shard per worker rather than one task per backend: a local run shares its machine's cores
among its backends (and fills idle ones with extra seed copies), and its backends share incumbents
at once through shared memory; the cluster adds only what one machine cannot: more seeds.

The rule (docs/distributed.md, "Shards"):

- shard 0, on the worker with the most threads, runs every chosen backend with the base seed: the
  cluster run does at least what the local run would do there, proofs and bounds included;
- every other shard runs the chosen *randomized* backends (another seed searches differently),
  with seed ``base + 1000 * k``, rotated by ``k`` and cut to the worker's threads so that small
  workers still cover every randomized backend between them. When no chosen backend is randomized,
  they run all chosen backends but the quick safety net with their own seed (a CP-SAT seed still
  changes its search). Exact proofs and the bound backend run once, in shard 0: another copy
  would only repeat the same proof.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

from ..backend import BackendLike

SEED_STRIDE = 1000
"""Seeds of shard k start at base + k * SEED_STRIDE (a shard's runner adds 1, 2, ... for its own
extra copies, so the streams do not meet below a thousand copies)."""


@dataclass(frozen=True)
class WorkerInfo:
    """A Dask worker as the scheduler describes it."""

    address: str
    host: str
    threads: int
    name: str = ""


@dataclass
class Shard:
    """One shard: where it runs, what it runs."""

    index: int
    worker: str
    host: str
    threads: int
    backends: list[str]
    seed: int
    extra: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The row name in the final table: ``shard-K@HOST``."""
        return f"shard-{self.index}@{self.host}"

    def describe(self) -> str:
        return (f"{self.worker} ({self.threads} thread{'s' if self.threads != 1 else ''}): "
                f"{', '.join(self.backends)}; seed {self.seed}")

    def to_dict(self) -> dict:
        return asdict(self)


def _quick(backend: BackendLike) -> bool:
    caps = backend.capabilities
    return not caps.anytime and not caps.exact


def split_shards(workers: Sequence[WorkerInfo], backends: Sequence[BackendLike],
                 seed: int) -> list[Shard]:
    """Shards for ``workers`` (any order) and the chosen ``backends``; see the module's rule."""
    if not workers or not backends:
        return []
    ordered = sorted(workers, key=lambda w: (-w.threads, w.address))
    names = [b.name for b in backends]
    spread = [b.name for b in backends if getattr(b.capabilities, "randomized", False)]
    if not spread:
        spread = [b.name for b in backends if not _quick(b)] or names
    shards = [Shard(0, ordered[0].address, ordered[0].host, ordered[0].threads, names, seed)]
    for k, worker in enumerate(ordered[1:], start=1):
        turn = (k - 1) % len(spread)
        rotated = spread[turn:] + spread[:turn]
        chosen = rotated[:max(1, worker.threads)]
        shards.append(Shard(k, worker.address, worker.host, worker.threads,
                            [n for n in names if n in chosen], seed + SEED_STRIDE * k))
    return shards
