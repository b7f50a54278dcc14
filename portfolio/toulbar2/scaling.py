"""Integer scaling of the toulbar2 networks: a network is scaled, or refused, never wrapped.

toulbar2's costs are integers below ``MAX_COST`` (about 5.1e17) and pytoulbar2 hands them over as C
doubles (exact below 2**53). Every function is shifted so that its least finite entry is 0 (the
shifts are constants), then divided by one ``scale``: the smallest power of 10 with the sum of all
functions' finite spans ``<= TOTAL_LIMIT = 2**50`` (:func:`choose_scale`). The penalised network
(:mod:`.network`) rounds up (:func:`scale_table`), the priced bound (:mod:`.bound`) rounds down.
Any complete assignment's finite cost then stays near 2**50, far below toulbar2's top and exactly
representable, so nothing can wrap. When the needed scale exceeds ``MAX_SCALE`` (costs around 1e27:
no resolution left), or a span is not finite (an infinite weight), :class:`ScalingError` is raised
instead: the network is refused, never wrapped.
"""

from __future__ import annotations

import math

import numpy as np

TOTAL_LIMIT = 2**50
"""The largest sum of scaled finite spans: a complete assignment's penalised cost stays below it
(plus one per function for the rounding up), far below toulbar2's top (~5.1e17) and 2**53."""

MAX_SCALE = 10**15
"""Refuse a network that needs a larger divisor (finite costs around 1e30: nothing left to compare)."""


class ScalingError(ValueError):
    """The penalised network cannot be represented in toulbar2's integer costs."""


def choose_scale(total_span: float, limit: int = TOTAL_LIMIT, max_scale: int = MAX_SCALE) -> int:
    """The smallest power of 10 that brings ``total_span`` to at most ``limit``; raises
    :class:`ScalingError` when that power exceeds ``max_scale`` or the span is not finite."""
    if not math.isfinite(total_span) or total_span < 0:
        raise ScalingError(f"penalised network has a non-finite cost span ({total_span})")
    scale = 1
    while total_span / scale > limit:
        scale *= 10
        if scale > max_scale:
            raise ScalingError(f"penalised network's costs span {total_span:.3g}: dividing by "
                               f"{max_scale:.0e} still leaves more than {limit:.3g}; refused")
    return scale


def scale_table(rel: np.ndarray, scale: int) -> np.ndarray:
    """Shifted entries (least finite entry 0, ``inf`` for forbidden) divided by ``scale``, rounded
    up; ``inf`` stays ``inf``. Raises :class:`ScalingError` if a finite entry would leave 2**53."""
    out = np.ceil(rel / scale)
    finite = np.isfinite(out)
    if finite.any() and out[finite].max() > 2.0**53:
        raise ScalingError(f"a scaled cost {out[finite].max():.3g} is not exact in a double")
    return out
