"""``portfolio report --aslib DIR``: the runs as an ASlib scenario, with the features of
instances whose rows carry none (runs made before rows had them) computed from the instance
files where their paths still resolve."""

from __future__ import annotations

from pathlib import Path

from ..report import Leaderboard
from .app import UserError
from .common import console


def write_aslib(board: Leaderboard, folder: str) -> None:
    """Write the scenario (one line on stderr says what was written, and which instances'
    features came from their files or are missing); a bad folder or input is one line, exit 2."""
    from ..bench.features import features_record
    from ..report import ReportError
    from ..report.aslib import instances_without_features, write_aslib as write

    out = Path(folder)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):   # before any work
        raise UserError(f"{folder}: exists and is not an empty folder; give a new one")
    computed, absent = {}, []
    for name, path in sorted(instances_without_features(board).items()):
        if path and Path(path).is_file():
            computed[name] = features_record(path)
        else:
            absent.append(name)
    try:
        written = write(board, folder, computed)
    except ReportError as exc:
        raise UserError(str(exc)) from None
    said = [f"ASlib scenario: {len(written)} files in {folder}"]
    if computed:
        said.append(f"features computed from the instance files for {', '.join(computed)}")
    if absent:
        said.append(f"no features for {', '.join(absent)} (no row carries them and the file "
                    f"is not found)")
    console.print("; ".join(said), highlight=False)
