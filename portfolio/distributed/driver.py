"""The driver: a local run that answers on its own and takes in every shard's plans.

The driver's local runner starts the fallback plan and the quick safety net (greedy, minusage) at
once, so an answer exists whatever the cluster does. Every other chosen backend waits in it,
*held* while the cluster is up: when the scheduler cannot be reached or is lost, the hold lifts and
they start here with the time left (and the best plan so far, through the runner's shared
incumbent). The runner's ``on_update`` (:meth:`ClusterDriver.__call__`) drains the link's inbox:
each shard has a row of its own in the final table; its plans are verified by the exact evaluator
(``Portfolio.offer``) and only then published back; a plan that fails verification marks the
shard rejected, and its earlier verified plans stay eligible, as for any backend.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from ..backend import Status
from ..runner.result import BackendRun
from ..runner.order import is_safety_net
from .link import SHARD_MARGIN, ClusterLink
from .plans import PlanDecodeError, decode_plan

_STATUS = {"optimal": Status.OPTIMAL, "feasible": Status.FEASIBLE, "no-solution": Status.NO_SOLUTION,
           "error": Status.ERROR, "late": Status.NO_SOLUTION}


TAKE_BUDGET = 0.05
"""Seconds of one runner turn spent on shard messages (verifying plans); the rest wait a turn."""

HELD = "held for the cluster (starts here if the cluster is lost)"


class ClusterDriver:
    """``on_update``, ``hold`` and ``keep_open`` of the driver's local run (see the module)."""

    def __init__(self, link: ClusterLink, say: Callable[[str], None] = lambda line: None) -> None:
        self.link, self.say = link, say
        self.rows: dict[int, BackendRun] = {}
        self.published: Optional[int] = None
        self.told_state = "connecting"
        self.rejected = 0
        self.latency: list[float] = []     # shard sent -> driver verified, seconds (wall clocks)
        self.origin: Optional[tuple[int, float]] = None   # (shard, wall sent) of the best plan
        self.receipts: dict[int, list] = {}   # shard -> [(version, wall received, cost)]
        self.ready: dict[int, dict] = {}      # shard -> {"load_s", "at"}: its problem loaded

    # ------------------------------------------------------------------ runner hooks
    def hold(self, backend: Any) -> Optional[str]:
        if is_safety_net(backend) or self.link.state in ("unreachable", "lost"):
            return None
        return HELD

    def keep_open(self) -> bool:
        return self.link.alive()

    def __call__(self, runner: Any) -> None:
        runner.spare(self.link.spare())
        self.link.alive()   # its watch: a scheduler silent for LOST_AFTER s counts as lost
        self._tell_state()
        for shard in self.link.shards:
            if shard.index not in self.rows:
                row = BackendRun(shard.label, backend=shard.label, seed=shard.seed,
                                 cores=shard.threads, status=Status.RUNNING,
                                 note=shard.describe(), started=round(runner.now(), 4))
                runner.runs[shard.label] = self.rows[shard.index] = row
        turn_ends = time.monotonic() + TAKE_BUDGET   # a backlog must not hold up the deadline
        while self.link.inbox and time.monotonic() < turn_ends:
            self._take(runner, self.link.inbox.popleft())
        found = runner.incumbent()
        if found is not None and (self.published is None or found[0] < self.published):
            self.published = found[0]
            shard = next((i for i, r in self.rows.items() if r.name == found[2]), None)
            origin = self.origin if shard is not None and self.origin and \
                self.origin[0] == shard else None
            self.link.publish(found[0], found[1], origin)

    def _tell_state(self) -> None:
        state = self.link.state
        if state == self.told_state:
            return
        self.told_state = state
        if state == "unreachable":
            self.say(f"cluster: not available ({self.link.error}); running here instead")
        elif state == "lost":
            self.say(f"cluster: lost mid-run ({self.link.error}); the backends start here with "
                     f"the best plan so far")

    def _take(self, runner: Any, message: Any) -> None:
        if not isinstance(message, dict) or message.get("shard") not in self.rows:
            return
        row = self.rows[message["shard"]]
        kind = message.get("kind")
        if kind == "ready":
            row.prepare_seconds = message.get("load_s")
            row.phase = "solve"
            self.ready[message["shard"]] = {"load_s": message.get("load_s"),
                                            "at": round(runner.now(), 3)}
        elif kind == "plan" and not row.disqualified:
            try:
                plan = decode_plan(message)
            except PlanDecodeError as exc:   # its message says "undecodable plan"
                self._reject(runner, row, str(exc))
                return
            why = runner.offer(row, plan, f"from {message.get('source', '?')}")
            if why:
                self._reject(runner, row, why)
            elif isinstance(message.get("wall"), (int, float)):
                self.latency.append(max(0.0, time.time() - message["wall"]))
                if row.best_cost is not None and row.best_cost == runner.incumbent()[0]:
                    self.origin = (message["shard"], float(message["wall"]))
        elif kind == "bound" and not row.disqualified:
            runner.outside_bound(row, message.get("value"), f"from {message.get('source', '?')}",
                                 bool(message.get("exact")))
        elif kind == "done":
            self._done(runner, row, message)

    def _reject(self, runner: Any, row: BackendRun, why: str) -> None:
        self.rejected += 1
        runner.outside_reject(row, f"rejected: {why}"[:300])

    def _done(self, runner: Any, row: BackendRun, message: dict) -> None:
        row.finished = round(runner.now(), 4)
        if isinstance(message.get("received"), (list, tuple)):   # msgpack makes lists tuples
            self.receipts[message["shard"]] = message["received"]
        if row.disqualified:
            return
        status = _STATUS.get(str(message.get("status")), Status.ERROR)
        note = message.get("note") or ""
        found = runner.incumbent()
        if status is Status.OPTIMAL and message.get("cost") is not None and found is not None \
                and message["cost"] == found[0]:
            # optimal at the cost of the driver's verified best, whoever found that plan (often
            # another shard's, taken up by this one): the claim stands like any backend's
            runner.outside_optimal(row, found[0], bool(message.get("bound_exact", True)))
            if row.best_cost != found[0]:
                status, note = Status.FEASIBLE, f"proved the incumbent {found[0]:,} optimal"
        elif status is Status.OPTIMAL:
            status, note = Status.FEASIBLE, "claimed optimal for a plan the driver did not get"
        row.status = status if status is not Status.FEASIBLE or row.best_cost is not None \
            else Status.NO_SOLUTION
        row.note = "; ".join(x for x in (row.note, note) if x)

    # ------------------------------------------------------------------ after the run
    def finish(self, runner_runs: dict) -> None:
        """Rows of shards that never said they were done: lost with their worker, or cut off.
        Rows of backends held for the cluster that never started here leave the table (the shard
        rows name what ran where)."""
        for name, run in list(runner_runs.items()):
            if run.status is Status.PENDING and HELD in run.note:
                del runner_runs[name]
        for index, row in self.rows.items():
            if row.status is not Status.RUNNING:
                continue
            failed = self.link.failed.get(index)
            summary = self.link.summaries.get(index, {})
            if failed:
                row.status, why = Status.CRASHED, f"task failed: {failed}"
            elif summary.get("ended") and summary["ended"] != "finished":
                row.status, why = Status.TIMEOUT, f"ended: {summary['ended']}"
            elif not self.link.alive() and self.link.state != "stopped":
                row.status, why = Status.CRASHED, f"cluster {self.link.state}"
            else:
                row.status, why = Status.TIMEOUT, "no final word before the deadline"
            row.note = "; ".join(x for x in (row.note, why) if x)

    def summary(self) -> dict:
        """The ``cluster`` part of the ``--json`` document."""
        link = self.link
        return {
            "scheduler": link.address or f"local ({link.local_workers} workers)",
            "state": link.final_state(), "error": link.error or None, "run_id": link.run_id,
            "timings": link.timings, "placement": link.placement,
            "shards": [dict(s.to_dict(), label=s.label, summary=link.summaries.get(s.index),
                            failed=link.failed.get(s.index)) for s in link.shards],
            "traffic": dict(link.stats, rejected_plans=self.rejected),
            "published": link.published[-200:],
            "plan_latency_s": _spread(self.latency),
            "sharing_latency_s": _spread(self.sharing()),
            "ready": self.ready,
        }

    def sharing(self) -> list[float]:
        """Seconds from a shard sending a plan that became the incumbent to another shard's
        process having it (wall clocks of the machines involved)."""
        sent = {p["version"]: p["origin"] for p in self.link.published if p.get("origin")}
        out = []
        for shard, receipts in self.receipts.items():
            for version, wall, _cost in receipts:
                origin = sent.get(version)
                if origin is not None and origin[0] != shard:
                    out.append(max(0.0, wall - origin[1]))
        return out


def _spread(values: list[float]) -> Optional[dict]:
    if not values:
        return None
    ordered = sorted(values)
    return {"median": round(ordered[len(ordered) // 2], 4),
            "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 4),
            "max": round(ordered[-1], 4), "count": len(ordered)}


def shard_end_wall(end: float) -> float:
    """The shards' deadline as a ``time.time()`` value, ``SHARD_MARGIN`` before the driver's
    answer deadline ``end`` (monotonic). Why not before the driver's earlier hard deadline: shards
    stream their plans as they find them, so their runners' own end-of-run margins (about 2.4 s at
    60 s) would cost search time for nothing; the driver's stop ends them when it answers, and this
    deadline is their safety net."""
    return time.time() + (end - time.monotonic()) - SHARD_MARGIN
