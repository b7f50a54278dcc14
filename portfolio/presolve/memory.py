"""Memory and time analysis: which intervals, time segments and strategies can matter for memory.

* constant intervals (same usage for every remaining strategy) move into the capacity profile;
* only maximal-clique time segments whose worst case can exceed the capacity are kept, intervals
  touching none of them are dropped, and reduced time ``t`` is the ``t``-th kept segment;
* a strategy is removed when, at some kept time, its usage above its interval's least usage exceeds
  the slack left with every live interval at its least usage (no feasible plan can use it);
* memory alone can prove the instance infeasible (the least usages already exceed the capacity).
"""

from __future__ import annotations

import numpy as np

from ..evaluate import range_sum
from ..problem import INT64_MAX
from .state import Infeasible, State, segment_fill_index


def intervals(st: State) -> bool:
    """Drop empty intervals, move constant ones into the capacity profile (memory_free), keep only
    intervals that touch a kept time segment. Returns whether anything changed."""
    changed = False
    empty = st.iv_end <= st.iv_start
    if empty.any():
        st.count("empty_intervals", int(empty.sum()))
        st.drop_intervals(empty)
    umin, umax = st.usage_range()
    if st.sw["memory_free"] and len(umin):
        const = umin == umax
        if const.any():
            st.fixed_usage(st.iv_start[const], st.iv_end[const], umin[const])
            st.count("constant_intervals", int(const.sum()))
            st.drop_intervals(const)
            umin, umax = umin[~const], umax[~const]
            changed = True
    info = time_analysis(st, umin, umax)
    while not info["relevant"].all():  # fewer intervals can merge segments: repeat until stable
        irrelevant = ~info["relevant"]
        st.count("irrelevant_intervals", int(irrelevant.sum()))
        st.drop_intervals(irrelevant)
        umin, umax = umin[~irrelevant], umax[~irrelevant]
        changed = True
        info = time_analysis(st, umin, umax)
    st.time_info = info
    return changed


def time_analysis(st: State, umin: np.ndarray, umax: np.ndarray) -> dict:
    cap = st.P.capacity
    fs = np.concatenate(st.fx_start) if st.fx_start else np.zeros(0, dtype=np.int64)
    fe = np.concatenate(st.fx_end) if st.fx_end else np.zeros(0, dtype=np.int64)
    fu = np.concatenate(st.fx_use) if st.fx_use else np.zeros(0, dtype=np.int64)
    s, e = st.iv_start, st.iv_end
    # Segments [pts[k], pts[k+1]) cover every time from t0 on: the last point gets a segment too
    # (a capacity breakpoint after every interval has ended is still checked by the judge).
    t0 = [] if st.t0 is None else [st.t0]
    pts = np.unique(np.concatenate([s, e, fs, fe, cap.times, np.array(t0, dtype=np.int64)]))
    if len(pts):
        pts = np.append(pts, pts[-1] + 1)
    nseg = max(len(pts) - 1, 0)
    lo = np.searchsorted(pts, s)
    hi = np.searchsorted(pts, e)
    if nseg == 0:
        return {"pts": pts, "kept": np.zeros(0, bool), "R": np.zeros(0, np.int64), "lo": lo, "hi": hi,
                "relevant": np.zeros(len(s), bool)}
    capv, limited = cap.at(pts[:-1])
    limited = limited & (pts[:-1] >= st.t0) if st.t0 is not None else np.zeros(nseg, bool)
    flo, fhi = np.searchsorted(pts, fs), np.searchsorted(pts, fe)
    W = range_sum(lo, hi, umax, nseg)
    Wmin = range_sum(lo, hi, umin, nseg)
    Fx = range_sum(flo, fhi, fu, nseg)
    if W.dtype == object or Fx.dtype == object or Wmin.dtype == object or (len(fu) and fu.min() < 0):
        R = capv.astype(object) - Fx.astype(object)
    else:
        R = capv - Fx  # capacity <= INT64_MAX and Fx >= 0: cannot wrap
    over = limited & np.asarray(Wmin > R, dtype=bool)
    if over.any():
        k = int(np.flatnonzero(over)[0])
        raise Infeasible(
            f"memory: at time {int(pts[k])} even the least usage of every live interval "
            f"({int(Wmin[k]) + int(Fx[k])}) exceeds the capacity ({int(capv[k])})")
    nonneg = (len(umin) == 0 or umin.min() >= 0)
    if st.sw["time_points"]:
        relevant_seg = limited & np.asarray(W > R, dtype=bool)
        kept = relevant_seg
        if nonneg and nseg > 1:
            ns = np.bincount(lo, minlength=nseg + 1)
            ne = np.bincount(hi, minlength=nseg + 1)
            k = np.arange(nseg - 1)
            Rk, Rk1 = R[k], R[k + 1]
            dom = np.zeros(nseg, dtype=bool)
            # segment k inside segment k+1 (nothing ends between them), no more capacity there
            dom[k] |= limited[k + 1] & (ne[k + 1] == 0) & np.asarray(Rk >= Rk1, dtype=bool)
            # segment k+1 inside segment k (nothing starts between them), no more capacity there;
            # equal live sets and capacities keep the later one (dropped above as k)
            dom[k + 1] |= limited[k] & (ns[k + 1] == 0) & np.asarray(Rk1 >= Rk, dtype=bool) & (
                (ne[k + 1] > 0) | np.asarray(Rk1 > Rk, dtype=bool))
            kept = relevant_seg & ~dom
    else:
        live = range_sum(lo, hi, np.ones(len(lo), dtype=np.int64), nseg) > 0
        kept = limited & live
    ps = np.zeros(nseg + 1, dtype=np.int64)
    np.cumsum(kept, out=ps[1:])
    relevant = (ps[hi] - ps[lo]) > 0
    return {"pts": pts, "kept": kept, "R": R, "Wmin": Wmin, "lo": lo, "hi": hi, "relevant": relevant,
            "ps": ps}


