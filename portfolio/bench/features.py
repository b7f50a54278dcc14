"""Instance features on a sweep's rows (docs/features.md): computed once per instance per sweep,
not per task, and cached in the run folder.

Why before the tasks, in the sweep's process: a task's clock runs from before it loads its
instance, and its presolve runs in the runner's child; computing the features there would count
their seconds against one configuration and not another, and computing them beside a running
task would take CPU from it. So the sweep computes them first (load, presolve, both feature
steps: about a second per large contest graph), writes them to ``features.json`` (by instance
name, with the file's size and modification time and the features' version), and stamps each
row it writes with its instance's record. A resumed sweep reuses the file while the instance
file and the version are unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Iterable, Optional

from ..features import FEATURES_VERSION, instance_features
from .storage import write_json_atomic

FEATURES_FILE = "features.json"


def _stamp(path: str | Path) -> Optional[list[int]]:
    """The instance file's size and modification time (ns): when they change, so may its features."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [int(st.st_size), int(st.st_mtime_ns)]


def features_record(path: str | Path) -> dict:
    """The features of the instance file at ``path``, timed (``seconds``: load and each step),
    as stored on rows; a file that does not load gives a record with ``error`` and no values."""
    from ..io import load_problem

    t0 = time.perf_counter()
    try:
        problem = load_problem(path)
    except Exception as exc:  # noqa: BLE001 -- the task reports the bad file; the sweep goes on
        return {"version": FEATURES_VERSION, "values": {}, "seconds": {},
                "error": f"not loaded: {type(exc).__name__}: {exc}"}
    loaded = time.perf_counter() - t0
    got = instance_features(problem)
    got.seconds = {"load": loaded, **got.seconds}
    return got.to_json()


def _read_cache(file: Path) -> dict:
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(file.read_text())
        if isinstance(doc, dict):
            return doc
    return {}


def sweep_features(instances: Iterable, folder: Path) -> dict[str, dict]:
    """Per instance name (``instances``: :class:`.plan.Instance`), its features record, from the
    run folder's cache when the file and the version are unchanged, else computed and cached."""
    file = folder / FEATURES_FILE
    cache = _read_cache(file)
    out: dict[str, dict] = {}
    changed = False
    for inst in instances:
        stamp = _stamp(inst.path)
        old = cache.get(inst.name)
        if (isinstance(old, dict) and old.get("version") == FEATURES_VERSION
                and old.get("file") == stamp and old.get("path") == str(inst.path)):
            record = {k: v for k, v in old.items() if k not in ("file", "path")}
        else:
            record = features_record(inst.path)
            cache[inst.name] = {**record, "path": str(inst.path), "file": stamp}
            changed = True
        out[inst.name] = record
    if changed:
        write_json_atomic(file, cache)
    return out
