"""The shared contest instances by letter, for the benchmark scripts' tables."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator


def existing(bench: Path, names: Iterable[str]) -> Iterator[tuple[str, Path]]:
    """(letter, path) of each instance file found in ``bench``; a missing one gets a table row that
    says so (a table with a silent gap would read as a complete one)."""
    for name in names:
        path = bench / f"asplos-2025-iopddl-{name}.json.gz"
        if path.exists():
            yield name, path
        else:
            print(f"| {name} | (missing: {path}) |")
