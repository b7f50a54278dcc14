"""One toulbar2 solve in a forked child (:func:`portfolio.toulbar2.child.run_in_child`): the stop
signal at the search's limit, the kill a grace later, never past the cap, the child reaped; and
the CPU-time reading the runner uses (:mod:`portfolio.procstat`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from portfolio.backend import Status
from portfolio.evaluate import evaluate
from portfolio.procstat import cpu_seconds
from portfolio.toulbar2.child import KILL_GRACE, run_in_child, started_search
from portfolio_plugins import toulbar2
from conftest import live_children


def _nap(seconds, value):
    time.sleep(seconds)
    return value


def _hang():
    time.sleep(60)


def _until_signalled(work_share: float) -> dict:
    """Says its search started, then works (``work_share`` of each 20 ms busy, the rest asleep)
    until SIGVTALRM comes; answers the CPU and wall seconds from the start to the signal."""
    got = []
    signal.signal(signal.SIGVTALRM, lambda *_: got.append((time.process_time(), time.monotonic())))
    c0, w0 = time.process_time(), time.monotonic()
    started_search()
    while not got:
        busy_until = time.monotonic() + 0.02 * work_share
        while time.monotonic() < busy_until and not got:
            pass
        if work_share < 1.0 and not got:
            time.sleep(0.02 * (1.0 - work_share))
    return {"cpu": got[0][0] - c0, "wall": got[0][1] - w0}


def test_a_child_answers_and_a_hanging_one_is_killed_at_its_limit():
    assert run_in_child(_nap, (0.1, 7), 5.0) == ("ok", 7)
    t0 = time.monotonic()
    assert run_in_child(_hang, (), 0.5) == ("killed", None)
    assert time.monotonic() - t0 < 1.5


def test_the_search_limit_signals_on_the_wall_clock_after_the_post():
    """The signal comes ``search`` seconds after the child said its search started, not earlier,
    whatever CPU it used (an idle child is stopped on time too)."""
    outcome, value = run_in_child(_until_signalled, (0.0,), 10.0, search=0.5)
    assert outcome == "ok" and 0.45 <= value["wall"] <= 0.9, value


def test_cpu_seconds_reads_a_process_and_says_none_for_a_gone_one():
    mine = cpu_seconds(os.getpid())
    assert mine is not None and mine > 0
    assert cpu_seconds(2**22 + 12345) is None
    assert cpu_seconds(2**22 + 12345, children=True) is None


def test_cpu_seconds_counts_waited_for_children_only_when_asked():
    """The runner's switch: a child that burns 0.3 CPU seconds and is waited for counts in
    ``children=True`` (as the runner counts a worker's), never in the plain reading (as the
    toulbar2 engine counts its children, one at a time)."""
    def theirs():
        return cpu_seconds(os.getpid(), children=True) - cpu_seconds(os.getpid())

    before = theirs()
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    assert theirs() - before >= 0.25


def test_the_stop_comes_a_grace_before_the_cap():
    """A search far longer than the time left: the child gets the signal ``KILL_GRACE`` before
    the cap and answers (its best plan comes back), nothing is killed or runs past the cap."""
    t0 = time.monotonic()
    cap = t0 + 2.0
    outcome, value = run_in_child(_until_signalled, (0.0,), 60.0, search=30.0, cap=cap)
    assert outcome == "ok", value
    assert value["wall"] <= cap - t0 - KILL_GRACE + 0.3, value
    assert time.monotonic() <= cap + 0.3


# ------------------------------------------------------------------------------------------ engine
def _sleeper(net, seed, seconds, ub, start=None):
    time.sleep(60)


def test_hanging_children_are_killed_and_the_backend_still_answers():
    from test_toulbar2 import overload, run_backend

    before = live_children()
    backend = toulbar2.Toulbar2Backend()
    backend.child = _sleeper
    result, _, took = run_backend(overload(), 3.5, backend, options={"exact": False})
    assert took < 4.5
    assert result.status == Status.FEASIBLE and evaluate(overload(), result.solution).feasible
    assert "killed=" in result.note and "killed=0" not in result.note, result.note
    assert not live_children() - before
