"""The picture of a tradeoff: cost against memory budget, drawn as what is known.

A plan that fits a budget fits every larger one, so the cost known at budget ``b_i`` holds until the
next budget: the cost is drawn as steps that start at each budget (``post``). A lower bound at a
budget holds for every smaller one, so the bound is drawn as steps that end at each budget
(``pre``), from the certified least peak on. Budgets proven optimal are filled, the others hollow;
below the certified least peak a shaded band (no plan fits there); the file's limit is a dotted
line, and a second axis on top reads the budget as a multiple of it. Memory is in GiB (MiB, KiB for
smaller problems), on a log axis when the budgets span a decade or more; the budgets near the
file's limit, where a user decides, then get a panel of their own on a linear axis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .plots import _pyplot, _safe, _save
from .tradeoff import memory_unit, taken_over

DECADE = 10.0
"""Budgets spanning at least this ratio get a log axis (K's span 14x: the budgets near the limit
would be a smudge on a linear one) and a second, linear panel near the limit."""

NEAR = (0.85, 1.6)
"""The second panel's range, as multiples of the file's limit (the default budgets' window and a
margin)."""


def _plural(unit: str) -> str:
    return unit + ("s" if unit == "byte" else "")


def _x_axis(ax, lo: float, hi: float, log: bool, unit: str, limit: Optional[float]) -> None:
    """Limits, scale and tick labels of a memory axis, and the multiples of the limit on top."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    label = FuncFormatter(lambda v, _: f"{v:g}")
    if log:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.15, hi * 1.15)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        pad = (hi - lo) * 0.05 or max(abs(hi) * 0.05, 1.0)
        ax.set_xlim(lo - pad, hi + pad)
    ax.xaxis.set_major_formatter(label)
    ax.set_xlabel(f"memory budget, {_plural(unit)}")
    if limit:
        top = ax.secondary_xaxis("top", functions=(lambda v: v / limit, lambda m: m * limit))
        top.set_xlabel("multiple of the file's limit", fontsize="small")
        if log:
            top.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            top.xaxis.set_minor_formatter(NullFormatter())
        top.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))


def _draw(ax, rows: list[dict], bound: Optional[float], limit: Optional[float], unit: str,
          annotate: bool) -> None:
    """Everything on one panel, in the panel's memory unit (the x limits are already set)."""
    left, right = ax.get_xlim()
    known = [r for r in rows if r.get("cost") is not None]
    if known:
        ax.step([r["x"] for r in known] + [right], [r["cost"] for r in known] + [known[-1]["cost"]],
                where="post", color="C0", lw=1.6, label="cost of the cheapest plan found that fits")
        best = [r for r in known if r["status"] == "optimal"]
        rest = [r for r in known if r["status"] != "optimal"]
        if best:
            ax.plot([r["x"] for r in best], [r["cost"] for r in best], ls="none", marker="D",
                    ms=6, color="C2", label="optimal (cost meets its bound)")
        if rest:
            ax.plot([r["x"] for r in rest], [r["cost"] for r in rest], ls="none", marker="o",
                    ms=6, mfc="white", mec="C0", mew=1.4, label="feasible (not proven optimal)")
        shown = None
        for r in known:   # each new cost against the limit's, once per plateau
            if r["cost"] == shown or not left <= r["x"] <= right:
                continue
            shown = r["cost"]
            if annotate and r.get("cost_vs_limit_percent") is not None and not r.get("own_limit"):
                ax.annotate(f"{r['cost_vs_limit_percent']:+.1f} %" + (" †" if taken_over(r) else ""),
                            (r["x"], r["cost"]), textcoords="offset points", xytext=(4, 5),
                            fontsize="x-small", color="0.3")
    bounded = [r for r in rows if r.get("bound") is not None]
    if bounded:   # from the certified least peak: below it there is no cost to bound
        start = max(left, bound) if bound is not None else left
        ax.step([start] + [r["x"] for r in bounded], [bounded[0]["bound"]] +
                [r["bound"] for r in bounded], where="pre", color="C1", ls="--", lw=1.1,
                label="lower bound (holds for every smaller budget)")
        ax.plot([r["x"] for r in bounded], [r["bound"] for r in bounded], ls="none", marker="_",
                ms=9, mew=1.6, color="C1")
    for status, marker, colour, text in (("infeasible", "x", "tab:red", "infeasible"),
                                         ("none", "^", "goldenrod", "no plan found in time")):
        hit = [r["x"] for r in rows if r.get("status") == status and left <= r["x"] <= right]
        if hit:
            ax.plot(hit, [0.03] * len(hit), ls="none", marker=marker, color=colour, ms=7,
                    transform=ax.get_xaxis_transform(), label=text, clip_on=False)
    if bound is not None and bound > left:
        ax.axvspan(left, bound, color="0.5", alpha=0.18, hatch="//", lw=0,
                   label=f"below the certified least peak ({bound:.4g} {_plural(unit)}): "
                         "no plan fits")
    if limit is not None:
        ax.axvline(limit, color="black", lw=1.0, ls=":",
                   label=f"the file's limit ({limit:.4g} {_plural(unit)})")
    ax.set_xlim(left, right)
    ax.grid(alpha=0.3, which="major")


