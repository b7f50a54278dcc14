"""portfolio-example-plugin: the ``example`` backend for the IOPDDL solver portfolio.

pyproject.toml's ``portfolio.backends`` entry point names this module. Keep it cheap to import:
heavy solver libraries belong inside ``solve`` or ``available``.
"""

from portfolio.hookspecs import hookimpl

from .backend import ExampleBackend


@hookimpl
def portfolio_backends() -> list:
    return [ExampleBackend()]
