"""Row storage: the run folder, ``results.jsonl`` (append-only, fsynced), ``meta.json`` and
``solutions/``, and what resuming needs (row keys, a repaired tail).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Optional

from .plan import BenchError

FORMAT_VERSION = 1
RESULTS = "results.jsonl"
META = "meta.json"
SOLUTIONS = "solutions"
LOGS = "logs"


def row_key(row: dict) -> tuple[str, str, int, int]:
    return (row.get("instance"), row.get("configuration"), row.get("seed", 0), row.get("repeat", 0))


def repair_tail(path: Path) -> None:
    """Cut a last line left half-written by an interrupted sweep, so appending stays valid JSONL."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        f.seek(cut)
        f.truncate()


def write_json_atomic(path: Path, doc: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)


def _task_stem(row: dict) -> str:
    safe = lambda s: "".join(c if c.isalnum() or c in "-_." else "_" for c in str(s))  # noqa: E731
    return f"{safe(row['instance'])}.{safe(row['configuration'])}.s{row['seed']}.r{row['repeat']}"


def solution_file(folder: Path, row: dict) -> Path:
    return folder / SOLUTIONS / f"{_task_stem(row)}.txt"


def write_logs(folder: Path, row: dict, output: Optional[dict]) -> None:
    """A command task's captured stdout and stderr to ``logs/``, named in the row's ``logs``."""
    if not output:
        return
    (folder / LOGS).mkdir(exist_ok=True)
    row["logs"] = {}
    for stream, text in output.items():
        path = folder / LOGS / f"{_task_stem(row)}.{stream}.txt"
        path.write_text(text or "", encoding="utf-8")
        row["logs"][stream] = str(path.relative_to(folder))


def prepare_folder(folder: Path, resume: bool, force: bool) -> Optional[Path]:
    """Create the run folder, or check we may write into it. Returns where old results were moved."""
    moved = None
    if folder.exists() and any(folder.iterdir()):
        if force and not resume:
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            moved = folder.with_name(f"{folder.name}.old-{stamp}")
            folder.rename(moved)
        elif not resume:
            raise BenchError(f"{folder}: the run folder already exists; pass --resume to finish it, "
                             f"--force to start over (the old folder is kept, renamed), or another --name")
        elif not (folder / RESULTS).exists() and not (folder / META).exists():
            raise BenchError(f"{folder}: not a bench run folder (no {RESULTS} or {META})")
    folder.mkdir(parents=True, exist_ok=True)
    return moved



def merge_named(old: list[dict], new: list[dict]) -> list[dict]:
    merged = {d["name"]: d for d in old}
    merged.update({d["name"]: d for d in new})
    return list(merged.values())
