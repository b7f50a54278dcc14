"""The configurator library: Optuna's TPE sampler proposes configurations; the racing, the
evaluations and the record are this package's (docs/benchmarks/tune.md says why Optuna and not
SMAC3).

The study is kept in the run folder in Optuna's own storage (``study.db``, SQLite through
Optuna's RDB storage), so ``optuna-dashboard sqlite:///runs/RUN/study.db`` and
``optuna.load_study(study_name=None, storage=...)`` open it: every trial with its parameters, its
score (a dropped one as pruned, its score on the pairs it ran as the intermediate value at that
number of pairs) and, as user attributes, its name (``t0007``), backends and options.

Determinism: ``trials.jsonl`` stays the tune's record; the study is rebuilt from it at every start
(:meth:`OptunaDriver.replay`, after the stored study of the same name is deleted, so a trial a
kill left running is not kept), and each trial is asked with a sampler seeded by the tune's seed
and the trial's number. So a proposal is a function of the seed and the trials told before it,
in their order: the same in an uninterrupted tune and in one resumed after a kill, and
independent of which evaluation finished first.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

from .race import trial_name
from .space import Candidate, Param, Space, TuneError

MISSING = ("portfolio tune needs Optuna, the configurator it drives: "
           "pip install 'iopddl-portfolio[tune]'")

STARTUP_MAX = 10
"""Trials sampled at random before TPE models the results (fewer in a short tune: a third)."""


def load_optuna() -> Any:
    """The ``optuna`` module, or :class:`TuneError` naming the pip command."""
    try:
        import optuna
    except ImportError:
        raise TuneError(MISSING) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


def trial_seed(seed: int, number: int) -> int:
    return (int(seed) * 1_000_003 + int(number) * 7_919 + 17) % (2 ** 32)


class OptunaDriver:
    """Asks Optuna for configurations of ``space`` and tells it their scores."""

    def __init__(self, space: Space, seed: int, trials: int, storage: Optional[str] = None,
                 name: Optional[str] = None) -> None:
        """``storage``: an Optuna storage URL (``sqlite:///.../study.db``), where the study named
        ``name`` is made anew (None: in memory)."""
        self.optuna = load_optuna()
        self.space, self.seed = space, seed
        self.startup = max(2, min(STARTUP_MAX, trials // 3))
        if storage is not None:
            storage = self.optuna.storages.RDBStorage(storage)
            if name in self.optuna.get_all_study_names(storage):
                self.optuna.delete_study(study_name=name, storage=storage)
        self.study = self.optuna.create_study(direction="minimize", storage=storage,
                                              study_name=name, sampler=self._sampler(0))
        self.pending: dict[int, Any] = {}

    def _sampler(self, number: int) -> Any:
        return self.optuna.samplers.TPESampler(seed=trial_seed(self.seed, number),
                                               n_startup_trials=self.startup,
                                               multivariate=True, group=True, constant_liar=True)

    def distribution(self, param: Param) -> Any:
        d = self.optuna.distributions
        if param.kind in ("bool", "choice"):
            return d.CategoricalDistribution(list(param.choices))
        if param.kind == "int":
            return d.IntDistribution(int(param.low), int(param.high), log=param.log)
        return d.FloatDistribution(float(param.low), float(param.high), log=param.log)

    def _params(self) -> dict[str, Param]:
        return {p.key: p for p in [*self.space.switch_params(), *self.space.params]}

    def replay(self, records: Sequence[dict]) -> None:
        """Tell the study every recorded trial, in the record's order (a trial's number is its
        position)."""
        params = self._params()
        state = self.optuna.trial.TrialState
        for record in records:
            raw = {k: v for k, v in (record.get("params") or {}).items() if k in params}
            dists = {k: self.distribution(params[k]) for k in raw}
            fitting = {k: v for k, v in raw.items() if _fits(params[k], v)}
            value = record.get("value")
            pruned = record.get("state") == "pruned"
            trial = self.optuna.trial.create_trial(
                state=state.PRUNED if pruned else state.COMPLETE,
                value=None if pruned else value, params=fitting,
                distributions={k: dists[k] for k in fitting},
                intermediate_values={int(record.get("pairs", 1)): value} if value is not None
                else None,
                user_attrs=_attributes(len(self.study.trials), record.get("backends") or [],
                                       record.get("options") or {}))
            self.study.add_trial(trial)

    def ask(self) -> tuple[int, Candidate, dict]:
        """The next trial's number, configuration and raw parameter values."""
        number = len(self.study.trials)
        self.study.sampler = self._sampler(number)
        trial = self.study.ask()
        params = self._params()

        def suggest(param: Param) -> Any:
            p = params[param.key]
            if p.kind in ("bool", "choice"):
                return trial.suggest_categorical(p.key, list(p.choices))
            if p.kind == "int":
                return trial.suggest_int(p.key, int(p.low), int(p.high), log=p.log)
            return trial.suggest_float(p.key, float(p.low), float(p.high), log=p.log)

        candidate, raw = self.space.sample(suggest)
        for key, value in _attributes(number, candidate.backends, candidate.option_dict()).items():
            trial.set_user_attr(key, value)
        self.pending[number] = trial
        return number, candidate, raw

    def tell(self, number: int, value: float, pairs: int, pruned: bool) -> None:
        trial = self.pending.pop(number)
        if pruned:
            trial.report(value, pairs)
            self.study.tell(trial, state=self.optuna.trial.TrialState.PRUNED)
        else:
            self.study.tell(trial, value)


def _attributes(number: int, backends: Sequence[str], options: dict) -> dict[str, Any]:
    """A trial's user attributes in the study: its name in the rows, its backends and options."""
    return {"name": trial_name(number), "backends": list(backends),
            "options": {b: dict(v) for b, v in options.items()}}


def _fits(param: Param, value: Any) -> bool:
    """Whether a recorded value lies in the parameter's distribution (the baseline's default may
    lie outside a range the space file narrowed: then the sampler is not told that value)."""
    if param.kind in ("bool", "choice"):
        return any(c == value and type(c) is type(value) for c in param.choices)   # True is not 1
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if param.kind == "int" and not float(value).is_integer():
        return False
    return float(param.low) <= float(value) <= float(param.high)
