"""The price board: memory prices published by one worker, read by the others (:mod:`portfolio.prices`).

Why files in a per-run temporary directory rather than shared memory: the vector's size depends on
the problem a backend works on (the presolved one arrives after the first workers may have
started), several workers write, and a writer may die at any moment. Each writer owns one file, its
*slot* (``<slot>.npz``: worker ``i`` of the run, in launch order, writes slot ``i % MAX_WRITERS``),
written to a temporary name and renamed over the old one (``os.replace``, atomic on one
filesystem): a reader sees a writer's previous vector or its new one, never half of one, and no
lock is held that a killed writer could leave behind. What a dead writer published stays until the
run ends. A reader takes the highest certified bound among the slots of its key, and loads a file
again only when it changed (inode, size, modification time). The runner creates the board when a
timed run starts and deletes the directory when it ends; deterministic runs have none.

Why a reader is bounded (a backend may flood the board, by publishing as fast as it can or by
planting files in the directory): it looks at the ``MAX_WRITERS`` slot names only, never lists the
directory, so planted files of other names cost nothing; it opens a slot only when it is a regular
file no larger than the key's vector needs (:func:`file_limit`), reads no more than that, and
refuses a member whose declared shape does not match its length, so no file makes it allocate more
than the key's size. What a same-user process can always do is not prevented: overwrite another
writer's slot, or publish a bound it cannot certify.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import stat
import subprocess
import tempfile
import zipfile
from typing import Optional

import numpy as np

from ..prices import SharedPrices, checked_prices, key_size

SUFFIX = ".npz"

MAX_WRITERS = 64
"""Slots of a board: a reader looks at these file names only (a read is at most this many
``stat`` calls). A run that starts more workers reuses slots: the later writer replaces the
earlier one's file."""

HEADROOM = 8192
"""Bytes a price file may hold beyond its vector's (8 a price): the key, the bound, the source and
the archive's headers take about 2 KiB."""

MEMBERS = frozenset({"prices.npy", "key.npy", "bound.npy", "source.npy"})

CLOSE_INLINE = 4 * MAX_WRITERS
"""Entries of a board the runner deletes itself (slots and their temporary files); more, and a
backend flooded it: the deletion goes on in a process of its own (:meth:`PriceBoard.close`)."""

_CLEANERS: list[subprocess.Popen] = []
"""Deletions of flooded boards still running (kept so that they are reaped, not left zombies)."""


def file_limit(key: str) -> int:
    """The most bytes a price file of ``key`` may take (its vector plus ``HEADROOM``)."""
    return 8 * max(0, key_size(key)) + HEADROOM


class PriceBoard:
    """One run's board: a directory of one price file per writer slot."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._seen: dict[int, tuple[tuple[int, int, int, int], Optional[SharedPrices]]] = {}

    @classmethod
    def create(cls) -> Optional["PriceBoard"]:
        """A new board in a fresh temporary directory, or None when none can be made (the run
        then shares no prices: never a reason to fail)."""
        try:
            return cls(tempfile.mkdtemp(prefix="portfolio-prices-"))
        except OSError:
            return None

    def path(self, slot: int) -> str:
        """The file of writer slot ``slot``."""
        return os.path.join(self.directory, f"{slot}{SUFFIX}")

    def publish(self, slot: int, key: str, prices: object, bound: int, source: str = "") -> bool:
        """Replace slot ``slot``'s vector with ``prices`` (checked against ``key``) and their
        certified ``bound``; False when the board is gone or the disk refused (sharing is best
        effort). Raises ValueError for prices that do not fit the key or a slot out of range (a
        caller's mistake)."""
        if not 0 <= int(slot) < MAX_WRITERS:
            raise ValueError(f"price board slot {slot!r} is not in 0..{MAX_WRITERS - 1}")
        arr = checked_prices(key, prices)
        final = self.path(int(slot))
        tmp = os.path.join(self.directory, f".{int(slot)}.{os.getpid()}.tmp")
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
        or the board is gone). Slots of other keys, too large or unreadable files are ignored."""
        limit = file_limit(key)
        best: Optional[SharedPrices] = None
        for slot in range(MAX_WRITERS):
            got = self._load(slot, limit)
            if got is not None and got.key == key and (best is None or got.bound > best.bound):
                best = got
        return best

    def _load(self, slot: int, limit: int) -> Optional[SharedPrices]:
        """Slot ``slot``'s vector when its file is a regular one of at most ``limit`` bytes (the
        last answer again when the file did not change)."""
        try:
            st = os.stat(self.path(slot))
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, limit)
        cached = self._seen.get(slot)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        value = _read_file(self.path(slot), limit)
        self._seen[slot] = (stamp, value)
        return value

    def close(self) -> None:
        """Delete the board (the run is over), without making the run wait for a flood: a board
        of at most ``CLOSE_INLINE`` entries is deleted here; a directory a backend filled with
        files of its own (10^5 files take a second or more) is left to a detached ``rm -r``,
        which finishes even when this process exits first."""
        try:
            with os.scandir(self.directory) as entries:
                flooded = sum(1 for _, _ in zip(range(CLOSE_INLINE + 1), entries)) > CLOSE_INLINE
        except OSError:
            flooded = False
        if flooded:
            _CLEANERS[:] = [p for p in _CLEANERS if p.poll() is None]   # the ended ones reaped
            try:
                _CLEANERS.append(subprocess.Popen(
                    ["rm", "-rf", "--", self.directory], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
                return
            except OSError:
                pass
        shutil.rmtree(self.directory, ignore_errors=True)


def _read_file(path: str, limit: int) -> Optional[SharedPrices]:
    """The vector in the price file at ``path``, or None when it is not one (garbled, too large,
    swapped for something that is not a regular file since it was looked at)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # a planted FIFO must not block
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            raw = f.read(limit + 1)
        if len(raw) > limit:
            return None
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            infos = zf.infolist()
            if ({i.filename for i in infos} != MEMBERS or len(infos) != len(MEMBERS)
                    or sum(i.file_size for i in infos) > limit):
                return None
            arrays = {i.filename[:-4]: _array(zf.read(i)) for i in infos}
        key = str(arrays["key"])
        return SharedPrices(key, checked_prices(key, arrays["prices"]), int(str(arrays["bound"])),
                            str(arrays["source"]))
    except Exception:  # noqa: BLE001 -- a garbled file is ignored, never fatal to a reader
        return None


def _array(raw: bytes) -> np.ndarray:
    """One ``.npy`` member (at most 1-d, no objects), its declared shape checked against its length
    before anything is allocated; raises ValueError otherwise."""
    fp = io.BytesIO(raw)
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
    else:
        raise ValueError(f"npy version {version}")
    count = math.prod(shape)
    if len(shape) > 1 or dtype.hasobject or count * dtype.itemsize != len(raw) - fp.tell():
        raise ValueError("an array whose header does not match its data")
    return np.frombuffer(raw, dtype=dtype, count=count, offset=fp.tell()).reshape(shape)
