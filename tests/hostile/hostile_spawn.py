"""Start long-lived programs and leave: plainly, in a new session, daemonised, with no environment.

Each program carries the marker from HOSTILE_MARKER in its command line, so a test can look for
survivors. Variants: return at once, hang until killed, or crash.
"""

import os
import subprocess
import sys
import time

from portfolio.backend import Backend, SolveResult, Status
from portfolio.hookspecs import hookimpl

SLEEPER = "import time; time.sleep(1000)"


def spawn_all():
    marker = os.environ.get("HOSTILE_MARKER", "hostile-marker")
    cmd = [sys.executable, "-c", SLEEPER, marker]
    subprocess.Popen(cmd)
    subprocess.Popen(cmd, start_new_session=True)
    subprocess.Popen(cmd, env={})  # no environment: no mark to find it by
    # daemonised: the intermediate shell exits at once, its child is orphaned
    subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "{SLEEPER}" {marker} &'],
                     start_new_session=True).wait()
    time.sleep(0.3)


class _Spawner(Backend):
    description = "leaves programs running"


class Leaves(_Spawner):
    name = "spawn-leave"

    def solve(self, problem, deadline, seed, warm_start, report):
        spawn_all()
        return SolveResult(Status.FEASIBLE, problem.min_usage_strategies.copy())


class Hangs(_Spawner):
    name = "spawn-hang"

    def solve(self, problem, deadline, seed, warm_start, report):
        spawn_all()
        report(problem.min_usage_strategies.copy())
        while True:
            time.sleep(0.1)


class Crashes(_Spawner):
    name = "spawn-crash"

    def solve(self, problem, deadline, seed, warm_start, report):
        spawn_all()
        report(problem.min_usage_strategies.copy())
        time.sleep(0.5)
        os._exit(3)


@hookimpl
def portfolio_backends():
    return [Leaves(), Hangs(), Crashes()]
