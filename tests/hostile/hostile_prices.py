"""Floods the runner's price board: plants files in its directory (found through the reporter),
many of other names and, at free slots, files no honest writer makes (a huge one, a FIFO, a
deflate bomb, a header that lies about its shape) claiming a bound above anyone's; then publishes
as fast as it can until the deadline, bounds below anyone's."""

import io
import os
import time
import zipfile

import numpy as np

from portfolio.backend import Backend, SolveResult, Status
from portfolio.hookspecs import hookimpl
from portfolio.prices import price_key

PLANTED = 20_000
"""Files of other names it plants (bounded: the test's disk and the board's deletion)."""
FIRST_SLOT = 32
"""The slots it plants at: far from the few that the test's honest backends write."""
CLAIM = 10**15
"""The bound its planted files claim: above any honest one."""


def _npy(arr: np.ndarray, shape: tuple = None) -> bytes:
    """``arr`` as a .npy member; with ``shape``, a header that claims that shape instead."""
    out = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(arr)
    if shape is not None:
        header["shape"] = shape
    np.lib.format.write_array_header_1_0(out, header)
    out.write(arr.tobytes())
    return out.getvalue()


def _archive(path: str, key: str, prices: np.ndarray, shape: tuple = None,
             deflate: bool = False) -> None:
    members = {"prices.npy": _npy(prices, shape), "key.npy": _npy(np.array(key)),
               "bound.npy": _npy(np.array(str(CLAIM))), "source.npy": _npy(np.array("flood"))}
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def plant(directory: str, key: str, n: int, junk: int = PLANTED) -> int:
    """The hostile files, ``junk`` of them of other names; returns that number."""
    slot = [os.path.join(directory, f"{FIRST_SLOT + i}.npz") for i in range(4)]
    with open(slot[0], "wb") as f:                     # 1 GiB, sparse: costs no disk
        f.truncate(1 << 30)
    os.mkfifo(slot[1])                                 # a reader that opens it plainly blocks
    _archive(slot[2], key, np.zeros(n + 500_000), deflate=True)      # 4 MB unpacked, KiBs packed
    _archive(slot[3], key, np.ones(n), shape=(10**11,))              # claims 800 GB
    for i in range(junk):
        with open(os.path.join(directory, f"flood-{i}.npz"), "wb") as f:
            f.write(bytes(200))
    return junk


class Flood(Backend):
    name = "price-flood"
    description = "floods the price board"

    def solve(self, problem, deadline, seed, warm_start, report):
        key, n = price_key(problem), len(problem.time_points)
        board = getattr(report, "price_board", None)
        planted = plant(board.directory, key, n) if board is not None else 0
        rng = np.random.default_rng(seed)
        published = 0
        while time.time() < deadline - 0.3:
            report.publish_prices(key, rng.random(n), -1 - published)   # below any honest bound
            published += 1
        return SolveResult(Status.NO_SOLUTION, note=f"published {published}x, planted {planted}")


@hookimpl
def portfolio_backends():
    return [Flood()]
