"""Helpers for a plugin's own tests (as pytest ships ``pytester``): the check of
``portfolio check-plugin`` as a function, and as an assertion.

    from portfolio.testing import assert_backend_passes
    from my_plugin import MyBackend

    def test_my_backend_keeps_the_contract():
        assert_backend_passes(MyBackend())      # an object: no install needed

POSIX only (the check runs the real runner: forked workers).
"""

from __future__ import annotations

from typing import Any, Union

from .plugincheck import CHECKS, CheckReport, check_backend

__all__ = ["CHECKS", "CheckReport", "assert_backend_passes", "check_backend"]


def assert_backend_passes(target: Union[str, Any], **options: Any) -> CheckReport:
    """:func:`check_backend` (same arguments), raising ``AssertionError`` with the check's tables
    when it found a breach; returns the report otherwise."""
    report = check_backend(target, **options)
    if not report.ok:
        raise AssertionError(f"{len(report.breaches)} breach(es) of the backend contract:\n"
                             + report.text())
    return report
