"""The runner's price board (issue 33): memory prices shared between backends.

A vector round-trips and a reader of another problem gets nothing; prices outlive the backend that
published them (it dies, another reads them in the same run); deterministic runs share nothing and
stay deterministic; the toulbar2 price model takes better certified prices for its penalty; the
``bound`` backend publishes its best; a run with both backends ends on time and leaves no board;
a reader looks at the writer slots only and refuses files the key cannot need (a flood).
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from functools import lru_cache

import numpy as np
import pytest

from portfolio.backend import Backend, BackendMeta, Capabilities, NullReporter, SolveResult, Status
from portfolio.generate import generate_problem
from portfolio.options import RunOptions
from portfolio.prices import PriceLink, SharedPrices, price_key
from portfolio.problem import Capacity
from portfolio.runner import deadline_plan, run_portfolio
from portfolio.runner.priceboard import PriceBoard
from conftest import REPO
from tiny import make_problem

sys.path.insert(0, str(REPO / "tests" / "hostile"))   # the flood of hostile_prices


@lru_cache(maxsize=None)
def gen():
    """Too many nodes for toulbar2's exact mode: its penalty search and prices run."""
    return generate_problem(600, seed=7, forbidden_fraction=0.0)


def two_points():
    """Three nodes, time points 0 and 2; nodes 0 and 1 cannot both take their heavy choice."""
    return make_problem(costs=[[1, 5], [2, 6], [3, 3]], intervals=[(0, 3), (0, 3), (2, 4)],
                        usages=[[10, 2], [10, 3], [1, 1]], edges=[], tables=[],
                        capacity=Capacity.uniform(15))


class BoardReporter(NullReporter):
    """A direct-call reporter with the runner's board behind the two price methods."""

    def __init__(self, board: PriceBoard, slot: int = 0, options: dict | None = None) -> None:
        super().__init__(options)
        self.board, self.slot = board, slot

    def publish_prices(self, key, prices, bound, note=""):
        self.board.publish(self.slot, key, prices, bound, note)

    def shared_prices(self, key):
        return self.board.read(key)


class Probe(Backend):
    """A test backend of this file: a subclass gives its ``name`` and ``solve``."""

    description = "test backend"
    capabilities = Capabilities()
    meta = BackendMeta(test_only=True)


class DeterministicProbe(Probe):
    """A probe that counts work (deterministic mode)."""

    meta = BackendMeta(test_only=True, deterministic=True)


@pytest.fixture()
def board():
    b = PriceBoard.create()
    yield b
    b.close()


# ------------------------------------------------------------------------------------------ the board
def test_a_vector_round_trips_and_another_key_gets_nothing(board):
    p, q = two_points(), gen()
    key = price_key(p)
    assert key != price_key(q) and key == price_key(two_points())
    prices = np.array([0.25, 3.0])
    assert board.publish(1, key, prices, 17, "by hand")
    got = board.read(key)
    assert isinstance(got, SharedPrices) and got.bound == 17 and got.source == "by hand"
    assert got.prices.tolist() == [0.25, 3.0] and got.prices.dtype == np.float64
    assert board.read(price_key(q)) is None                          # another problem
    assert board.read(f"3:{key.split(':')[1]}") is None              # another shape
    with pytest.raises(ValueError, match="3 prices for a key of 2"):
        board.publish(1, key, [1.0, 2.0, 3.0], 18)
    with pytest.raises(ValueError, match="price 1 is"):
        board.publish(1, key, [1.0, -2.0], 18)
    assert board.read(key).bound == 17                               # refused: nothing changed


def test_the_highest_bound_wins_and_a_garbled_file_is_ignored(board):
    key = price_key(two_points())
    board.publish(0, key, [1.0, 0.0], 20)
    board.publish(1, key, [0.0, 1.0], 30)
    board.publish(0, key, [2.0, 0.0], 25)                            # 0's newer, still below 1
    assert board.read(key).prices.tolist() == [0.0, 1.0]
    with open(board.path(2), "wb") as f:
        f.write(b"not a zip file")
    assert board.read(key).bound == 30
    board.close()
    assert board.read(key) is None and not os.path.exists(board.directory)


