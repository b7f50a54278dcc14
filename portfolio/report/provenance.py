"""What rows say about the code and the mode they ran with: notes under the leaderboard.

A before/after sweep runs configurations from other checkouts (rows' ``checkout``), and a
leaderboard that ranks them must say which code each one was; a command configuration (rows'
``command``) must say what ran and that it left no trace before its answer. A deterministic sweep (rows'
``work``, ``plan_hash``) is there to show one plan per instance, seed and work whatever the load
or the workers: the note counts the distinct plan hashes over every row that should agree, across
all the runs of the report.
"""

from __future__ import annotations

from typing import Iterable, Mapping


def checkout_notes(rows: Iterable[Mapping]) -> list[str]:
    """One note per configuration that ran another checkout's code (path, commit, dirty)."""
    seen: dict[str, set[str]] = {}
    for row in rows:
        where = row.get("checkout")
        if not isinstance(where, Mapping):
            continue
        text = str(where.get("path") or where.get("python"))
        if where.get("commit"):
            text += f" at {str(where['commit'])[:10]}" + (" (uncommitted changes)" if where.get("dirty") else "")
        seen.setdefault(str(row.get("configuration")), set()).add(text)
    return [f"configuration {config} ran the code of {', '.join(sorted(texts))}"
            for config, texts in sorted(seen.items())]


def command_notes(rows: Iterable[Mapping]) -> list[str]:
    """One note per configuration that ran a command (``LABEL=cmd:...``): what ran, and that its
    anytime trace is its final answer alone, at its wall time (so ``--at`` and the convergence
    plots see nothing of it before then)."""
    seen: dict[str, set[str]] = {}
    for row in rows:
        command = row.get("command")
        if isinstance(command, Mapping) and command.get("template"):
            seen.setdefault(str(row.get("configuration")), set()).add(str(command["template"]))
    return [f"configuration {config} ran the command `{'`, `'.join(sorted(texts))}` once per task; "
            f"its plans were verified here, and its anytime trace is its final answer only, at its "
            f"wall time" for config, texts in sorted(seen.items())]


def hash_notes(rows: Iterable[Mapping]) -> list[str]:
    """Deterministic rows: per instance, seed and work, the distinct plan hashes over the
    configurations' rows that ran the same backends with the same options (the mode's promise: one)."""
    groups: dict[tuple, dict[str, int]] = {}
    incomplete: dict[tuple, int] = {}
    for row in rows:
        if row.get("work") is None or not row.get("plan_hash"):
            continue
        det = row.get("deterministic")
        # the runner's identity of the run (backends, options, work) when it gives one
        same = det.get("identity") if isinstance(det, Mapping) and det.get("identity") else \
            repr(sorted((row.get("options_given") or {}).items()))
        key = (str(row.get("instance")), row.get("seed", 0), row.get("work"),
               tuple(row.get("backends") or ()), same)
        hashes = groups.setdefault(key, {})
        hashes[row["plan_hash"]] = hashes.get(row["plan_hash"], 0) + 1
        if isinstance(det, Mapping) and det.get("complete") is False:
            incomplete[key] = incomplete.get(key, 0) + 1
    notes = []
    for key, hashes in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        instance, seed, work, backends, _ = key
        runs = sum(hashes.values())
        which = ", ".join(f"{h} x{n}" for h, n in sorted(hashes.items(), key=lambda kv: -kv[1]))
        verdict = "one plan" if len(hashes) == 1 else f"{len(hashes)} DIFFERENT plans"
        extra = f"; {incomplete[key]} not the deterministic answer (safety net)" if key in incomplete else ""
        notes.append(f"deterministic {instance} seed {seed}, work {work:,}, {'+'.join(backends)}: "
                     f"{verdict} over {runs} run(s) ({which}){extra}")
    return notes


def incomplete(row: Mapping) -> bool:
    """A deterministic row that is not the deterministic answer: its ``complete`` field (older
    rows: their ``deterministic`` record's) is False."""
    if row.get("complete") is not None:
        return row.get("complete") is False
    det = row.get("deterministic")
    return isinstance(det, Mapping) and det.get("complete") is False


def incomplete_notes(rows: Iterable[Mapping], shown: int = 3) -> list[str]:
    """One note naming the deterministic rows that are not the deterministic answer (a backend's
    safety net fired, a worker died, the wall-clock limit came first), with the first reason: their
    costs depend on the machine's load, not on the work alone."""
    hit = [row for row in rows if incomplete(row)]
    if not hit:
        return []
    names = [f"{r.get('instance')}/{r.get('configuration')} s{r.get('seed', 0)}" for r in hit]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    det = hit[0].get("deterministic")
    reason = det.get("reason") if isinstance(det, Mapping) else None
    return [f"not the deterministic answer: {', '.join(names[:shown])}{more}"
            + (f" ({reason})" if reason else "")
            + "; such a cost depends on the machine's load, not on the work alone"]
