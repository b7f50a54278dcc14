"""What the commands share: the stderr console, loading a problem, JSON on stdout, output paths."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from ..data import example_path
from ..problem import Problem
from .app import UserError

if TYPE_CHECKING:
    from ..adapters.conversion import Conversion

console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)
"""Rich output on stderr; when stderr is a file or pipe (logs, CI), tables get 140 columns, not 80."""


bundled_example = example_path
"""Path of the small example instance shipped inside the package (``portfolio.data.example_path``)."""


def _load(path: str | Path) -> tuple[Problem, float]:
    """Load a problem in any format (by its name: contest or extended JSON, XLA request)."""
    conversion, seconds = _read(path)
    return conversion.problem, seconds


def _read(path: str | Path, cost_scale: float = 1.0, fmt: str | None = None) -> tuple[Conversion, float]:
    """Load a problem in any format with its map back to the file's nodes; the conversion's notes
    (followers folded, costs rounded or shifted) go to stderr."""
    from ..api.inputs import read  # the one reading path, shared with portfolio.load / solve

    t0 = time.perf_counter()
    conversion = read(path, cost_scale, fmt)  # a ProblemError becomes the one-line error, exit 2
    for note in conversion.notes:
        console.print(f"[yellow]note:[/] {path}: {note}", highlight=False, soft_wrap=True)
    return conversion, time.perf_counter() - t0


def _emit_json(doc: dict) -> None:
    click.echo(json.dumps(doc, indent=2))


def _refuse_overwrite(path: str | Path | None, force: bool) -> None:
    """Check an output path before any work (a solve must not end in a traceback at the write).

    Refuses to overwrite without ``--force`` and to write onto a folder; creates missing folders.
    """
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{path}: is a folder; give a file name")
    if p.exists() and not force:
        raise UserError(f"{path}: already exists; pass --force to overwrite it")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{path}: cannot create its folder: {exc.strerror or exc}") from None
    if not os.access(p.parent, os.W_OK):
        raise UserError(f"{path}: folder {p.parent} is not writable")
