"""Memory budgets a user can reason about (docs/budgets.md).

``peak`` (the peak of one plan, where, and who makes it), ``domains`` (the strategies a plan without
forbidden choices can use: arc consistency), ``pairs`` and ``pointexact`` (refinements), ``bound``
(the certified lower bound on the least peak of any plan), ``explain`` (why no plan fits),
``objective`` (the plan with the least peak: ``--objective peak``), ``budgets`` (a problem at
another budget, ``--budgets`` values, the default budgets around the file's limit), ``tradeoff``
(the cost at a range of budgets) and ``storage`` (a tradeoff saved under ``runs/``).
"""

from .bound import PeakBound, least_peak_bound
from .peak import PeakReport, peak_report

__all__ = ["PeakBound", "PeakReport", "least_peak_bound", "peak_report"]
