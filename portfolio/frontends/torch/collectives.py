"""The collectives a plan implies: per edge, the redistribution steps its chosen strategies need
(:mod:`.redistribution`), with the nodes they run between. Verification counts the same ones
executed (:mod:`.verify`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .build import Built
from .redistribution import Step


@dataclass(frozen=True)
class Collective:
    """One collective the plan implies: a step of a redistribution between two nodes."""

    kind: str
    axis: int
    bytes: int
    """Bytes one rank holds before the step."""
    producer: str
    consumer: str
    ns: int

    def to_dict(self, built: Built) -> dict:
        return {"kind": self.kind, "axis": self.axis, "bytes": self.bytes,
                "from": built.names[built.index(self.producer)],
                "to": built.names[built.index(self.consumer)], "ns": self.ns}


def edge_steps(built: Built, plan: np.ndarray, e: int) -> list[tuple[str, str, tuple[Step, ...]]]:
    """The redistributions edge ``e`` stands for under ``plan``: (producer, consumer, steps) per
    argument (a gradient's move to its parameter: from the gradient to the parameter)."""
    u, v, args = built.edges[e]
    out = []
    for a, item in args:
        if a == -1:  # u is the parameter, v its gradient
            src, dst = v, u
            have = built.options[v].outputs[plan[v]]
            want = built.options[u].outputs[plan[u]]
            meta = built.options[v].metas
        else:
            src, dst = u, v
            have = built.options[u].outputs[plan[u]]
            have = have if item is None else have[item]
            want = built.options[v].inputs[plan[v]][a]
            meta = built.options[u].metas if item is None else built.options[u].metas[item]
        steps = built.redistributions.steps(have, want, meta) or ()
        out.append((built.nodes[src], built.nodes[dst], steps))
    return out


def output_steps(built: Built, plan: np.ndarray) -> list[tuple[str, tuple[Step, ...]]]:
    """Per user output, the steps that hand it back (its partial sums reduced)."""
    from .build import handed_back

    out = []
    for name in built.traced.outputs:
        i = built.index(name)
        have = built.options[i].outputs[plan[i]]
        if _single(have):
            out.append((name, built.redistributions.steps(have, handed_back(have),
                                                          built.options[i].metas) or ()))
    return out


def _single(outputs: object) -> bool:
    return isinstance(outputs, tuple) and bool(outputs) and not isinstance(outputs[0], tuple) \
        and outputs[0] is not None


def collectives_of(built: Built, plan: np.ndarray) -> list[Collective]:
    """Every collective the plan implies, in edge order, then those handing the outputs back."""
    found = []
    for e in range(len(built.edges)):
        for src, dst, steps in edge_steps(built, plan, e):
            for s in steps:
                if s.is_collective:
                    found.append(Collective(s.kind, s.axis, s.bytes_in, src, dst,
                                            built.costs.steps_ns((s,))))
    for name, steps in output_steps(built, plan):
        found.extend(Collective(s.kind, s.axis, s.bytes_in, name, name, built.costs.steps_ns((s,)))
                     for s in steps if s.is_collective)
    return found