def memory_bounds(st: State) -> bool:
    """Remove strategies that overflow memory even with every other live interval at its least
    usage. Uses the analysis of the last :meth:`intervals` call (same domains)."""
    info = st.time_info
    if info is None or "ps" not in info or len(st.iv_owner) == 0:
        return False
    kept, R, Wmin = info["kept"], info["R"], info["Wmin"]
    if R.dtype == object or Wmin.dtype == object or not kept.any() or st.iv_use.min() < 0:
        return False  # exact int64 slack needs non-negative usages (as in every contest file)
    nseg = len(kept)
    slack = np.where(kept, R - Wmin, INT64_MAX)  # kept: Wmin <= R, so no wrap
    # sparse table of range minima over segments
    levels = [slack]
    while (1 << len(levels)) <= nseg:
        prev, half = levels[-1], 1 << (len(levels) - 1)
        levels.append(np.minimum(prev[:-half], prev[half:]))
    lo, hi = info["lo"], info["hi"]
    length = hi - lo
    ok = length > 0
    level = np.zeros(len(lo), dtype=np.int64)
    level[ok] = np.floor(np.log2(length[ok])).astype(np.int64)
    tight = np.full(len(lo), INT64_MAX, dtype=np.int64)
    for lv in np.unique(level[ok]).tolist():
        sel = ok & (level == lv)
        table = levels[lv]
        tight[sel] = np.minimum(table[lo[sel]], table[hi[sel] - (1 << lv)])
    umin, _ = st.usage_range()
    counts = np.diff(st.iv_uoff)
    rows, within = segment_fill_index(st.iv_uoff, counts)
    slot = st.SO[st.iv_owner[rows]] + within
    extra = st.iv_use - umin[rows]  # >= 0 on alive slots
    bad = st.alive[slot] & (tight[rows] < INT64_MAX) & (extra > tight[rows])
    if not bad.any():
        return False
    dead = np.unique(slot[bad])
    st.alive[dead] = False
    st.count("memory_bound_strategies", len(dead))
    empty = np.flatnonzero(st.active & (st.alive_counts() == 0))
    if len(empty):
        raise Infeasible(f"memory: every strategy of node {int(empty[0])} overflows the capacity "
                          f"at some time even with every other interval at its least usage")
    return True

