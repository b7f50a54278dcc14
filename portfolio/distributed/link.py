"""The driver's Dask side, in a thread of its own: connect (or start a local cluster), place the
problem, split and submit the shards, collect their messages, publish the incumbent, stop.

Primitives (Pub/Sub left distributed in 2025): shards -> driver through one Dask ``Queue`` (many
producers, one consumer, ordered, long-polled by the driver: no traffic while nothing happens);
driver -> shards through one ``Variable`` holding the latest incumbent plus a chain of ``Event``
objects, ``{run}-v1``, ``{run}-v2``, ...: publishing number k sets the variable, then event k, and
every shard waits on the event after the last one it saw. A shard never polls; one ``set`` wakes
them all; a late shard finds the events it missed set and reads the latest value at once. The
stop signal is the incumbent chain's last link (``stop: True``), so one wait watches both.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any, Optional, Sequence
from urllib.parse import urlsplit

from ..options import TRANSFERS
from .split import Shard, WorkerInfo, split_shards

CONNECT_TIMEOUT = 10.0
"""Longest wait for the Dask handshake with a scheduler that answered the TCP check."""

PROBE_TIMEOUT = 2.0
"""Longest wait for the TCP check of the scheduler's address before the run starts."""

LOST_AFTER = 3.0
"""Seconds of failing calls to the scheduler after which the cluster counts as lost."""

WORKER_WAIT = 0.15
"""Share of the time left that the driver waits for a first worker to join an empty cluster."""

ROLL_CALL = 1.0
"""Seconds between two checks that every shard's worker is still in the cluster."""

LOCAL_MIN_SECONDS = 10.0
"""``--dask-workers`` with a shorter budget runs on this machine only: starting the local
cluster and its shards takes ~3 s of both cores here, which the local answer needs more."""

COLLECT_EVERY = 0.05
"""Seconds between two reads of the shards' queue when it was empty (a publish wakes it at once)."""

SHARD_MARGIN = 0.3
"""The shards' own deadline lies this many seconds before the driver's answer deadline; the driver
stops them earlier, when it answers (see ``driver.shard_end_wall``)."""


def dask_missing() -> Optional[str]:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return "one solve on a cluster needs dask: pip install 'iopddl-portfolio[dask]'"
    return None


