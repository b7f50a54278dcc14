"""A hook that raises."""

from portfolio.hookspecs import hookimpl


@hookimpl
def portfolio_backends():
    raise RuntimeError("hook exploded")
