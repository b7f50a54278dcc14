"""A stand-in for ``python -m portfolio.distributed.shard_main`` that speaks the same JSON-lines
protocol but sends the plans a test scripted, good or bad (``ClusterLink(command=...)``).

Usage: ``python fake_shard.py SCENARIO.json``. The scenario maps a shard index (as text) to a list of
steps, sent in order right after ``ready``:

- ``{"plan": [s0, s1, ...], "cost": C}``: a plan message, encoded here (uint8, zlib, base64) without
  the project's encoder, claiming cost ``C``;
- ``{"message": {...}}``: a message sent as it is (a malformed payload);
- ``{"sleep": seconds}``.

Then ``done`` (status ``feasible``) and exit. A shard index missing from the scenario sends nothing
but ``done``. The spec (the first stdin line) is echoed to stderr for the test's logs.
"""

from __future__ import annotations

import base64
import json
import sys
import time
import zlib


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def plan_message(plan: list[int], cost: int) -> dict:
    data = zlib.compress(bytes(plan), 1)   # every index < 256: one byte each
    return {"kind": "plan", "n": len(plan), "dtype": "u1",
            "data": base64.b64encode(data).decode("ascii"), "cost": cost, "source": "fake",
            "wall": time.time()}


def main(argv: list[str]) -> int:
    with open(argv[0]) as f:
        scenario = json.load(f)
    spec = json.loads(sys.stdin.readline())
    print(f"fake shard {spec['index']}: {json.dumps(spec)}", file=sys.stderr, flush=True)
    send({"kind": "hello", "pid": 0, "wall": time.time()})
    send({"kind": "ready", "load_s": 0.0, "wall": time.time(), "nodes": 0})
    for step in scenario.get(str(spec["index"]), []):
        if "sleep" in step:
            time.sleep(float(step["sleep"]))
        elif "plan" in step:
            send(plan_message(step["plan"], int(step["cost"])))
        else:
            send(dict(step["message"]))
    send({"kind": "done", "status": "feasible", "note": "fake shard", "received": []})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
