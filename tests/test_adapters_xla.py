"""XLA requests: exact against a brute force of the request's semantics, round trips, clear errors.

Fixtures are written by the tests themselves (the message classes are the adapter's, built from a
declared descriptor); nothing here needs jax, torch or XLA.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from conftest import BENCH_NAMES, bench_path, bundled_example_path
from tiny import make_problem
from xla_reference import HALVES, brute_optimum, honours_followers, plans, random_request, score, to_message

from portfolio.adapters import xla_proto
from portfolio.adapters.formats import CannotWrite, convert, format_of, load_any, read_any, save_any
from portfolio.adapters.request import from_problem, to_problem
from portfolio.adapters.xla import message_to_request, parse_request, read_request, save_message, write_request
from portfolio.errors import ProblemError
from portfolio.evaluate import SolutionError, evaluate
from portfolio.io import ProblemFormatError, load_problem, problem_to_dict, read_bytes, read_extended
from portfolio.problem import FORBIDDEN, Capacity


def _write(tmp_path, req: dict, name: str = "r.pb"):
    msg = to_message(req)
    path = tmp_path / name
    if name.endswith((".textproto", ".txtpb")):
        from google.protobuf import text_format

        path.write_text(text_format.MessageToString(msg))
    else:
        path.write_bytes(msg.SerializeToString())
    return path


def _same_problem(a, b) -> None:
    for key in ("strategy_offsets", "node_costs", "interval_node", "interval_start", "interval_end",
                "interval_usage_offsets", "interval_usages", "edge_node_offsets", "edge_nodes",
                "edge_cost_offsets", "edge_costs"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    assert a.usage_limit == b.usage_limit and a.cost_offset == b.cost_offset and a.name == b.name


# ------------------------------------------------------------------------------------------ semantics
@pytest.mark.parametrize("seed", range(100))
def test_every_plan_costs_and_fits_as_the_request_says(tmp_path, seed):
    """Each plan of the request (followers honoured) maps to a plan of the problem with the same
    cost, the same memory verdict, and a forbidden entry exactly when it breaks an alias."""
    rng = random.Random(seed)
    req = random_request(rng)
    conv = read_request(_write(tmp_path, req, "r.textproto" if seed % 3 == 0 else "r.pb"))
    assert conv.cost_error_bound == 0
    for plan in plans(req):
        if not honours_followers(req, plan):
            with pytest.raises(SolutionError, match="follows"):
                conv.restrict(plan)
            continue
        mapped = conv.restrict(plan)
        assert np.array_equal(conv.expand(mapped), plan)
        ev = evaluate(conv.problem, mapped)
        cost, violated, fits = score(req, plan)
        assert ev.has_forbidden == violated, plan
        if not violated:
            assert ev.cost == cost, plan
        assert ev.feasible == fits, plan


@pytest.mark.parametrize("seed", range(20))
def test_fractional_costs_keep_their_precision_within_the_reported_bound(tmp_path, seed):
    rng = random.Random(1000 + seed)
    req = random_request(rng, fractional=True)
    coarse = read_request(_write(tmp_path, req))
    fine = read_request(_write(tmp_path, req), cost_scale=4)  # quarters: exact at scale 4
    assert fine.cost_error_bound == 0
    for plan in plans(req):
        if not honours_followers(req, plan):
            continue
        cost, violated, _ = score(req, plan)
        if violated:
            continue
        assert evaluate(fine.problem, fine.restrict(plan)).cost == 4 * cost
        rough = evaluate(coarse.problem, coarse.restrict(plan)).cost
        assert abs(rough - cost) <= coarse.cost_error_bound + 1e-9


def test_gaps_in_liveness_stay_exact():
    """Live at times 0, 1 and 4: two intervals, not one widened [0, 5)."""
    req = {"num_nodes": 2, "s_len": [1, 1], "computation_costs": [[0], [0]],
           "communication_costs": [[0], [0]], "memory_costs": [[3], [4]],
           "live": [[0], [0, 1], [1], [1], [0]], "memory_budget": 7}
    p = to_problem(message_to_request(to_message(req))).problem
    assert p.interval_node.tolist() == [0, 0, 1]
    assert [p.interval_start.tolist(), p.interval_end.tolist()] == [[0, 4, 1], [2, 5, 4]]
    assert p.interval_usages.tolist() == [3, 3, 4]


def test_group_members_inherit_the_group_liveness_once():
    """A node live itself and through its group at the same time is counted once."""
    req = {"num_nodes": 2, "s_len": [1, 1], "computation_costs": [[0], [0]],
           "communication_costs": [[0], [0]], "memory_costs": [[5], [1]],
           "node_groups": [[0, 1]], "live": [[0, 2], [2]], "memory_budget": 6}
    p = to_problem(message_to_request(to_message(req))).problem
    assert p.interval_start.tolist() == [0, 0] and p.interval_end.tolist() == [2, 2]
    assert evaluate(p, [0, 0]).feasible


def test_negative_edge_costs_are_shifted_into_the_offset():
    req = {"num_nodes": 2, "s_len": [2, 1], "computation_costs": [[0, 0], [1]],
           "communication_costs": [[0, 0], [0]], "memory_costs": [[0, 0], [0]],
           "edges": [[0, 1]], "resharding_costs": [[-3, 2]]}
    conv = to_problem(message_to_request(to_message(req)))
    assert conv.cost_shift == -3 and conv.problem.cost_offset == -3
    assert conv.problem.edge_costs.tolist() == [0, 5]
    assert evaluate(conv.problem, [0, 0]).cost == -2 and evaluate(conv.problem, [1, 0]).cost == 3


def test_infinite_costs_are_forbidden_and_no_budget_means_no_limit():
    req = {"num_nodes": 1, "s_len": [2], "computation_costs": [[math.inf, 1]],
           "communication_costs": [[0, 0]], "memory_costs": [[10**6, 10**6]],
           "node_intervals": [[0, 3]], "memory_budget": 0}
    p = to_problem(message_to_request(to_message(req))).problem
    assert p.node_costs.tolist() == [FORBIDDEN, 1] and p.capacity.is_unlimited


def test_followers_fold_into_one_node_with_their_intervals():
    req = {"num_nodes": 3, "s_len": [2, 2, 2], "s_follow": [-1, 0, 1],
           "computation_costs": [[1, 2], [10, 20], [100, 200]], "communication_costs": [[0, 0]] * 3,
           "memory_costs": [[1, 2], [3, 4], [5, 6]], "node_intervals": [[0, 0], [1, 1], [2, 2]]}
    conv = to_problem(message_to_request(to_message(req)))
    assert conv.problem.num_nodes == 1 and conv.node_of.tolist() == [0, 0, 0]
    assert conv.problem.node_costs.tolist() == [111, 222]
    assert conv.problem.num_intervals == 3 and conv.expand([1]).tolist() == [1, 1, 1]


# ------------------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("name", ["x.pb", "x.binpb", "x.textproto", "x.txtpb", "x.pb.gz"])
def test_contest_request_contest_is_identical(tmp_path, name):
    original = load_problem(bundled_example_path())
    save_any(original, tmp_path / name)
    back = load_any(tmp_path / name)
    _same_problem(original, back)
    assert back.is_contest_shaped
    save_any(back, tmp_path / "back.json")
    assert problem_to_dict(load_problem(tmp_path / "back.json")) == problem_to_dict(original)


def test_a_general_problem_survives_a_request(tmp_path):
    """Several intervals per node (written as followers), a cost offset, an empty interval: the
    problem read back scores every plan as the original does."""
    original = make_problem(costs=[[1, 5], [2], [0, 3, 4]],
                            intervals=[(0, 3), (5, 9), (2, 6), (4, 4), (1, 8)],
                            usages=[[2, 1], [4, 0], [3], [9, 9, 9], [1, 2, 3]],
                            edges=[[0, 2], [2, 1]], tables=[[1, 2, FORBIDDEN, 0, 5, 6], [7, 8, 9]],
                            capacity=Capacity.uniform(6), offset=-4, owners=[0, 0, 1, 2, 2])
    write_request(original, tmp_path / "g.pb")
    conv = read_request(tmp_path / "g.pb")
    back = conv.problem
    assert back.num_nodes == 3 and back.num_intervals == 5
    for plan in plans({"s_len": [2, 1, 3]}):
        a, b = evaluate(original, list(plan)), evaluate(back, list(plan))
        assert (a.cost, a.feasible, a.has_forbidden) == (b.cost, b.feasible, b.has_forbidden)


def test_extended_json_keeps_a_negative_offset(tmp_path):
    req = {"num_nodes": 2, "s_len": [1, 1], "computation_costs": [[0], [0]],
           "communication_costs": [[0], [0]], "memory_costs": [[1], [1]],
           "edges": [[0, 1]], "resharding_costs": [[-2]], "live": [[0], [1], [0]]}
    p = to_problem(message_to_request(to_message(req))).problem
    assert save_any(p, tmp_path / "p.json") == "extended"
    assert read_extended(tmp_path / "p.json").cost_offset == -2


def test_what_a_request_cannot_hold_is_refused_clearly():
    hyper = make_problem(costs=[[0], [0], [0]], intervals=[(0, 1)] * 3, usages=[[0]] * 3,
                         edges=[[0, 1, 2]], tables=[[0]])
    with pytest.raises(ValueError, match="pairs only"):
        from_problem(hyper)
    zero = make_problem(costs=[[0]], intervals=[(0, 1)], usages=[[0]], edges=[], tables=[],
                        capacity=Capacity.uniform(0))
    with pytest.raises(ValueError, match="budget"):
        from_problem(zero)
    big = make_problem(costs=[[2**60]], intervals=[(0, 1)], usages=[[0]], edges=[], tables=[])
    with pytest.raises(ValueError, match="2\\*\\*53"):
        from_problem(big)


def test_formats_by_name():
    assert [format_of(n) for n in ("a.json", "a.json.gz", "a.pb", "a.binpb.gz", "a.txtpb", "a.textproto")] \
        == ["contest", "contest", "xla", "xla", "xla-text", "xla-text"]
    assert format_of("a.pb", "xla-text") == "xla-text"
    with pytest.raises(ValueError, match="unknown format"):
        format_of("a.pb", "onnx")


@pytest.mark.slow
@pytest.mark.parametrize("name", BENCH_NAMES)
def test_shared_instances_round_trip_through_a_request(tmp_path, name):
    path = bench_path(name)
    original = load_problem(path)
    save_any(original, tmp_path / "r.pb")
    back = read_any(tmp_path / "r.pb")
    assert back.notes == () and back.cost_error_bound == 0
    _same_problem(original, back.problem)
    save_any(back.problem, tmp_path / "r.json")
    import gzip

    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc["problem"].setdefault("name", original.name)
    assert json.loads((tmp_path / "r.json").read_text()) == doc


# ------------------------------------------------------------------------------------------ XLA to XLA
FULL = {**HALVES, "aliases": [[0, 3]], "value_costs": [[0, 1, 0, 0]], "node_groups": [[0, 1]],
        "live": [[0, 4], [1, 2], [3, 4], []], "s_hint": [0, 1, 1, 0]}
"""The issue's request with aliases, a group, liveness by ``live`` (``node_intervals`` kept too) and
a hint; :func:`every_field` sets the fields the problem does not read on top."""

_SAMPLES = {xla_proto._I64: [7, -3], xla_proto._DBL: [0.25, 1e18], xla_proto._BOOL: [True],
            xla_proto._STR: ["x", "y"]}


def _fill(msg, skip: frozenset = frozenset()) -> None:
    """Set every field of ``msg`` that is not in ``skip``, each to a value its type allows."""
    for field in msg.DESCRIPTOR.fields:
        if field.name in skip:
            continue
        value = getattr(msg, field.name)
        if field.message_type is not None:
            _fill(value.add() if hasattr(value, "add") else value)
        elif hasattr(value, "extend"):  # a repeated number or string
            value.extend(_SAMPLES[field.type])
        else:
            setattr(msg, field.name, _SAMPLES[field.type][0])


def every_field():
    """A valid request with every field of XLA's message set."""
    msg = to_message(FULL)
    _fill(msg, skip=xla_proto.READ | {"s_hint"})
    assert {f.name for f, _ in msg.ListFields()} == set(xla_proto.FIELD_NUMBERS)
    return msg


