"""Data shipped with the package: the bundled example instance and the contest's result tables."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def example_path() -> Path:
    """The small example instance shipped with the package (8 nodes, 432 plans, optimum 305)."""
    return Path(str(resources.files("portfolio.data") / "example.json"))
