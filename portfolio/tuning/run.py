"""``run_tune``: settings in, a run folder and a TOML config out; what ``portfolio tune`` and
``portfolio.tune`` both call.

Ctrl-C (or a kill) keeps every finished evaluation (``results.jsonl``) and every decided trial
(``trials.jsonl``); the same command resumes where the tune stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..report.tune_score import PENALTY
from .driver import OptunaDriver, load_optuna
from .evaluate import Evaluator
from .loop import Progress, Tuner
from .race import race_rule, require_scipy, trial_name
from .result import side, validation_summary, write_config
from .settings import Resolved, TuneSettings, resolve
from .space import TuneError
from .storage import TuneFolder, new_session, settings_digest


@dataclass
class TuneOutcome:
    """What a tune session ended with: the folder, the config written (None when interrupted
    before the default was evaluated), the summary (default, tuned, validation)."""

    folder: Path
    config: Optional[Path]
    summary: Optional[dict]
    resumed: bool
    interrupted: bool = False


def summarize(tuner: Tuner) -> dict:
    """Default against tuned (the best complete trial under the final references)."""
    refs = tuner.references()
    tuned = tuner.incumbent()
    pairs = tuner.pairs
    states = [r["state"] for r in tuner.records]
    return {"default": side(trial_name(0), tuner.candidates[0], tuner.costs[0], pairs, refs),
            "tuned": side(trial_name(tuned), tuner.candidates[tuned], tuner.costs[tuned], pairs,
                          refs),
            "pairs": [p.label for p in pairs], "references": refs, "penalty": PENALTY,
            "trials": len(states), "complete": states.count("complete"),
            "pruned": states.count("pruned"), "evaluations": len(tuner.cache),
            "seconds": round(tuner.elapsed(), 1)}


def folder_of(resolved: Resolved) -> Path:
    s = resolved.settings
    name = s.name or f"tune-{settings_digest(resolved.identity)}"
    if "/" in name or name in ("", ".", ".."):
        raise TuneError(f"--name {name!r}: a plain folder name")
    return Path(s.runs_dir) / name


def run_tune(settings: TuneSettings, progress: Optional[Any] = None,
             on_open: Optional[Any] = None) -> TuneOutcome:
    """Check the settings, open (or resume) the run folder and tune; see the module.
    ``progress``: a :class:`~portfolio.tuning.loop.Progress` (the live view) and a context
    manager; ``on_open(resolved, folder)`` is called once the folder is open."""
    resolved = resolve(settings)
    require_scipy()
    load_optuna()   # both before the folder is made: a missing extra is one line, nothing left
    folder = TuneFolder(folder_of(resolved), resolved.identity)
    session = new_session(settings.command, settings.jobs, settings.dask_scheduler,
                          resolved.trials, settings.hours)
    folder.open(session)
    driver = OptunaDriver(resolved.space, settings.seed, resolved.trials or 1000,
                          storage=folder.study_url, name=folder.folder.name)
    folder.meta["settings"] = {"files": list(settings.files), "backends": list(resolved.space.backends),
                               "validate": list(settings.validate), "space_file": settings.space,
                               "budget_seconds": resolved.budget}
    folder.meta["pairs"] = [p.label for p in resolved.pairs]
    folder.meta["race"] = race_rule()
    folder.save()
    t0 = time.monotonic()
    outcome = TuneOutcome(folder.folder, None, None, folder.resumed)
    status = "interrupted"
    tuner: Optional[Tuner] = None
    try:
        with Evaluator(settings.jobs, settings.dask_scheduler) as evaluator:
            tuner = Tuner(resolved, folder, evaluator, driver, progress)
            if on_open:
                on_open(resolved, tuner)
            tuner.baseline()
            tuner.search()
            tuned = tuner.incumbent()
            validation = tuner.validate(tuned)
        summary = summarize(tuner)
        summary["validation"] = validation_summary(
            validation, tuner.candidates[0], tuner.candidates[tuned], trial_name(tuned))
        folder.meta["summary"] = summary
        outcome.summary = summary
        outcome.config = write_config(folder.tuned, summary, folder.meta)
        status = "complete"
    except KeyboardInterrupt:
        outcome.interrupted = True
        if tuner is not None and 0 in tuner.costs:
            outcome.summary = folder.meta["summary"] = summarize(tuner)
    except BaseException:
        status = "failed"
        raise
    finally:
        session.update(status=status, seconds=round(time.monotonic() - t0, 1),
                       finished=time.strftime("%Y-%m-%dT%H:%M:%S"))
        folder.meta["status"] = status
        folder.save()
    return outcome
