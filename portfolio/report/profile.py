"""Performance profiles (Dolan and Moré, 2002) over every instance of a report.

For configuration s and instance i, the ratio ``r(i, s) = cost(i, s) / min over s' of cost(i, s')``
(the best among the configurations compared; a failed answer is infinitely worse). The profile
``rho_s(tau)`` is the fraction of instances with ``r(i, s) <= tau``: its value at 1 is how often s
was the best, its height far right is how often it answered at all, and a curve above another is
better everywhere. One picture holds 7 or 25 instances, where convergence plots need one each.

With several seeds, a configuration's cost on an instance is the median over its seeds (a failed
seed counts as infinite), so one lucky seed does not move the profile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from .leaderboard import Entry, Leaderboard

TAUS = (1.0, 1.001, 1.01, 1.1, 2.0)
"""The factors the text table shows."""

MAX_TEAMS = 5
"""Contest teams join the profile only when at most this many are shown (see ``--top``)."""


@dataclass
class Profile:
    instances: list[str]
    ratios: dict[str, list[float]]   # label -> one ratio per instance (inf: no answer)

    def fraction(self, label: str, tau: float) -> float:
        values = self.ratios[label]
        return sum(r <= tau * (1 + 1e-12) for r in values) / len(values) if values else 0.0


def _median_cost(entry: Entry, instance: str) -> float:
    costs = sorted(math.inf if o.cost is None else float(o.cost)
                   for o in entry.outcomes.get(instance, []))
    if not costs:
        return math.inf
    return costs[(len(costs) - 1) // 2]   # the lower median: a cost that was reached


def profile_of(board: Leaderboard, labels: Optional[Sequence[str]] = None) -> Profile:
    """The profile of the board's run configurations (and its teams when few are shown)."""
    shown = {r.label for r in board.rows}
    teams = [e for e in board.entries if e.kind == "team" and e.label in shown]
    chosen = [e for e in board.entries if e.kind == "run" and e.label in shown]
    if len(teams) <= MAX_TEAMS:
        chosen += teams
    if labels is not None:
        chosen = [e for e in chosen if e.label in labels]
    names = [i.name for i in board.instances]
    costs = {e.label: [_median_cost(e, n) for n in names] for e in chosen}
    ratios: dict[str, list[float]] = {label: [] for label in costs}
    for k in range(len(names)):
        best = min((c[k] for c in costs.values()), default=math.inf)
        for label, c in costs.items():
            if math.isinf(c[k]):
                ratios[label].append(math.inf)
            elif best == 0:
                ratios[label].append(1.0 if c[k] == 0 else math.inf)
            else:
                ratios[label].append(c[k] / best)
    return Profile(names, ratios)


def profile_table(profile: Profile):
    """A rich table: per configuration, the fraction of instances within each factor of ``TAUS``."""
    from rich.table import Table

    table = Table(title=f"performance profile: fraction of the {len(profile.instances)} instances "
                        f"within a factor tau of the best configuration", title_justify="left")
    table.add_column("configuration", no_wrap=True)
    for tau in TAUS:
        table.add_column("best" if tau == 1 else f"<= {_tau_text(tau)}", justify="right")
    for label in sorted(profile.ratios, key=lambda l: [-profile.fraction(l, t) for t in TAUS]):
        table.add_row(label, *[f"{profile.fraction(label, t):.2f}" for t in TAUS])
    return table


def _tau_text(tau: float) -> str:
    return f"+{100 * (tau - 1):g} %" if tau < 2 else f"x{tau:g}"


def plot_profile(plt, profile: Profile, colours: dict[str, str], title: str, note: str = ""):
    """The profile as a figure: x is ``tau - 1`` on a log axis (configurations 0.1 % apart stay
    apart), the left edge is ``tau = 1``; y is the fraction of instances."""
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    finite = [r - 1 for rs in profile.ratios.values() for r in rs if math.isfinite(r) and r > 1]
    left = max(1e-7, min(finite, default=1e-3) / 3)
    right = max(finite, default=1e-2) * 3
    styles = ("-", "--", "-.", ":")
    for k, (label, ratios) in enumerate(sorted(profile.ratios.items())):
        xs = sorted(max(r - 1, left) for r in ratios if math.isfinite(r))
        n = len(ratios)
        steps_x = [left] + xs + [right]
        steps_y = [0.0] + [(j + 1) / n for j in range(len(xs))] + [len(xs) / n]
        grey = not colours.get(label, "").startswith("#")
        ax.step(steps_x, steps_y, where="post", lw=2.0 if not grey else 1.2,
                ls=styles[k % len(styles)] if grey else "-",
                color=colours.get(label, "0.5"), label=label, alpha=0.95)
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_ylim(-0.02, 1.04)
    ticks = [t for t in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100, 1e3) if left <= t <= right]
    ax.set_xticks(ticks, [_axis_text(t) for t in ticks])
    ax.set_xlabel("tau - 1: cost / best cost - 1 (log scale; left edge: the best, tau = 1)")
    ax.set_ylabel(f"fraction of the {len(profile.instances)} instances")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small", loc="lower right")
    if note:
        fig.text(0.01, 0.01, note, fontsize="x-small", color="0.35")
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    return fig


def _axis_text(x: float) -> str:
    return f"+{100 * x:g}%" if x < 1 else f"x{1 + x:g}"
