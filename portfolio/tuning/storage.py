"""A tune's run folder, ``runs/RUN`` like a bench run: ``meta.json`` (``kind: "tune"``, the
settings, the space, one entry per session), ``results.jsonl`` (every evaluation, a bench row
whose configuration is the trial's name, ``t0007``, with its ``options_given``), ``solutions/``,
``trials.jsonl`` (the tuner's state: every decided trial, its parameters, its costs per pair, its
state and score, in the order told), ``study.db`` (the same trials in Optuna's own storage, for its
dashboard and analysis tools; rebuilt from ``trials.jsonl`` at every start: :mod:`.driver`) and
``tuned.toml`` (the result).

Resuming: the same command finds the same folder (the default name is a digest of the settings
that decide the tune) and continues; a folder of other settings is refused with the field that
differs. A last line cut short by a kill is dropped (:func:`portfolio.bench.storage.repair_tail`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional

from ..bench.environment import git_revision, now_iso, package_versions
from ..bench.storage import META, RESULTS, repair_tail, solution_file, write_json_atomic
from ..results import read_rows
from .space import TuneError

TRIALS = "trials.jsonl"
TUNED = "tuned.toml"
STUDY = "study.db"
KIND = "tune"
FORMAT_VERSION = 1


def settings_digest(identity: dict) -> str:
    """Eight hex digits naming the settings that decide a tune (the default run name)."""
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


class TuneFolder:
    """The run folder: open (new or resumed), append rows and trials, write meta."""

    def __init__(self, folder: Path, identity: dict) -> None:
        self.folder, self.identity = Path(folder), identity
        self.meta: dict = {}
        self.resumed = False

    @property
    def results(self) -> Path:
        return self.folder / RESULTS

    @property
    def trials(self) -> Path:
        return self.folder / TRIALS

    @property
    def tuned(self) -> Path:
        return self.folder / TUNED

    @property
    def study_url(self) -> str:
        """The Optuna storage URL of the folder's study (SQLite, ``study.db``)."""
        return f"sqlite:///{(self.folder / STUDY).resolve()}"

    def open(self, session: dict) -> None:
        """Create the folder, or check that it holds a tune of the same settings and resume it."""
        meta_path = self.folder / META
        if self.folder.exists() and any(self.folder.iterdir()):
            try:
                old = json.loads(meta_path.read_text())
            except (OSError, json.JSONDecodeError):
                raise TuneError(f"{self.folder}: exists and is not a tune run folder (no readable "
                                f"{META}); give another --name") from None
            if old.get("kind") != KIND:
                raise TuneError(f"{self.folder}: a {old.get('kind') or 'bench'} run, not a tune; "
                                f"give another --name")
            before = old.get("identity", {})
            for key in sorted(set(before) | set(self.identity)):
                if before.get(key) != self.identity.get(key):
                    raise TuneError(f"{self.folder}: this tune ran with {key} = "
                                    f"{_short(before.get(key))}, not {_short(self.identity.get(key))}; "
                                    f"resume with the same settings or give another --name")
            self.meta, self.resumed = old, True
        self.folder.mkdir(parents=True, exist_ok=True)
        repair_tail(self.results)
        repair_tail(self.trials)
        self.meta.update({
            "format": FORMAT_VERSION, "kind": KIND, "name": self.folder.name,
            "created": self.meta.get("created", session["started"]), "status": "running",
            "identity": self.identity, "versions": package_versions(), "git": git_revision(),
            "sessions": self.meta.get("sessions", []) + [session]})
        self.save()

    def save(self) -> None:
        write_json_atomic(self.folder / META, self.meta)

    def rows(self) -> list[dict]:
        return read_rows(self.results)[0]

    def records(self) -> list[dict]:
        return read_rows(self.trials)[0]

    def tuning_seconds(self) -> float:
        """Seconds earlier sessions spent (the incumbent's time axis runs on across sessions)."""
        return float(sum(s.get("seconds", 0.0) for s in self.meta.get("sessions", [])[:-1]))

    def add_row(self, row: dict) -> dict:
        """Append an evaluation's row (its plan to ``solutions/``), fsynced."""
        solution = row.pop("solution", None)
        if solution is not None:
            path = solution_file(self.folder, row)
            path.parent.mkdir(exist_ok=True)
            path.write_text("[" + ", ".join(map(str, solution)) + "]\n")
            row["solution_file"] = str(path.relative_to(self.folder))
        _append(self.results, row)
        return row

    def add_record(self, record: dict) -> None:
        _append(self.trials, record)


def _append(path: Path, doc: dict) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(doc, separators=(",", ":"), default=_plain) + "\n")
        out.flush()
        os.fsync(out.fileno())


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {value!r}")


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def new_session(command: Optional[list[str]], jobs: int, dask: Optional[str],
                trials: Optional[int], hours: Optional[float]) -> dict:
    return {"started": now_iso(), "command": command, "jobs": jobs, "dask_scheduler": dask,
            "trials": trials, "hours": hours, "status": "running"}
