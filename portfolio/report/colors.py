"""Stable colours: a configuration keeps its colour in every run and report.

A colour comes from a hash of the configuration's name (CRC-32, the same in every process, unlike
Python's ``hash``) into a palette without reds, so that red stays free for nothing and two
configurations are never two reds side by side; names that land on a taken colour within one
picture move to the next free one, in the order of their names (stable for the same set).
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
    """A colour per label: its hashed colour when free in this set, else the next free one.

    Labels that differ only by their run (``r1/greedy``, ``r2/greedy``) share their colour: the
    same configuration, told apart by line style.
    """
    out: dict[str, str] = {}
    taken: dict[str, str] = {}   # colour -> configuration name holding it
    for label in sorted(set(labels), key=lambda l: (base_name(l), l)):
        name = base_name(label)
        held = next((c for c, n in taken.items() if n == name), None)
        if held is None:
            start = PALETTE.index(colour_of(label))
            for step in range(len(PALETTE)):
                candidate = PALETTE[(start + step) % len(PALETTE)]
                if candidate not in taken:
                    held = candidate
                    break
            else:
                held = PALETTE[start]
            taken[held] = name
        out[label] = held
    return out