def _message(path):
    return parse_request(read_bytes(path), path)[0]


def _wire(msg) -> bytes:
    return msg.SerializeToString(deterministic=True)


def test_the_whole_message_is_declared_with_xla_numbers():
    fields = {f.name: f.number for f in xla_proto.request_class().DESCRIPTOR.fields}
    assert len(fields) == 41 and sorted(fields.values()) == list(range(1, 42))
    assert (fields["s_follow"], fields["s_hint"], fields["aliases"], fields["request_name"],
            fields["node_intervals"], fields["node_groups"]) == (4, 5, 14, 30, 36, 38)


ENCODINGS = ["r.pb", "r.binpb.gz", "r.textproto", "r.txtpb.gz", "r.pbtxt"]


@pytest.mark.parametrize("dst", ENCODINGS)
@pytest.mark.parametrize("src", ENCODINGS)
def test_xla_to_xla_keeps_every_field(tmp_path, src, dst):
    """Followers, aliases, groups, both liveness fields, fractional costs, the hint, the name and
    every field the problem does not read: the same message after a conversion, either way."""
    msg = every_field()
    save_message(msg, tmp_path / f"in-{src}")
    done = convert(tmp_path / f"in-{src}", tmp_path / f"out-{dst}")
    assert done.copied and done.conversion.notes == ()
    back = _message(tmp_path / f"out-{dst}")
    assert back == msg and _wire(back) == _wire(msg)
    assert back.computation_costs[0].costs[0] == 0.5 and list(back.s_follow) == [-1, -1, 1, -1]


