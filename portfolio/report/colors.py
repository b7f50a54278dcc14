"""Stable colours: a configuration keeps its colour in every run and report.

A colour comes from a hash of the configuration's name (CRC-32, the same in every process, unlike
Python's ``hash``) into a palette without reds, so that red stays free for nothing and two
configurations are never two reds side by side; names that land on a taken colour within one
picture move to the next free one, in the order of their names (stable for the same set). The
hash is of the configuration's own name (``run/greedy`` hashes ``greedy``), so a configuration
keeps its colour from one run's report to another's.
"""

from __future__ import annotations

import zlib
from typing import Iterable

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#56B4E9", "#CC79A7", "#000000", "#8C564B",
           "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD", "#F0E442", "#1F3A93", "#6B8E23")
"""Okabe-Ito's colour-blind safe colours first, then tab10's non-red ones and two dark extras."""

TEAM_GREY, BASELINE_GREY = "0.6", "0.82"


def base_name(label: str) -> str:
    """The configuration's own name: ``run/config`` and ``run#2/config`` give ``config``."""
    return label.rsplit("/", 1)[-1]


def colour_of(label: str) -> str:
    """The colour a configuration name hashes to, before collisions are resolved."""
    return PALETTE[zlib.crc32(base_name(label).encode()) % len(PALETTE)]


def colours(labels: Iterable[str]) -> dict[str, str]:
    """A colour per label: its hashed colour when free in this set, else the next free one (in the
    order of the names, so the same set always gets the same colours)."""
    out: dict[str, str] = {}
    for label in sorted(set(labels), key=lambda l: (base_name(l), l)):
        start = PALETTE.index(colour_of(label))
        free = [PALETTE[(start + k) % len(PALETTE)] for k in range(len(PALETTE))]
        out[label] = next((c for c in free if c not in out.values()), free[0])
    return out