def _near(rows: list[dict], limit: Optional[float]) -> Optional[tuple[float, float]]:
    """The second panel's x range, when the budgets span a decade and at least three of them lie
    near the limit (in the panel's unit)."""
    xs = [r["x"] for r in rows]
    if not limit or not xs or min(xs) <= 0 or max(xs) / min(xs) < DECADE:
        return None
    near = [x for x in xs if NEAR[0] * limit <= x <= NEAR[1] * limit]
    if len(near) < 3:
        return None
    return min(near + [limit]), max(near + [limit])


def _zoom_y(ax, rows: list[dict]) -> None:
    """The y range of the panel near the limit: the costs and bounds that hold inside it."""
    left, right = ax.get_xlim()
    inside = [r for r in rows if left <= r["x"] <= right]
    after = [r for r in rows if r["x"] > right and r.get("bound") is not None][:1]
    before = [r for r in rows if r["x"] < left and r.get("cost") is not None][-1:]
    ys = [r["cost"] for r in inside + before if r.get("cost") is not None]
    ys += [r["bound"] for r in inside + after if r.get("bound") is not None]
    if ys:
        pad = (max(ys) - min(ys)) * 0.08 or abs(max(ys)) * 0.05 or 1.0
        ax.set_ylim(min(ys) - pad, max(ys) + pad)


def write_tradeoff_plot(doc: dict, out_dir: str | Path) -> list[Path]:
    """The curve of a tradeoff document (``portfolio tradeoff --json``'s, or a saved run's through
    :func:`.tradeoff.document_of_run`) as ``tradeoff-PROBLEM.png`` and ``.svg`` in ``out_dir``."""
    plt = _pyplot()   # first: one line without matplotlib, before any of its modules
    from matplotlib.ticker import EngFormatter

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    limit = doc.get("limit")
    certified = (doc.get("least_peak_bound") or {}).get("value")
    unit, size = memory_unit([r["budget"] for r in doc["rows"]] + [limit, certified])
    rows = [dict(r, x=r["budget"] / size) for r in sorted(doc["rows"], key=lambda r: r["budget"])]
    x_limit = None if not limit else limit / size
    x_bound = None if certified is None else certified / size
    near = _near(rows, x_limit)
    if near:
        fig, (ax, zoom) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1, 1.1]})
    else:
        fig, ax = plt.subplots(figsize=(8, 5))
    spots = [r["x"] for r in rows] + [v for v in (x_limit, x_bound) if v is not None] or [0.0, 1.0]
    lo, hi = min(spots), max(spots)
    _x_axis(ax, lo, hi, lo > 0 and hi / lo >= DECADE, unit, x_limit)
    _draw(ax, rows, x_bound, x_limit, unit, annotate=near is None)
    costs = [r["cost"] for r in rows if r.get("cost") is not None]
    if costs and min(costs) > 0 and max(costs) / min(costs) > 20:
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(EngFormatter(sep=" "))
    ax.set_ylabel("cost")
    ax.legend(fontsize="x-small", loc="best", framealpha=0.9)
    if near:
        ax.set_title("every budget", fontsize="small")
        _x_axis(zoom, near[0], near[1], False, unit, x_limit)
        _draw(zoom, rows, x_bound, x_limit, unit, annotate=True)
        _zoom_y(zoom, rows)
        zoom.yaxis.set_major_formatter(EngFormatter(sep=" "))
        zoom.set_title("near the file's limit (% : cost against the cost at the limit)",
                       fontsize="small")
    fig.suptitle(f"{doc['problem']}: cost against memory budget", fontsize="medium")
    if any(taken_over(r) for r in rows):
        fig.text(0.01, 0.005, "†: a plan found by a larger budget's run (it fits, and is cheaper "
                 "than this budget's own run's)", fontsize="x-small", color="0.35")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return _save(plt, fig, out / f"tradeoff-{_safe(doc['problem'])}")