def probe(address: str, timeout: float = PROBE_TIMEOUT) -> Optional[str]:
    """Why the scheduler's address cannot be reached (a TCP connect), or None when it answers.
    Refused connections fail at once; a silent host costs ``timeout``. Protocols without a host
    and port (``inproc://``, ``ucx://``) are not checked here."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme not in ("tcp", "tls", "ws", "wss"):
        return None
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        return f"bad address {address!r}: {exc}"
    if not host or not port:
        return f"bad address {address!r}: expected tcp://HOST:PORT"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"


class ClusterLink:
    """One cluster run's connection; every Dask call happens in its thread (see the module).

    The main thread reads ``inbox`` (shard messages), calls :meth:`publish` with verified plans
    only, :meth:`stop` at the end and :meth:`close` after the answer is printed. ``state`` is one of
    ``connecting``, ``running``, ``unreachable`` (never got going), ``lost`` (gone mid-run),
    ``stopped``."""

    def __init__(self, problem_path: str, address: Optional[str] = None,
                 local_workers: Optional[int] = None, transfer: str = "auto",
                 local_threads: Optional[int] = None, command: Optional[list[str]] = None) -> None:
        if (address is None) == (local_workers is None):
            raise ValueError("give a scheduler address or a number of local workers, not both")
        if transfer not in TRANSFERS:
            raise ValueError(f"transfer must be one of {TRANSFERS}")
        self.problem_path, self.address, self.local_workers = problem_path, address, local_workers
        self.transfer, self.local_threads, self.command = transfer, local_threads, command
        self.run_id = f"portfolio-{uuid.uuid4().hex[:10]}"
        self.names = {"run": self.run_id, "queue": f"{self.run_id}-up",
                      "variable": f"{self.run_id}-best", "event": f"{self.run_id}-v"}
        self.inbox: deque[dict] = deque()   # shard messages, oldest first
        self.state, self.error = "connecting", ""
        self.shards: list[Shard] = []
        self.summaries: dict[int, dict] = {}
        self.failed: dict[int, str] = {}
        self.timings: dict[str, float] = {}
        self.stats = {"messages_in": 0, "plan_bytes_in": 0, "publishes": 0, "plan_bytes_out": 0,
                      "scattered_bytes": 0}
        self.placement: dict[str, str] = {}
        self.published: list[dict] = []   # (version, cost, wall) of every publish
        self._slot: Optional[tuple] = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._version = 0
        self._client: Any = None
        self.host: Any = None   # the local cluster's host process (--dask-workers)
        self._thread: Optional[threading.Thread] = None
        self._t0 = time.monotonic()
        self._contact = time.monotonic()   # the link thread's last completed round with the scheduler
        self._next_roll_call = 0.0

    # ------------------------------------------------------------------ main-thread side
    def start(self, backends: Sequence[Any], seed: int, end_wall: float, spec: dict) -> None:
        """Connect and submit in the link's thread; returns at once."""
        if self.local_workers is not None:   # before the runner starts: see local_cluster
            from .local_cluster import start_host

            cores = self.local_threads or len(os.sched_getaffinity(0))
            self.host = start_host(self.local_workers, max(1, cores // self.local_workers))
        self._thread = threading.Thread(target=self._main, args=(list(backends), seed, end_wall, spec),
                                        name="portfolio-cluster-link", daemon=True)
        self._thread.start()

    def publish(self, cost: int, plan: Any, origin: Optional[tuple[int, float]] = None) -> None:
        """Hand a *verified* plan to the link thread (only the latest one waiting is kept);
        ``origin``: (shard, wall time it sent the plan), for the sharing-latency figures."""
        self._slot = (int(cost), plan, origin)
        self._wake.set()

    def stop(self) -> None:
        """Tell the shards to end (from the link thread, without waiting here)."""
        self._stop.set()
        self._wake.set()

    def final_state(self) -> str:
        """The state for the report: ``stopped`` once the stop was asked for (its message may
        still be on its way)."""
        return "stopped" if self._stop.is_set() and self.state == "running" else self.state

    def alive(self) -> bool:
        self._watch()
        return self.state in ("connecting", "running")

    def _watch(self) -> None:
        """A scheduler gone silent counts as lost after ``LOST_AFTER`` seconds, even while the link
        thread is still inside a call to it (Dask retries a refused connection for the client's
        whole timeout before that call fails)."""
        if self.state == "running" and time.monotonic() - self._contact > LOST_AFTER:
            self.state = "lost"
            self.error = self.error or f"no answer from the scheduler for {LOST_AFTER:g} s"

    def close(self, until: Optional[float] = None) -> None:
        """End the link by ``until`` (a ``time.monotonic()`` value; default: 1.5 s from now): the
        stop signal sent, the client and our local cluster closed gracefully while time allows,
        and the local cluster's processes killed if they are still there."""
        until = time.monotonic() + 1.5 if until is None else until
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout=max(0.05, min(0.5, until - time.monotonic())))
        client, self._client = self._client, None
        if client is not None:
            closer = threading.Thread(target=_quiet_close, args=(client,), daemon=True)
            closer.start()
            closer.join(timeout=max(0.05, min(0.5, until - time.monotonic())))
        if self.host is not None:
            from .local_cluster import stop_host

            stop_host(self.host, until - time.monotonic())

    def spare(self) -> set[int]:
        """Processes of ours the driver's runner must not end (the local cluster's host)."""
        return set() if self.host is None else {self.host.pid}

    # ------------------------------------------------------------------ link thread
    def _since(self) -> float:
        return round(time.monotonic() - self._t0, 3)

    def _main(self, backends: list, seed: int, end_wall: float, spec: dict) -> None:
        try:
            self._connect()
            if self._stop.is_set():
                return
            workers = self._workers(end_wall)
            if not workers:
                self.state, self.error = "unreachable", "no Dask worker joined in time"
                return
            refs = self._place(workers)
            self.shards = split_shards(workers, backends, seed)
            self._submit(refs, end_wall, spec)
            self._contact = time.monotonic()
            self.state = "running"
            self._serve()
        except Exception as exc:  # anything Dask raises: the local run goes on without the cluster
            if self.state == "connecting":
                self.state = "unreachable"
            elif self.state == "running":
                self.state = "lost"
            self.error = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            if self.state in ("running", "connecting"):
                self.state = "stopped"

    def _connect(self) -> None:
        from distributed import Client

        if self.host is not None:
            from .local_cluster import read_address

            address = read_address(self.host)
            if address is None:
                raise RuntimeError("the local Dask cluster did not start (see the lines above)")
            self.timings["cluster_started"] = self._since()
            self._client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        else:
            self._client = Client(self.address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        self.timings["connected"] = self._since()

    def _workers(self, end_wall: float) -> list[WorkerInfo]:
        """The cluster's workers, waiting ``WORKER_WAIT`` of the time left for the first ones to
        join (an empty cluster then counts as unreachable: the held backends start here)."""
        give_up = time.time() + WORKER_WAIT * max(0.0, end_wall - time.time())
        while not self._stop.is_set():
            info = self._client.scheduler_info(n_workers=-1)["workers"]
            if info:
                self.timings["workers"] = self._since()
                return [WorkerInfo(addr, w.get("host") or urlsplit(addr).hostname or addr,
                                   int(w.get("nthreads", 1)), str(w.get("name", "")))
                        for addr, w in info.items()]
            if time.time() >= give_up:
                break
            time.sleep(0.2)
        return []

    def _place(self, workers: list[WorkerInfo]) -> dict[str, Any]:
        """What each worker's shard gets as its problem: the path (it can read the same file) or
        the file's bytes, scattered once to the workers that cannot."""
        path = str(Path(self.problem_path).resolve())
        size = os.path.getsize(path)
        addresses = [w.address for w in workers]
        if self.transfer == "path":
            sees = set(addresses)
        elif self.transfer == "scatter":
            sees = set()
        else:
            found = self._client.run(_file_size, path, workers=addresses, on_error="return")
            sees = {a for a, s in found.items() if s == size}
        refs: dict[str, Any] = {a: path for a in sees}
        blind = [a for a in addresses if a not in sees]
        if blind:
            data = Path(path).read_bytes()
            [future] = self._client.scatter([{"name": Path(path).name, "data": data}],
                                            workers=blind, broadcast=True, hash=False)
            refs.update({a: future for a in blind})
            self.stats["scattered_bytes"] = len(data) * len(blind)
        self.placement = {a: ("path" if a in sees else "scatter") for a in addresses}
        self.timings["placed"] = self._since()
        return refs

    def _submit(self, refs: dict[str, Any], end_wall: float, spec: dict) -> None:
        from .shard_task import run_shard

        self.futures = {}
        for shard in self.shards:
            shard_spec = dict(spec, index=shard.index, host=shard.host, backends=shard.backends,
                              seed=shard.seed, threads=shard.threads, end_wall=end_wall)
            if self.command:
                shard_spec["command"] = self.command
            self.futures[shard.index] = self._client.submit(
                run_shard, shard_spec, refs[shard.worker], self.names, workers=[shard.worker],
                allow_other_workers=False, pure=False, key=f"{self.run_id}-shard-{shard.index}")
        self.timings["submitted"] = self._since()

    def _serve(self) -> None:
        from distributed import Queue, Variable

        queue = Queue(self.names["queue"], client=self._client)
        variable = Variable(self.names["variable"], client=self._client)
        failing_since: Optional[float] = None
        while self.state == "running":   # "lost" when the main thread's watch gave up on it
            try:
                self._publish(variable)
                if self._stop.is_set():
                    self._send_stop(variable)
                    return
                self._collect(queue)
                self._check_futures()
                failing_since = None
                self._contact = time.monotonic()
            except Exception as exc:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > LOST_AFTER:
                    self.state, self.error = "lost", f"{type(exc).__name__}: {exc}"[:300]
                    return
                time.sleep(0.1)

    def _collect(self, queue: Any) -> None:
        # Not a blocking get(timeout=...): this version of the scheduler logs every timed-out get
        # as an error. Twenty small calls a second from the one driver cost the scheduler nothing.
        items = list(queue.get(batch=True) or [])
        if not items:
            self._wake.wait(COLLECT_EVERY)
            self._wake.clear()
            return
        from .plans import unpack

        for item in map(unpack, items):
            self.stats["messages_in"] += 1
            if isinstance(item, dict) and item.get("kind") == "plan":
                self.stats["plan_bytes_in"] += len(item.get("data") or b"")
            self.inbox.append(item)

    def _publish(self, variable: Any) -> None:
        slot, self._slot = self._slot, None
        if slot is None:
            return
        from distributed import Event

        from .plans import encode_plan, pack

        cost, plan, origin = slot
        message = encode_plan(plan)
        self._version += 1
        wall = time.time()
        variable.set(pack(dict(message, version=self._version, cost=cost, wall=wall)))
        Event(f"{self.names['event']}{self._version}", client=self._client).set()
        self.stats["publishes"] += 1
        self.stats["plan_bytes_out"] += len(message["data"])
        self.published.append({"version": self._version, "cost": cost, "wall": wall,
                               "origin": origin})

    def _send_stop(self, variable: Any) -> None:
        from distributed import Event

        from .plans import pack

        self._version += 1
        variable.set(pack({"version": self._version, "stop": True}))
        Event(f"{self.names['event']}{self._version}", client=self._client).set()
        self.state = "stopped"

    def _check_futures(self) -> None:
        if time.monotonic() >= self._next_roll_call:   # a dead worker's task waits forever
            self._next_roll_call = time.monotonic() + ROLL_CALL
            present = set(self._client.scheduler_info(n_workers=-1)["workers"])
            for shard in self.shards:
                if shard.worker not in present and shard.index not in self.summaries:
                    self.failed.setdefault(shard.index, f"worker lost: {shard.worker}")
        for index, future in list(getattr(self, "futures", {}).items()):
            if index in self.summaries or index in self.failed or not future.done():
                continue
            if future.status == "finished":
                self.summaries[index] = future.result()
            elif future.status == "error":
                exc = future.exception(timeout=1)
                self.failed[index] = f"{type(exc).__name__}: {exc}"[:200]
            else:   # cancelled: the client lost the scheduler (no exception to name)
                self.failed[index] = str(future.status)


def _file_size(path: str) -> int:
    return os.path.getsize(path)


def _quiet_close(client: Any) -> None:
    try:
        client.close(timeout=1)
    except Exception:
        pass
