"""Reading a results file (JSON Lines): shared by `bench` (resume) and `report` (tables).

Kept apart from both so that `report` never imports the solving side.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_rows(path: str | Path) -> tuple[list[dict], int]:
    """Rows of a results file and the number of unreadable lines (e.g. a write cut short)."""
    rows: list[dict] = []
    bad = 0
    p = Path(path)
    if not p.exists():
        return rows, bad
    with p.open("r", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(row, dict):
                rows.append(row)
            else:
                bad += 1
    return rows, bad
