"""Whether PyTorch is here and recent enough, asked without importing it first.

The front end is an optional extra (``pip install 'iopddl-portfolio[torch]'``): without torch, or
with a release older than the DTensor pieces it builds on, every entry point says so in one line
(a :class:`~portfolio.errors.ProblemError`, exit code 2 in the CLI) instead of a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import re

from ...errors import ProblemError

MINIMUM = (2, 13)
"""The oldest torch release whose DTensor has what the front end uses (the sharding propagator's
strategies, ``LocalTensorMode``, the fake process group): 2.13.0, the release CI tests."""

SUPPORTED = "torch >= 2.13 (tested on 2.13.0, CPU build)"
INSTALL = "pip install 'iopddl-portfolio[torch]' (or torch==2.13.0 for the CPU build)"


class TorchUnavailable(ProblemError):
    """torch is missing or too old: the line names the install command or the supported range."""


def version_tuple(text: str) -> tuple[int, int]:
    """``"2.13.0+cpu"`` -> ``(2, 13)``; an unreadable version -> ``(0, 0)``."""
    found = re.match(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def require_torch() -> str:
    """The installed torch's version, after checking it is supported; :class:`TorchUnavailable`
    otherwise."""
    try:
        found = importlib.util.find_spec("torch") is not None
        torch = importlib.import_module("torch") if found else None
    except (ImportError, ValueError):  # a broken install, or imports of torch blocked
        torch = None
    if torch is None:
        raise TorchUnavailable(f"the PyTorch front end needs torch, which is not installed: {INSTALL}")
    version = str(getattr(torch, "__version__", "0"))
    if version_tuple(version) < MINIMUM:
        raise TorchUnavailable(f"torch {version} is not supported: the PyTorch front end needs "
                               f"{SUPPORTED}")
    return version
