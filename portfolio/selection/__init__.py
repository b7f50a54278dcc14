"""Per-instance selection of a run's schedule, learned from bench runs (issue 50, item 2;
docs/selection.md).

``schedule`` (:class:`Schedule`: backends, options, CPU weights, a re-solve's cold part; the
file's errors, :class:`SelectorError`), ``trees`` (a regression forest as arrays, evaluated in
numpy), ``selector`` (the selector file: loading, the guard against another installation, the
choice; the shipped selector and the switch that turns it on by default), ``dataset`` (bench runs
read into cells and candidates), ``fit`` (scikit-learn's forests fitted and exported; only
``portfolio learn`` imports it), ``crossval`` (leave-one-instance-out cross-validation).

Floor 6: it reads ``features`` (4), ``bench`` (5: the checkout's revision), ``report`` (2: rows
and scores) and ``results``; ``api`` (7) applies a selector to a run, ``cli`` (8) has ``learn``.
"""

from .schedule import Schedule, SelectorError
from .selector import (
    DEFAULT_SELECTOR_ON,
    Choice,
    Selector,
    default_selector,
    load_selector,
    shipped_selector_path,
)

__all__ = ["DEFAULT_SELECTOR_ON", "Choice", "Schedule", "Selector", "SelectorError",
           "default_selector", "load_selector", "shipped_selector_path"]