def test_round_trips_are_identical(tmp_path):
    """text -> binary -> text gives the printer's bytes again; binary -> text -> binary the same
    message, and the same bytes."""
    msg = every_field()
    text = tmp_path / "a.textproto"
    text.write_text(xla_proto.to_text(msg))
    convert(text, tmp_path / "b.pb")
    convert(tmp_path / "b.pb", tmp_path / "c.txtpb")
    assert (tmp_path / "c.txtpb").read_bytes() == text.read_bytes()
    binary = tmp_path / "d.pb"
    binary.write_bytes(msg.SerializeToString())
    convert(binary, tmp_path / "e.textproto")
    convert(tmp_path / "e.textproto", tmp_path / "f.pb")
    assert _message(tmp_path / "f.pb") == msg and (tmp_path / "f.pb").read_bytes() == binary.read_bytes()


def test_unknown_binary_fields_survive_binary_and_are_refused_by_text(tmp_path):
    """A field of a newer XLA (number 50) is carried through binary to binary; text cannot name
    it, so writing text is refused unless asked to drop it, which the notes then say."""
    msg = every_field()
    src = tmp_path / "u.pb"
    src.write_bytes(msg.SerializeToString() + bytes([0x90, 0x03, 0x05]))
    convert(src, tmp_path / "v.pb.gz")
    kept = _message(tmp_path / "v.pb.gz")
    assert xla_proto.unknown_field_numbers(kept) == [50] and kept.SerializeToString() == src.read_bytes()
    with pytest.raises(CannotWrite, match="numbers 50.*text format cannot hold"):
        convert(src, tmp_path / "w.txtpb")
    assert not (tmp_path / "w.txtpb").exists()
    done = convert(src, tmp_path / "w.txtpb", drop_unknown=True)
    assert any("dropped (numbers 50)" in note for note in done.conversion.notes)
    assert _message(tmp_path / "w.txtpb") == msg


