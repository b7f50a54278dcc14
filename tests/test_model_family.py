"""The model-graph benchmark family (`benchmarks/frontends.py family`, docs/benchmarks/models.md)
at the zoo's test size: members built through the front end's export, read back with their node
names, cached by recipe, rebuilt when the recipe changes, and a file without a recipe left alone."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from conftest import skip_or_fail

try:
    import torch  # noqa: F401
except ImportError:
    skip_or_fail("torch is not installed: pip install torch==2.13.0 (the CPU build)",
                 "the torch extra must be installed")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "frontends.py"


def _family(monkeypatch, capsys, out: Path, *options: str) -> str:
    """Runs the part as `python benchmarks/frontends.py family ...` would, in this process."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "family", "--size", "test", "--models", "mlp",
                                      "--meshes", "2x4", "--modes", "infer", "--out", str(out), *options])
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    before = sys.modules.get("common")
    try:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    finally:  # the scripts' `common` must not stay importable once the path is restored
        if before is None:
            sys.modules.pop("common", None)
        else:
            sys.modules["common"] = before
    return capsys.readouterr().out


def test_family_builds_caches_and_rebuilds(tmp_path, monkeypatch, capsys):
    from portfolio.api.inputs import read

    printed = _family(monkeypatch, capsys, tmp_path, "--memory", "none,50")
    rows = [ln for ln in printed.splitlines() if ln.startswith("| mlp-")]
    assert [r.split(" | ")[0] for r in rows] == ["| mlp-2x4-infer-nolimit", "| mlp-2x4-infer-m50"]
    assert all(r.rstrip(" |").endswith("built") for r in rows)

    free, tight = (read(tmp_path / f"mlp-2x4-infer-{m}.json.gz") for m in ("nolimit", "m50"))
    assert free.problem.usage_limit is None and tight.problem.usage_limit is not None
    names = tight.naming.names
    assert names is not None and len(names) == tight.problem.num_nodes
    assert "layers.0.up.weight" in names and "input:0" in names
    record = json.loads((tmp_path / "mlp-2x4-infer-m50.recipe.json").read_text())
    assert record["recipe"]["memory"] == "50%" and record["recipe"]["sizes"]["layers"] == 2
    assert record["sizes"]["nodes"] == tight.problem.num_nodes
    assert record["sizes"]["usage_limit"] == record["built"]["unsharded_peak"] // 2 > 0

    built_at = (tmp_path / "mlp-2x4-infer-m50.json.gz").stat().st_mtime_ns
    again = _family(monkeypatch, capsys, tmp_path, "--memory", "50")
    assert "| mlp-2x4-infer-m50 |" in again and again.rstrip().endswith("cached |")
    assert (tmp_path / "mlp-2x4-infer-m50.json.gz").stat().st_mtime_ns == built_at

    smaller = _family(monkeypatch, capsys, tmp_path, "--memory", "50", "--set", "mlp.layers=1")
    assert smaller.rstrip().endswith("built |")
    assert read(tmp_path / "mlp-2x4-infer-m50.json.gz").problem.num_nodes < tight.problem.num_nodes


def test_family_leaves_a_file_without_a_recipe_alone(tmp_path, monkeypatch, capsys):
    foreign = tmp_path / "mlp-2x4-infer-m70.json.gz"
    foreign.write_bytes(b"someone else's")
    with pytest.raises(SystemExit, match="exists without a recipe"):
        _family(monkeypatch, capsys, tmp_path, "--memory", "70")
    assert foreign.read_bytes() == b"someone else's"


def test_family_names_a_bad_option_in_one_line(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as stop:
        _family(monkeypatch, capsys, tmp_path, "--memory", "0,70", "--set", "gpt3.layers=2")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "unknown --memory 0, --set gpt3.layers=2" in err
    assert not list(tmp_path.iterdir())
