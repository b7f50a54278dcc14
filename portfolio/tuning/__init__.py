"""``portfolio tune``: algorithm configuration of the portfolio over the options its backends
declare and over which backends run, on the user's instances, seeds and budget (docs/tune.md).

Named ``tuning`` and not ``tune`` so that the package never shadows the function
``portfolio.tune`` (a submodule import binds its name on the parent package).

Layout: :mod:`.space` (the space from the declarations: options, ranges, the backend set),
:mod:`.spacefile` (``--space FILE.toml``: narrow or fix parts of it), :mod:`.settings` (the
settings checked and resolved before anything runs), :mod:`.driver` (Optuna's TPE sampler, asked
and told in a fixed order; its study kept in the run folder's ``study.db``), :mod:`.race` (the paired test that drops and adopts configurations),
:mod:`.evaluate` (bench tasks under joblib or Dask, with a cache), :mod:`.loop` (baseline,
batches, validation), :mod:`.storage` (the run folder, resume), :mod:`.result` (the summary and
the TOML config), :mod:`.progress` (the live view), :mod:`.run` (:func:`run_tune`). The score is
:mod:`portfolio.report.tune_score`'s, shared with ``portfolio report``.
"""

from .run import TuneOutcome, run_tune
from .settings import TuneSettings
from .space import TuneError

__all__ = ["TuneError", "TuneOutcome", "TuneSettings", "run_tune"]
