"""A selector applied to one run (docs/selection.md): cheap features, the schedule predicted best,
and the run's backends, options and CPU weights from it; what ``portfolio solve --selector`` and
``portfolio.solve(selector=...)`` share.

The rule for explicit choices: the selector chooses only what the user left open.

* A backend set named by the user (``--backends``/``backends=``, or a config file's
  ``[portfolio] backends``) wins whole: the selector's schedule is not applied (not its set,
  options, weights or cold part); its choice is still computed and recorded, ``applied: false``.
* Otherwise the schedule's backend set, CPU weights and cold part are the run's, and its options
  lie under the user's: a config file's, ``backend_options=`` and ``--option`` values win, option
  by option, as they win over the defaults; a ``cold=`` given to ``portfolio.solve`` wins over
  the schedule's.
* Not applied either (recorded with why): deterministic mode (the models were learned from timed
  runs), ``objective="peak"``, a cluster solve (its shards are chosen before the problem loads).

Whatever happens, the result's ``selection`` says it: the selector's file and hash, the chosen
schedule, every candidate's predicted score, the seconds the features and the model took, and
``applied`` (with ``why`` when not). A selector that does not fit this installation (features of
another version, a backend not installed, an option a backend no longer declares) is one warning
line and the run's own choice.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

from ..options import RunOptions
from ..problem import Problem

if TYPE_CHECKING:
    from ..selection import Selector

SelectorLike = Union[str, os.PathLike, "Selector", None]
"""``"default"``: the shipped selector when the default uses it (see
:data:`portfolio.selection.selector.DEFAULT_SELECTOR_ON`); None or ``"none"``: no selector; a
path: that file; a :class:`~portfolio.selection.Selector`: itself."""

DEFAULT = "default"
OFF = "none"


def open_selector(spec: SelectorLike) -> Optional[Selector]:
    """The selector ``spec`` names, loaded (a bad file: one
    :class:`~portfolio.selection.SelectorError` line), or None for none."""
    from ..selection import Selector, default_selector, load_selector

    if spec is None or (isinstance(spec, str) and spec == OFF):
        return None
    if isinstance(spec, Selector):
        return spec
    if isinstance(spec, str) and spec == DEFAULT:
        path = default_selector()
        return None if path is None else load_selector(path)
    return load_selector(Path(spec))


@dataclass(frozen=True)
class UserChoice:
    """What the caller chose for the run, which the selector must not override."""

    backends: bool = False
    """A backend set was named (``--backends``, ``backends=``, a config's ``[portfolio] backends``)."""
    cold: bool = False
    """A re-solve's cold part was given (``cold=``)."""


def _why_not(options: RunOptions, user: UserChoice) -> Optional[str]:
    if user.backends:
        return "the backends were named by the user"
    if options.deterministic:
        return "deterministic mode (the selector learned from timed runs)"
    if options.objective != "cost":
        return f"objective {options.objective!r} (the selector learned the cost's)"
    if options.cluster is not None:
        return "a cluster solve (its shards are chosen before the problem loads)"
    return None


def _checked_options(schedule: Any, registry: Any) -> Mapping:
    """The schedule's options typed and checked against the backends' declarations (an
    :class:`~portfolio.backend_options.OptionError` when one is no longer declared)."""
    from ..configure import gather, lookup_in

    return gather(lookup_in(registry), ", ".join(registry.names()), given=schedule.options)


def select_run(selector: Selector, problem: Problem, picked: Any, options: RunOptions, *,
               user: UserChoice, config: Union[str, os.PathLike, None] = None,
               backend_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
               assignments: Sequence[str] = (), warn: Callable[[str], None],
               choose: Callable[..., Any]) -> tuple[Any, RunOptions, dict]:
    """The run's backends and options with ``selector`` applied (``picked``, a
    :class:`portfolio.api.solving.Chosen`, and ``options`` as they stand without it), and the
    record for the result's ``selection`` (see the module).
    ``choose``: :func:`portfolio.api.solving.choose` (handed in: ``solving`` imports this
    module), which checks the schedule's backends and the user's options as for any run."""
    from ..errors import ProblemError
    from ..features import cheap_features

    t0 = time.perf_counter()
    record: dict = {"selector": selector.path, "sha256": selector.sha256, "applied": False}
    registry = picked.registry
    if registry is None:   # a Chosen made without one
        from ..registry import Registry

        registry = Registry()
    unusable = selector.unusable_here(registry.names())
    if unusable is not None:
        warn(f"selector {selector.path or '(given)'} not used: {unusable}; the default runs")
        return picked, options, {**record, "why": unusable}
    values = cheap_features(problem)
    t1 = time.perf_counter()
    choice = selector.choose(values, options.budget_seconds)
    t2 = time.perf_counter()
    schedule = choice.schedule
    record.update(schedule=schedule.to_json(),
                  predicted={k: round(v, 6) for k, v in choice.predicted.items()},
                  features_seconds=round(t1 - t0, 4), model_seconds=round(t2 - t1, 5))
    why = _why_not(options, user) or selector.outside_domain(values, options.budget_seconds)
    if why is not None:
        return picked, options, {**record, "why": why,
                                 "seconds": round(time.perf_counter() - t0, 4)}
    try:   # an option error is a ProblemError too
        ours = _checked_options(schedule, registry)
        chosen = choose(list(schedule.backends), options.time_limit, warn=warn,
                        config=config, backend_options=backend_options,
                        assignments=assignments, registry=registry)
    except ProblemError as exc:
        warn(f"selector {selector.path or '(given)'}: schedule {schedule.name} not used: {exc}; "
             f"the default runs")
        return picked, options, {**record, "why": str(exc)}
    merged = {b: {**ours.get(b, {}), **chosen.options.get(b, {})}
              for b in dict.fromkeys([*ours, *chosen.options])}
    options = replace(options, backend_options=merged, cpu_weights=dict(schedule.weights or {}),
                      cold=options.cold if user.cold or schedule.cold is None else schedule.cold)
    record.update(applied=True, seconds=round(time.perf_counter() - t0, 4),
                  weights_applied=True)   # RunOptions.cpu_weights: the runner's (.focus)
    return replace(chosen, options=merged), options, record


def config_names_backends(config: Any) -> bool:
    """Whether a config file names the run's backends (``[portfolio] backends``)."""
    from ..configure import config_from

    settings = config_from(config)
    return settings is not None and settings.backends is not None

