"""The price board: memory prices published by one worker, read by the others (:mod:`portfolio.prices`).

Why files in a per-run temporary directory rather than shared memory: the vector's size depends on
the problem a backend works on (the presolved one arrives after the first workers may have
started), several workers write, and a writer may die at any moment. Each writer owns one file
(``<writer>.npz``), written to a temporary name and renamed over the old one (``os.replace``, atomic
on one filesystem): a reader sees a writer's previous vector or its new one, never half of one, and
no lock is held that a killed writer could leave behind. What a dead writer published stays until
the run ends. A reader takes the highest certified bound among the files of its key, and loads a
file again only when it changed (inode, size, modification time). The runner creates the board when
a timed run starts and deletes the directory when it ends; deterministic runs have none.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import Optional

import numpy as np

from ..prices import SharedPrices, checked_prices

SUFFIX = ".npz"


class PriceBoard:
    """One run's board: a directory of one price file per writer."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._seen: dict[str, tuple[tuple[int, int, int], Optional[SharedPrices]]] = {}

    @classmethod
    def create(cls) -> Optional["PriceBoard"]:
        """A new board in a fresh temporary directory, or None when none can be made (the run
        then shares no prices: never a reason to fail)."""
        try:
            return cls(tempfile.mkdtemp(prefix="portfolio-prices-"))
        except OSError:
            return None

    def publish(self, writer: str, key: str, prices: object, bound: int, source: str = "") -> bool:
        """Replace ``writer``'s vector with ``prices`` (checked against ``key``) and their certified
        ``bound``; False when the board is gone or the disk refused (sharing is best effort).
        Raises ValueError for prices that do not fit the key (a caller's mistake)."""
        arr = checked_prices(key, prices)
        name = re.sub(r"[^A-Za-z0-9_.+-]", "_", writer)[:80] or "writer"
        final = os.path.join(self.directory, name + SUFFIX)
        tmp = os.path.join(self.directory, f".{name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                np.savez(f, prices=arr, key=np.array(key), bound=np.array(str(int(bound))),
                         source=np.array(str(source)[:200]))
            os.replace(tmp, final)
            return True
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False

    def read(self, key: str) -> Optional[SharedPrices]:
        """The published vector of ``key`` with the highest bound, or None (nothing of that key,
        or the board is gone). Files of other keys and unreadable files are ignored."""
        try:
            entries = [e for e in os.scandir(self.directory) if e.name.endswith(SUFFIX)]
        except OSError:
            return None
        best: Optional[SharedPrices] = None
        for entry in entries:
            got = self._load(entry)
            if got is not None and got.key == key and (best is None or got.bound > best.bound):
                best = got
        return best

    def _load(self, entry: os.DirEntry) -> Optional[SharedPrices]:
        try:
            st = entry.stat()
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._seen.get(entry.name)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        value: Optional[SharedPrices] = None
        try:
            with np.load(entry.path, allow_pickle=False) as data:
                key = str(data["key"])
                value = SharedPrices(key, checked_prices(key, data["prices"]),
                                     int(str(data["bound"])), str(data["source"]))
        except Exception:  # noqa: BLE001 -- a garbled file is ignored, never fatal to a reader
            value = None
        self._seen[entry.name] = (stamp, value)
        return value

    def close(self) -> None:
        """Delete the board (the run is over)."""
        shutil.rmtree(self.directory, ignore_errors=True)
