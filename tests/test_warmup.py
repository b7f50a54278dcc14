"""`portfolio warmup` (portfolio/runner/warmup.py): every step in a child of its own, all at once; a
step that fails, crashes or hangs is named and ended, and the others finish."""

from __future__ import annotations

import time
from pathlib import Path


from conftest import live_children
from faulty_backends import Enumerate, PrepareHangs, PrepareRaises, PrepareSegfaults
from portfolio.runner.warmup import warm_steps, warm_up_all, warm_up_serial


class Marks(Enumerate):
    """Its prepare leaves a file, to show that it ran (in a child: nothing shared but the disk)."""

    name = "marks"

    def __init__(self, path: Path) -> None:
        self.path = path

    def prepare(self):
        self.path.write_text("prepared")


def test_a_failing_step_is_named_and_the_others_finish(tmp_path):
    mark = tmp_path / "mark"
    steps = {s.name: s for s in warm_up_all([PrepareRaises(), PrepareSegfaults(), Marks(mark)])}
    assert set(steps) == {"loader", "presolve", "prepare-raises", "prepare-segfaults", "marks"}
    assert "boom in prepare" in steps["prepare-raises"].error
    assert "without an answer" in steps["prepare-segfaults"].error
    assert steps["loader"].error is None and steps["presolve"].error is None
    assert steps["marks"].error is None and mark.read_text() == "prepared"


def test_a_hanging_step_is_ended_at_the_timeout():
    before = live_children()
    t0 = time.monotonic()
    steps = {s.name: s for s in warm_up_all([PrepareHangs()], timeout=3.0)}
    assert "still compiling after 3 s" in steps["prepare-hangs"].error
    assert time.monotonic() - t0 < 10
    assert not live_children() - before  # the hanging child was ended, the others had finished


def test_serial_runs_the_same_steps_in_order(tmp_path):
    backends = [PrepareRaises(), Marks(tmp_path / "m")]
    steps = warm_up_serial(backends)
    assert [s.name for s in steps] == [name for name, _ in warm_steps(backends)]
    assert [s.seconds for s in steps] == sorted(s.seconds for s in steps)
    assert steps[2].error == "RuntimeError: boom in prepare" and steps[3].error is None


def test_the_command_reports_each_step(portfolio_cli):
    done = portfolio_cli.run("warmup", "-b", "minusage")
    assert done.returncode == 0, done.stderr
    assert "side by side" in done.stderr and "loader" in done.stderr and "presolve" in done.stderr
