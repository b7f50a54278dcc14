"""Tests that need ../shared/benchmarks or a test extra skip where it is absent, but fail under CI
(``CI=true``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import extra, shared


def test_missing_instance_skips_on_a_developer_machine(monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not found"):
        shared(tmp_path / "asplos-2025-iopddl-A.json.gz")


@pytest.mark.parametrize("value", ["true", "1", "TRUE"])
def test_missing_instance_fails_under_ci(monkeypatch, tmp_path, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        shared(tmp_path / "asplos-2025-iopddl-A.json.gz")


def test_present_instance_is_returned(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    path = tmp_path / "example.json"
    path.write_text("{}")
    assert shared(path) == path
    assert isinstance(shared(Path(tmp_path)), Path)


def test_a_missing_test_extra_skips_here_and_fails_under_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no_such_extra_xyz is not installed"):
        extra("no_such_extra_xyz")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: the test extras must be installed"):
        extra("no_such_extra_xyz")
    assert extra("json").dumps([1]) == "[1]"   # present: the module itself
