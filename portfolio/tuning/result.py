"""The result of a tune: its summary (default against tuned, per instance, with the validation)
and the TOML config that ``solve --config``, ``bench --config`` and
``portfolio.solve(config=...)`` read, the figures behind it in its comments.

The config names the backend set (``[portfolio] backends``) and only the options whose tuned
value differs from the default at the tune's budget: an option not written keeps its default,
budget-aware ones included, exactly as during the tune.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional, Sequence

from ..report.tune_score import Pair, mean_score, references
from .race import LEVEL
from .space import Candidate

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def per_instance(costs: Sequence[Optional[int]], pairs: Sequence[Pair]) -> dict[str, Any]:
    """Each instance's mean cost over its seeds (None when a seed had no usable plan)."""
    out: dict[str, list] = {}
    for cost, pair in zip(costs, pairs):
        out.setdefault(pair.instance, []).append(cost)
    return {k: (None if any(c is None for c in v) else round(sum(v) / len(v), 1))
            for k, v in out.items()}


def side(name: str, candidate: Candidate, costs: Sequence[Optional[int]], pairs: Sequence[Pair],
         refs: dict) -> dict:
    return {"trial": name, "score": mean_score(list(costs), pairs, refs),
            "backends": list(candidate.backends), "options": candidate.option_dict(),
            "costs": list(costs), "instances": per_instance(costs, pairs)}


def validation_summary(validation: Any, default: Candidate, tuned: Candidate,
                       tuned_name: str) -> Optional[dict]:
    if validation is None:
        return None
    pairs = validation.pairs
    refs = references([(p.instance, c) for p, c in zip(pairs, validation.default)]
                      + [(p.instance, c) for p, c in zip(pairs, validation.tuned)])
    return {"pairs": [p.label for p in pairs],
            "default": side("t0000", default, validation.default, pairs, refs),
            "tuned": side(tuned_name, tuned, validation.tuned, pairs, refs)}


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _table(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name)


def _fmt(score: Optional[float]) -> str:
    return "-" if score is None else f"{score:.4f}"


def config_text(summary: dict, meta: dict) -> str:
    """The TOML config of the tuned configuration, its figures in comments."""
    d, t = summary["default"], summary["tuned"]
    ident = meta.get("identity", {})
    mode = (f"deterministic, {ident.get('work') or 'default'} work units"
            if ident.get("deterministic") else f"{ident.get('time_limit'):g} s per run")
    lines = [f"# portfolio tune {meta.get('name')}: {mode}, "
             f"{len(ident.get('instances', []))} instance(s) x seeds {ident.get('seeds')}",
             f"# {summary['trials']} trials ({summary['pruned']} dropped early by racing), "
             f"{summary['evaluations']} evaluations, {summary['seconds'] / 60:.1f} min",
             f"# score: mean over (instance, seed) of cost / reference (best known or best seen;"
             f" no plan = {summary['penalty']:g})",
             f"# adopted only when better by a paired test (Wilcoxon signed-rank, one-sided, "
             f"level {LEVEL:g}); a tie of costs broken by the anytime score",
             f"# default {d['trial']}: {_fmt(d['score'])}; tuned {t['trial']}: {_fmt(t['score'])}"]
    for inst, cost in d["instances"].items():
        tuned = t["instances"].get(inst)
        lines.append(f"#   {inst}: mean cost default {_cost(cost)}, tuned {_cost(tuned)}")
    val = summary.get("validation")
    if val:
        lines.append(f"# validation ({len(val['pairs'])} runs on other instances): default "
                     f"{_fmt(val['default']['score'])}, tuned {_fmt(val['tuned']['score'])}")
        for inst, cost in val["default"]["instances"].items():
            lines.append(f"#   {inst}: mean cost default {_cost(cost)}, "
                         f"tuned {_cost(val['tuned']['instances'].get(inst))}")
    else:
        lines.append("# not validated on other instances (--validate FILES)")
    lines.append("# options not written keep their defaults (budget-aware ones included)")
    lines += ["", "[portfolio]", f"backends = {_value(t['backends'])}"]
    for backend, options in sorted(t["options"].items()):
        if options:
            lines += ["", f"[{_table(backend)}]"]
            lines += [f"{k} = {_value(v)}" for k, v in sorted(options.items())]
    return "\n".join(lines) + "\n"


def _cost(value: Optional[float]) -> str:
    return "no plan" if value is None else f"{value:,.1f}".rstrip("0").rstrip(".")


def write_config(path: Path, summary: dict, meta: dict) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(config_text(summary, meta), encoding="utf-8")
    tmp.replace(path)
    return path
