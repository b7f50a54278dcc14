"""The shard split: one shard per Dask worker, each a local portfolio run on that worker's cores.

Why one shard per worker rather than one task per backend: a local run shares its machine's cores
among its backends (and fills idle ones with extra seed copies), and its backends share incumbents
at once through shared memory; the cluster adds only what one machine cannot: more seeds.

The rule (docs/distributed.md, "Shards"): the cluster runs at least what one machine would, spread
as the local runner spreads backends over cores, and then more seeds.

- the chosen backends are dealt once each over the workers' threads, biggest worker first, in a
  round-robin weighted by threads (a worker with 4 threads takes up to 4 backends per 1 of a
  one-thread worker's); the quick safety net (greedy, minusage) goes to shard 0;
- a shard left without a *randomized* backend (another seed searches differently) gets one, in
  turn, so that its runner can fill its idle threads with more seed copies; shards past the number
  of backends get only such backends;
- shard k runs with seed ``base + 1000 * k`` (shard 0 with the base seed). Exact proofs and the
  bound backend run once: another copy would only repeat the same proof.
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
    heavy = [b.name for b in backends if not _quick(b)]
    spread = [b.name for b in backends if getattr(b.capabilities, "randomized", False)] \
        or heavy or names
    slots = [w for turn in range(max(w.threads for w in ordered)) for w in ordered
             if w.threads > turn]
    given: dict[str, set[str]] = {w.address: set() for w in ordered}
    given[ordered[0].address].update(n for n in names if n not in heavy)
    for i, name in enumerate(heavy):
        given[slots[i % len(slots)].address].add(name)
    shards = []
    for k, worker in enumerate(ordered):
        mine = given[worker.address]
        if not mine & set(spread):
            mine.add(spread[k % len(spread)])
        shards.append(Shard(k, worker.address, worker.host, worker.threads,
                            [n for n in names if n in mine], seed + SEED_STRIDE * k))
    return shards