def test_a_reader_looks_at_slots_only_and_refuses_files_the_key_cannot_need(board):
    """A flood's files (tests/hostile/hostile_prices.py), each claiming a bound above the honest
    one: at other names, a 1 GiB file, a FIFO (a plain open would block), a deflate bomb, a header
    that lies about its shape, a directory. None is taken, the read does not block, and a slot out
    of range is a caller's mistake."""
    import hostile_prices

    key = price_key(two_points())
    board.publish(0, key, [0.5, 1.5], 1000, "honest")
    board.publish(5, key, [9.0, 9.0], hostile_prices.CLAIM)          # a valid file ...
    os.replace(board.path(5), os.path.join(board.directory, "flood.npz"))   # ... at another name
    hostile_prices.plant(board.directory, key, 2, junk=100)
    os.mkdir(board.path(hostile_prices.FIRST_SLOT + 4))
    out = []
    reader = threading.Thread(target=lambda: out.append(board.read(key)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "the read blocked"
    assert out[0].bound == 1000 and out[0].prices.tolist() == [0.5, 1.5]
    board.publish(9, key, [1.0, 1.0], 2000)                          # an honest newcomer counts
    assert board.read(key).bound == 2000
    with pytest.raises(ValueError, match="slot 64 is not in 0..63"):
        board.publish(64, key, [1.0, 1.0], 1)


def test_reporters_without_a_board_share_nothing():
    rep = NullReporter()
    rep.publish_prices("2:x", np.zeros(2), 1)
    assert rep.shared_prices("2:x") is None

    link = PriceLink(rep, None, engine=None, take_bound=True, t0=0.0)   # no key: the link is off
    assert not link.on and link.adopt() is None and not link.publish(force=True)
    assert link.summary() == "not shared"


def test_a_link_calls_the_reporters_price_methods_as_declared(board):
    """No probing: the link calls ``publish_prices`` and ``shared_prices`` of any reporter (they
    are part of the contract); a reporter that overrides them is what the link talks to."""
    class Engine:
        best, best_lam, steps = 70, np.array([1.0, 2.0]), 5

        def adopt(self, lam, bound):
            self.adopted = (lam.tolist(), bound)

    key = price_key(two_points())
    engine = Engine()
    mine = PriceLink(BoardReporter(board, slot=0), key, engine, take_bound=True, t0=0.0)
    assert mine.on and mine.publish(force=True) and board.read(key).bound == 70
    BoardReporter(board, slot=1).publish_prices(key, np.array([3.0, 4.0]), 90, "other")
    assert mine.adopt() == 90 and engine.adopted == ([3.0, 4.0], 90)
    quiet = PriceLink(NullReporter(), key, Engine(), take_bound=True, t0=0.0)
    assert quiet.on and quiet.adopt() is None   # the null reporter's board is empty


# ------------------------------------------------------------------------------------------ a crash
class PricesThenDies(Probe):
    """Publishes prices on every time point, then its process ends without a word."""

    name = "prices-then-dies"

    def solve(self, problem, deadline, seed, warm_start, report):
        prices = np.arange(len(problem.time_points), dtype=np.float64) + 0.5
        report.publish_prices(price_key(problem), prices, 4242, f"pid {os.getpid()}")
        os._exit(3)


def _gone(pid: int) -> bool:
    """The process has exited (a zombie not yet reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


class ReadsPrices(Probe):
    """Waits for published prices, then for their publisher's death, then reads them again."""

    name = "reads-prices"

    def solve(self, problem, deadline, seed, warm_start, report):
        key = price_key(problem)
        while time.time() < deadline:
            got = report.shared_prices(key)
            if got is not None:
                pid = int(got.source.rsplit("pid ", 1)[1])
                while not _gone(pid) and time.time() < deadline:
                    time.sleep(0.02)
                if not _gone(pid):
                    return SolveResult(Status.NO_SOLUTION, note="publisher still alive")
                after = report.shared_prices(key)
                return SolveResult(Status.NO_SOLUTION, note=(
                    f"after its death: bound {after.bound}, prices {after.prices.tolist()}"))
            time.sleep(0.02)
        return SolveResult(Status.NO_SOLUTION, note="nothing published")


def test_prices_outlive_the_backend_that_published_them():
    problem = two_points()
    result = run_portfolio(problem, [PricesThenDies(), ReadsPrices()],
                           RunOptions(time_limit=6.0, workers=2, presolve=False))
    assert result.runs["prices-then-dies"].status is Status.CRASHED
    assert result.runs["reads-prices"].note == "after its death: bound 4242, prices [0.5, 1.5]"


class PublishesAndReads(Probe):
    name = "publishes-and-reads"

    def solve(self, problem, deadline, seed, warm_start, report):
        key = price_key(problem)
        report.publish_prices(key, np.ones(len(problem.time_points)), 7)
        return SolveResult(Status.NO_SOLUTION, note=f"read {report.shared_prices(key)!r}")


def test_without_a_writable_temp_folder_the_run_shares_nothing_and_still_runs(monkeypatch, tmp_path):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    assert PriceBoard.create() is None
    result = run_portfolio(two_points(), [PublishesAndReads()], RunOptions(time_limit=4.0))
    assert result.runs["publishes-and-reads"].note == "read None"
    monkeypatch.undo()
    result = run_portfolio(two_points(), [PublishesAndReads()], RunOptions(time_limit=4.0))
    assert result.runs["publishes-and-reads"].note.startswith("read SharedPrices(")


# ------------------------------------------------------------------------------------------ determinism
class Publishes(DeterministicProbe):
    """Deterministic mode: publishes, counts some work, returns."""

    name = "det-publishes"

    def solve(self, problem, deadline, seed, warm_start, report):
        report.publish_prices(price_key(problem), np.ones(len(problem.time_points)), 1)
        report.work.spend(500)
        return SolveResult(Status.NO_SOLUTION, note="published")


class Reads(DeterministicProbe):
    name = "det-reads"

    def solve(self, problem, deadline, seed, warm_start, report):
        seen = []
        while report.work.spend(100):
            seen.append(report.shared_prices(price_key(problem)))
        return SolveResult(Status.NO_SOLUTION, note=f"read {len(seen)}x: {set(map(repr, seen))}")


def test_a_deterministic_run_has_no_board_and_reads_none():
    boards = []
    result = run_portfolio(two_points(), [Publishes(), Reads()],
                           RunOptions(deterministic=True, work=2000, time_limit=20, presolve=False),
                           on_update=lambda pf: boards.append(pf.price_board))
    assert boards and set(boards) == {None}
    assert result.runs["det-reads"].note.endswith(": {'None'}")


def test_bound_and_toulbar2_in_deterministic_mode_never_touch_the_board(monkeypatch):
    """The link's methods raise if called: a deterministic run of both engines must not call them,
    and gives the same plan twice."""
    from portfolio_plugins.bound import BoundBackend
    from portfolio_plugins.toulbar2 import Toulbar2Backend

    def refuse(*args, **kwargs):
        raise AssertionError("price board used in deterministic mode")

    monkeypatch.setattr(PriceLink, "adopt", refuse)
    monkeypatch.setattr(PriceLink, "publish", refuse)
    hashes = []
    for _ in range(2):
        result = run_portfolio(gen(), [BoundBackend(), Toulbar2Backend()],
                               RunOptions(deterministic=True, work=4000, time_limit=60,
                                          # the penalty search and its prices run
                                          backend_options={"toulbar2": {"exact": False}}))
        for name in ("bound", "toulbar2"):
            run = result.runs[name]
            assert run.status in (Status.FEASIBLE, Status.NO_SOLUTION), (name, run.note)
        assert result.deterministic["complete"], result.deterministic
        hashes.append(result.plan_hash)
    assert hashes[0] is not None and hashes[0] == hashes[1]


# ------------------------------------------------------------------------------------------ toulbar2
def _priced_penalty(problem, lam: np.ndarray) -> np.ndarray:
    """Per strategy, its usage priced at ``lam`` (each interval's usage times the sum of the prices
    of the time points it covers) minus its node's least: computed here from the problem alone."""
    lo, hi = problem.interval_point_range
    cum = np.concatenate([[0.0], np.cumsum(lam)])
    priced = np.zeros(len(problem.node_costs))
    for j in range(problem.num_intervals):
        node = problem.interval_node[j]
        a, b = problem.interval_usage_offsets[j], problem.interval_usage_offsets[j + 1]
        so = problem.strategy_offsets[node]
        priced[so:so + (b - a)] += problem.interval_usages[a:b] * (cum[hi[j]] - cum[lo[j]])
    starts = problem.strategy_offsets[:-1]
    return priced - np.repeat(np.minimum.reduceat(priced, starts), problem.strategy_counts)


def test_toulbar2_takes_better_shared_prices_for_its_penalty(board):
    from portfolio.kernels.bound import LagrangeBound
    from portfolio.kernels.engine import prepare
    from portfolio.toulbar2.prices import PriceModel

    problem = gen()
    prep = prepare(problem)
    other = LagrangeBound(problem, prep.model, seed=1, offset=int(problem.cost_offset))
    other.run(0.0, max_steps=150)
    key = price_key(problem)
    board.publish(0, key, other.best_lam, other.best, "150 steps")

    prices = PriceModel(problem, prep, seed=0, report=BoardReporter(board, 2))
    prices.advance(60.0, max_steps=2)
    assert prices.engine.best < other.best          # two steps certify less than 150
    before = prices.penalty()
    prices.share()
    assert prices.engine.best == other.best
    assert np.array_equal(prices.engine.lam, other.best_lam)   # its steps go on from them
    pen = prices.penalty()
    expected = _priced_penalty(problem, other.best_lam)
    assert np.allclose(pen, expected, rtol=1e-9, atol=1e-6 * max(1.0, expected.max()))
    assert not np.allclose(before, expected)
    assert prices.link.adoptions and prices.link.adoptions[0][1] == other.best
    # its own later steps never lower the best it adopted, and nothing worse is published
    prices.advance(60.0, max_steps=prices.steps + 3)
    prices.share()
    assert prices.engine.best >= other.best
    assert board.read(key).bound == max(other.best, prices.engine.best)


def test_toulbar2_publishes_prices_better_than_the_board(board):
    from portfolio.kernels.engine import prepare
    from portfolio.toulbar2.prices import PriceModel

    problem = gen()
    key = price_key(problem)
    board.publish(0, key, np.zeros(len(problem.time_points)), -10**15, "nothing")
    prices = PriceModel(problem, prepare(problem), seed=0, report=BoardReporter(board, 1))
    prices.advance(60.0, max_steps=20)
    prices.share()
    got = board.read(key)
    assert got.bound == prices.engine.best > -10**15
    assert np.array_equal(got.prices, prices.engine.best_lam)


# ------------------------------------------------------------------------------------------ bound
def test_the_bound_backend_publishes_its_best_certified_prices(board):
    from portfolio_plugins.bound import BoundBackend

    from portfolio.presolve import presolve

    problem = presolve(gen()).reduced   # what the runner gives it: the kernels keep it as it is
    result = BoundBackend().solve(problem, time.time() + 60, 0, None, BoardReporter(
        board, 0, {"max_steps": 60, "toulbar2": False}))
    got = board.read(price_key(problem))
    assert got is not None and got.bound == result.lower_bound
    assert "shared prices: out " in result.note
    assert got.prices.max() > 0 and got.source.startswith("60 steps")
    # on the original problem the kernels' reduced view has time points of its own: its prices
    # are mapped onto the problem's (see the next test)
    original = BoundBackend().solve(gen(), time.time() + 60, 0, None, BoardReporter(
        board, 0, {"max_steps": 30, "toulbar2": False}))
    mapped = board.read(price_key(gen()))
    assert mapped is not None and mapped.bound == original.lower_bound
    assert len(mapped.prices) == len(gen().time_points) != len(problem.time_points)


def _slack(problem, plan: np.ndarray) -> np.ndarray:
    """Per time point of ``problem``: the plan's usage there minus the capacity (exact integers)."""
    lo, hi = problem.interval_point_range
    rows = np.arange(problem.num_intervals)
    use = problem.interval_usages[problem.interval_usage_offsets[rows]
                                  + plan[problem.interval_node[rows]]]
    diff = np.zeros(len(problem.time_points) + 1, dtype=np.int64)
    np.add.at(diff, lo, use)
    np.add.at(diff, hi, -use)
    return np.cumsum(diff[:-1]) - problem.point_capacity


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reduced_view_prices_map_onto_the_problems_without_lowering_the_priced_objective(seed):
    """For expansions of random reduced plans, the priced slack at the mapped prices is at least
    the reduced view's priced slack (equal where every reduced point is one of the problem's), and
    the way back then forth returns what it was given."""
    from portfolio.kernels.engine import prepare
    from portfolio.kernels.pricemap import PointMap

    problem = generate_problem(400, seed=seed)
    prep = prepare(problem)
    pre = prep.red.presolved
    assert pre is not None                     # the kernels reduce this problem
    reduced = pre.reduced
    pm = PointMap.of(prep)
    rng = np.random.default_rng(seed)
    limited = reduced.point_capacity < np.iinfo(np.int64).max
    lam = np.where(limited, rng.integers(0, 4, len(reduced.time_points)), 0).astype(np.float64)
    big = pm.to_problem(lam)
    assert len(big) == len(problem.time_points) and (big >= 0).all() and big.sum() == lam.sum()
    assert np.array_equal(pm.to_problem(pm.from_problem(big)), big)
    exact = np.isin(pre.time_of[reduced.time_points], problem.time_points).all()
    for _ in range(5):
        x = rng.integers(0, reduced.strategy_counts)
        mine = int(np.dot(lam.astype(np.int64), _slack(reduced, x)))
        theirs = int(np.dot(big.astype(np.int64), _slack(problem, pre.expand(x))))
        assert theirs >= mine
        if exact:
            assert theirs == mine


# ------------------------------------------------------------------------------------------ deadline
def test_bound_and_toulbar2_share_prices_and_end_on_time(monkeypatch):
    from portfolio_plugins.bound import BoundBackend
    from portfolio_plugins.toulbar2 import Toulbar2Backend


    seen = []
    limit = 8.0
    t0 = time.monotonic()
    result = run_portfolio(gen(), [BoundBackend(), Toulbar2Backend()],
                           RunOptions(time_limit=limit, workers=2, early_stop=False, presolve=True,
                                      # no proof: its penalty search runs
                                      backend_options={"toulbar2": {"exact": False}}),
                           on_update=lambda pf: seen.append(pf.price_board))
    elapsed = time.monotonic() - t0
    assert elapsed <= limit + 0.5, elapsed
    assert result.elapsed <= deadline_plan(0.0, limit)[2]
    board = next(b for b in seen if b is not None)
    assert not os.path.exists(board.directory)        # the runner deleted it
    notes = {name: run.note for name, run in result.runs.items()}
    bound = _sharing(notes["bound"], "shared prices: ")
    tb2 = _sharing(notes["toulbar2"], "shared_prices=")
    # prices went from one backend to the other: something published, something adopted
    assert bound["out"] + tb2["out"] >= 1 and bound["in"] + tb2["in"] >= 1, notes
    for mine, theirs, publisher in ((bound, tb2, "toulbar2"), (tb2, bound, "bound")):
        if mine["in"]:   # adopted from the other one, no more than the other published
            assert mine["from"] == publisher and theirs["out"] >= 1, notes
            assert mine["adopted"] <= theirs["published"], notes


_SUMMARY = re.compile(r"out (\d+)x(?: \((-?\d+)\))?, in (\d+)x"
                      r"(?: from [\d.]+ s \(([^,]+), (-?\d+)\))?")


def _sharing(note: str, marker: str) -> dict:
    """A backend's ``PriceLink.summary`` read back from its note (after ``marker``): the
    publications and adoptions it counted, the best bound published, the first adoption's
    publisher and the best bound adopted."""
    assert marker in note, note
    found = _SUMMARY.match(note.split(marker, 1)[1])
    assert found, note
    out, published, taken, source, adopted = found.groups()
    return {"out": int(out), "published": None if published is None else int(published),
            "in": int(taken), "from": source, "adopted": None if adopted is None else int(adopted)}
