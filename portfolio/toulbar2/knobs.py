"""The engine's environment knobs (for benchmarks), read one way: a value the knob does not allow
is never used silently, the default is taken and the reason goes into the solve's notes."""

from __future__ import annotations

import math
import os


def env_choice(env: str, allowed: tuple, default: str, notes: list) -> str:
    """``$env`` when it names one of ``allowed``, else ``default`` (an unknown name is noted)."""
    value = os.environ.get(env, default)
    if value not in allowed:
        notes.append(f"unknown {value!r} in ${env}: {default}")
        return default
    return value


def env_number(env: str, default: float, notes: list, least: float = -math.inf,
               most: float = math.inf, unit: str = "") -> float:
    """``$env`` as a number clipped to ``[least, most]`` when set, else ``default`` (noted when it
    is not a number; ``unit`` follows the default in the note)."""
    raw = os.environ.get(env)
    if raw is None:
        return default
    try:
        return min(most, max(least, float(raw)))
    except ValueError:
        notes.append(f"${env}={raw!r} is not a number: {default}{unit}")
        return default