def test_a_text_field_nobody_declares_is_refused_by_a_copy(tmp_path):
    src = tmp_path / "k.textproto"
    src.write_text(xla_proto.to_text(every_field()) + "solver_knob: 3\n")
    with pytest.raises(ProblemFormatError, match="solver_knob: is not a field"):
        convert(src, tmp_path / "k.pb")
    done = convert(src, tmp_path / "k.pb", drop_unknown=True)
    assert any("'solver_knob'" in note for note in done.conversion.notes)
    assert _message(tmp_path / "k.pb") == every_field()


def test_a_copy_checks_the_request_and_refuses_a_cost_scale(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(to_message({**FULL, "communication_costs": [[0, math.nan]] + FULL["communication_costs"][1:]})
                    .SerializeToString())
    with pytest.raises(ProblemFormatError, match=r"communication_costs\[0\]\.costs\[1\]: nan"):
        convert(bad, tmp_path / "bad.txtpb")
    good = tmp_path / "good.pb"
    good.write_bytes(every_field().SerializeToString())
    with pytest.raises(ProblemError, match="copied field for field"):
        convert(good, tmp_path / "good.txtpb", cost_scale=2)


def test_between_a_request_and_json_the_conversion_says_what_it_folds(tmp_path):
    src = tmp_path / "h.textproto"
    src.write_text(xla_proto.to_text(to_message(HALVES)))
    done = convert(src, tmp_path / "h.json", cost_scale=2)
    assert not done.copied and done.target_format == "extended"  # the leader owns two intervals
    assert any("1 followers folded" in note for note in done.conversion.notes)
    rounded = convert(src, tmp_path / "r.json")
    assert any("costs rounded at scale 1" in note for note in rounded.conversion.notes)


def test_the_converted_request_solves_to_the_same_plan_and_cost(tmp_path):
    """The issue's example through ``portfolio.solve``: 6.5 (13 at scale 2) with a 4-entry plan,
    from the text request and from its binary conversion alike."""
    import portfolio

    src = tmp_path / "h.textproto"
    src.write_text(xla_proto.to_text(to_message(HALVES)))
    convert(src, tmp_path / "h.pb")
    first = portfolio.solve(src, time_limit=5, cost_scale=2)
    second = portfolio.solve(tmp_path / "h.pb", time_limit=5, cost_scale=2)
    assert first.plan == second.plan == [0, 0, 0, 1]
    assert first.cost == second.cost == 13 == 2 * brute_optimum(HALVES)


# ------------------------------------------------------------------------------------------ errors
BASE = {"num_nodes": 2, "s_len": [2, 1], "s_follow": [-1, -1],
        "computation_costs": [[1, 2], [3]], "communication_costs": [[0, 0], [0]],
        "memory_costs": [[1, 1], [1]], "edges": [[0, 1]], "resharding_costs": [[0, 1]],
        "node_intervals": [[0, 1], [1, 2]], "memory_budget": 5}


@pytest.mark.parametrize("change, where, words", [
    ({"num_nodes": 3}, "s_len", "num_nodes is 3"),
    ({"computation_costs": [[1, 2]]}, "computation_costs", "one per node"),
    ({"memory_costs": [[1], [1]]}, "memory_costs[0].costs", "expected 2"),
    ({"resharding_costs": [[0, 1, 2]]}, "resharding_costs[0].costs", "expected 2"),
    ({"computation_costs": [[1, -2], [3]]}, "computation_costs[0].costs[1]", "negative"),
    ({"communication_costs": [[0, 0], [math.nan]]}, "communication_costs[1].costs[0]", "not a number"),
    ({"resharding_costs": [[0, math.nan]]}, "resharding_costs[0].costs[1]", "not a number"),
    ({"memory_costs": [[1, -1], [1]]}, "memory_costs[0].costs[1]", "negative"),
    ({"s_follow": [-1, 7]}, "s_follow[1]", "out of range"),
    ({"s_follow": [1, -1]}, "s_follow[0]", "strategies"),
    ({"s_follow": [-1]}, "s_follow", "one per node"),
    ({"edges": [[0, 2]]}, "edges[0].second", "out of range"),
    ({"live": [[0], [5]]}, "live[1].nodes[0]", "neither a node"),
    ({"node_intervals": [[0, 1]]}, "node_intervals", "one per node"),
    ({"s_len": [2, 0], "computation_costs": [[1, 2], []], "communication_costs": [[0, 0], []],
      "memory_costs": [[1, 1], []], "resharding_costs": [[]]}, "s_len[1]", "at least 1"),
])
def test_malformed_requests_give_one_clear_error(tmp_path, change, where, words):
    path = _write(tmp_path, {**BASE, **change})
    with pytest.raises(ProblemFormatError) as info:
        read_request(path)
    assert info.value.where == where and words in info.value.detail
    assert str(path) in str(info.value)


def test_bytes_that_are_no_request_give_one_clear_error(tmp_path):
    path = tmp_path / "junk.pb"
    path.write_bytes(b"\xff\xff\xff\xff")
    with pytest.raises(ProblemFormatError, match="not a binary AutoShardingSolverRequest"):
        read_request(path)


def test_unknown_and_unused_fields_are_skipped_and_named(tmp_path):
    """A field of a newer XLA (number 50) is unknown here, ``solver_timeout`` (17) is declared but
    makes no part of the problem, a text name nobody declares is skipped: each is named in the
    notes and the problem is the same as without them. ``s_hint`` is read: the warm start."""
    plain = read_request(_write(tmp_path, BASE, "r.pb")).problem
    msg = to_message(BASE)
    msg.solver_timeout.solver_timeout_in_seconds = 3
    msg.s_hint.extend([1, 0])
    path = tmp_path / "r.pb"
    path.write_bytes(msg.SerializeToString() + bytes([0x90, 0x03, 0x05]))  # field 50 (varint) = 5
    conv = read_request(path)
    assert any("numbers 50" in note for note in conv.notes)
    assert any("not used by this problem: solver_timeout (" in note for note in conv.notes)
    assert conv.hint.tolist() == [1, 0] and not any("s_hint" in note for note in conv.notes)
    _same_problem(conv.problem, plain)
    text = tmp_path / "r.txtpb"
    from google.protobuf import text_format

    text.write_text(text_format.MessageToString(to_message(BASE)) + "solver_knob { seconds: 3 }\n")
    conv = read_request(text)
    assert any("'solver_knob'" in note for note in conv.notes)
    _same_problem(conv.problem, plain)


def test_brute_force_reference_sees_aliases(tmp_path):
    """The reference itself: an alias that forbids the cheap pair moves the optimum."""
    req = {**BASE, "aliases": [[0, 1]], "value_costs": [[1, 0]], "memory_budget": 0}
    assert brute_optimum(req) == 2 + 3 + 1
    p = read_request(_write(tmp_path, req)).problem
    assert min(evaluate(p, [s, 0]).cost for s in range(2) if not evaluate(p, [s, 0]).has_forbidden) == 6
