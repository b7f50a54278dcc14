"""``portfolio shard`` as a real process: a model file in, a verified plan and an exported problem
out, which ``portfolio solve`` reads with its node names; bad input in one line, exit 2; a budget no
plan fits, exit 1 naming module paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TESTS, skip_or_fail

try:
    import torch  # noqa: F401
except ImportError:
    skip_or_fail("torch is not installed: pip install torch==2.13.0 (the CPU build)",
                 "the torch extra must be installed")

MODELS = TESTS / "torch_models.py"


def _one_line_error(done, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_shard_verifies_a_training_plan_and_exports_the_problem(portfolio_cli, tmp_path):
    done = portfolio_cli.run("shard", f"{MODELS}:mlp", "--mesh", "2x4", "--memory", "60%",
                             "-t", "10", "--training", "--optimizer", "sgd", "--verify",
                             "--export", "mlp.json.gz", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["check"]["ok"] and doc["feasible"] and doc["optimizer"] == "sgd"
    assert doc["peak_bytes"] <= doc["budget_bytes"] == int(doc["unsharded_peak_bytes"] * 0.6)
    assert set(doc["parameters"]) == {"layers.0.up.weight", "layers.0.up.bias",
                                      "layers.0.down.weight", "layers.0.down.bias"}
    assert "built" in done.stderr and "verified on every rank" in done.stderr
    exported = tmp_path / "mlp.json.gz"
    solved = portfolio_cli.run("solve", str(exported), "-t", "10", "--json", timeout=120)
    assert solved.returncode == 0, solved.stderr
    assert json.loads(solved.stdout)["cost"] <= doc["cost_ns"]     # the same problem, its limit kept
    again = portfolio_cli.run("shard", f"{MODELS}:mlp", "--mesh", "2x4", "--memory", "60%",
                              "-t", "10", "--training", "--optimizer", "sgd", "--export",
                              "mlp.json.gz", timeout=120)
    _one_line_error(again, "already exists", "--force")


def test_a_budget_no_plan_fits_exits_1_naming_module_paths(portfolio_cli):
    done = portfolio_cli.run("shard", f"{MODELS}:mlp", "--mesh", "8", "--memory", "1KiB", "-t", "5",
                             timeout=180)
    assert done.returncode == 1, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "memory:" in done.stderr and "every plan uses at least" in done.stderr
    assert "layers.0.up" in done.stderr


@pytest.mark.parametrize("target, words", [
    ("nowhere.py:make", ("nowhere.py", "no such file")),
    (f"{MODELS}", ("FILE.py:FACTORY",)),
    (f"{MODELS}:missing", ("has no function missing",)),
    (f"{MODELS}:broken", ("broken() raised RuntimeError", "no such checkpoint")),
    (f"{MODELS}:branchy", ("cannot trace Branchy",)),
])
def test_bad_models_are_one_line(portfolio_cli, target, words):
    _one_line_error(portfolio_cli.run("shard", target, "-t", "5", timeout=180), *words)


@pytest.mark.parametrize("flags, words", [(("--mesh", "2x"), ("mesh",)), (("--memory", "lots"), ("memory",)),
                                          (("-b", "nosuch"), ("nosuch",))])
def test_bad_flags_are_one_line_before_any_tracing(portfolio_cli, flags, words):
    _one_line_error(portfolio_cli.run("shard", f"{MODELS}:mlp", *flags, timeout=120), *words)


def _fake_torch(folder: Path, version: str | None) -> Path:
    """A ``torch`` that is too old (``version``), or whose import is blocked (None)."""
    folder.mkdir()
    if version is None:
        (folder / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
    else:
        (folder / "torch").mkdir()
        (folder / "torch" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    return folder


def test_without_torch_the_command_names_the_install(portfolio_cli, tmp_path):
    cli = portfolio_cli.configured(path=[_fake_torch(tmp_path / "blocked", None)])
    _one_line_error(cli.run("shard", f"{MODELS}:mlp"), "pip install 'iopddl-portfolio[torch]'",
                    "torch==2.13.0")


def test_an_old_torch_names_the_supported_range(portfolio_cli, tmp_path):
    cli = portfolio_cli.configured(path=[_fake_torch(tmp_path / "old", "2.4.1")])
    _one_line_error(cli.run("shard", f"{MODELS}:mlp"), "torch 2.4.1 is not supported", ">= 2.13")
