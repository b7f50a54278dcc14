"""What the readers and the writers share: the path type, the two errors, the extended format's tag."""

from __future__ import annotations

from pathlib import Path

from ..errors import ProblemError

PathLike = str | Path


class ProblemFormatError(ProblemError):
    """A problem file that cannot be used; the message names the file, the JSON path and the index."""

    def __init__(self, path: PathLike, where: str, message: str) -> None:
        self.path, self.where, self.detail = str(path), where, message
        super().__init__(f"{path}: {where}: {message}" if where else f"{path}: {message}")


class SolutionFormatError(ProblemError):
    """A solution file that cannot be read."""


EXTENDED_FORMAT = "iopddl-portfolio-extended/1"
"""The ``format`` tag of the extended JSON format (what the presolve writes; see :func:`portfolio.io.write.write_extended`)."""
