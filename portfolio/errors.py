"""The one exception type for unusable input, shared by every layer.

A host program (``portfolio.solve``, ``portfolio.load``, ``portfolio.evaluate``) then catches one
type whatever went wrong with what it passed: a malformed problem file or dict, a plan that does not
fit, an unknown backend name. Each layer keeps its own subclass (``ProblemFormatError``,
``SolutionError``, ...) so that existing ``except`` clauses keep working; all are ``ValueError``.
"""

from __future__ import annotations


class ProblemError(ValueError):
    """Input that cannot be used. The message is the line the CLI prints after ``error:``: for a
    problem, the source, the JSON path and the index (``f.json: problem.nodes.usages[3]: ...``)."""
