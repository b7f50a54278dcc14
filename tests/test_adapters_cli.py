"""``portfolio convert`` between every format, and XLA requests straight into ``info``, ``solve``
and ``evaluate``: plans in the request's node order, bad input one line and exit code 2."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from conftest import bundled_example_path
from xla_reference import HALVES, to_message

from portfolio.adapters import xla_proto
from portfolio.adapters.xla import parse_request
from portfolio.cli import cli
from portfolio.io import load_problem, problem_to_dict, read_bytes
from portfolio.testing import PortfolioCli


def _cli(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "1000"})


FOLLOWERS = {"num_nodes": 3, "s_len": [2, 2, 2], "s_follow": [-1, 0, -1], "request_name": "fol",
             "computation_costs": [[5, 1], [0, 3], [1, 1]], "communication_costs": [[0, 0]] * 3,
             "memory_costs": [[1, 1], [1, 1], [1, 1]], "edges": [[1, 2]],
             "resharding_costs": [[0, 4, 4, 0]], "live": [[0, 1], [2]], "memory_budget": 0}
"""Node 1 follows node 0; the optimum is [1, 1, 1] at 1 + 3 + 1 = 5 ([0, 0, 0] costs 6, [1, 1, 0] 9)."""


@pytest.mark.parametrize("middle", ["r.pb", "r.binpb.gz", "r.textproto", "r.txtpb", "r.ext.json"])
def test_convert_round_trip_is_identical(tmp_path, middle):
    src = bundled_example_path()
    to = ["--to", "extended"] if middle.endswith("ext.json") else []
    first = _cli("convert", src, tmp_path / middle, *to)
    assert first.exit_code == 0, first.output
    second = _cli("convert", tmp_path / middle, tmp_path / "back.json")
    assert second.exit_code == 0, second.output
    assert problem_to_dict(load_problem(tmp_path / "back.json")) == problem_to_dict(load_problem(src))


def test_convert_by_explicit_formats_and_refusals(tmp_path):
    src = bundled_example_path()
    assert _cli("convert", src, tmp_path / "r.bin", "--to", "xla").exit_code == 0
    assert _cli("convert", tmp_path / "r.bin", tmp_path / "r.txt", "--from", "xla", "--to", "xla-text").exit_code == 0
    assert "memory_budget" in (tmp_path / "r.txt").read_text()
    again = _cli("convert", src, tmp_path / "r.bin", "--to", "xla")
    assert again.exit_code == 2 and "already exists" in again.output
    scale = _cli("convert", src, tmp_path / "x.json", "--cost-scale", "2")
    assert scale.exit_code == 2 and "formats with fractional costs (xla, xla-text)" in scale.output


def test_convert_keeps_fractional_costs_with_a_scale(tmp_path):
    req = {**FOLLOWERS, "computation_costs": [[0.25, 0.5], [0, 0], [0, 0]]}
    (tmp_path / "f.pb").write_bytes(to_message(req).SerializeToString())
    done = _cli("convert", tmp_path / "f.pb", tmp_path / "f.json", "--cost-scale", "4")
    assert done.exit_code == 0, done.output
    doc = json.loads((tmp_path / "f.json").read_text())
    assert doc["problem"]["nodes"]["costs"][0] == [1, 2]
    assert "followers folded" in done.output


def _solved(path, *args):
    proc = PortfolioCli(cwd=path.parent).run("solve", path, "-t", "10", "--json", "-q", *args)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    return doc["solution"], doc["request"]["cost"]


def test_a_converted_request_solves_as_the_original(tmp_path):
    """The issue's example: a 4-node request with a follower and costs in halves solves to 6.5
    with a 4-entry plan, and its conversion to binary (and back to text) to the same."""
    src = tmp_path / "h.textproto"
    src.write_text(xla_proto.to_text(to_message(HALVES)))
    first = _cli("convert", src, tmp_path / "h.pb")
    assert first.exit_code == 0 and "the same request, field for field (4 nodes)" in first.output
    second = _cli("convert", tmp_path / "h.pb", tmp_path / "back.txtpb")
    assert second.exit_code == 0, second.output
    assert (tmp_path / "back.txtpb").read_bytes() == src.read_bytes()
    assert _solved(src, "--cost-scale", "2") == _solved(tmp_path / "h.pb", "--cost-scale", "2") \
        == ([0, 0, 0, 1], 6.5)


@pytest.mark.parametrize("src, dst", [("a.pb", "b.textproto"), ("a.textproto", "b.binpb.gz"),
                                      ("a.txtpb", "b.pbtxt"), ("a.pb.gz", "b.pb")])
def test_convert_xla_to_xla_on_the_command_line(tmp_path, src, dst):
    msg = to_message({**HALVES, "aliases": [[0, 3]], "value_costs": [[0, 1, 0, 0]], "s_hint": [1, 0, 0, 1]})
    msg.solver_timeout.solver_timeout_in_seconds = 30
    from portfolio.adapters.xla import save_message

    save_message(msg, tmp_path / src)
    done = _cli("convert", tmp_path / src, tmp_path / dst)
    assert done.exit_code == 0, done.output
    assert "note:" not in done.output  # nothing folded, rounded or dropped
    assert parse_request(read_bytes(tmp_path / dst), tmp_path / dst)[0] == msg


def test_convert_refuses_what_text_cannot_hold_unless_told(tmp_path):
    src = tmp_path / "u.pb"
    src.write_bytes(to_message(HALVES).SerializeToString() + bytes([0x90, 0x03, 0x05]))
    refused = _cli("convert", src, tmp_path / "u.txtpb")
    assert refused.exit_code == 2 and not (tmp_path / "u.txtpb").exists()
    assert refused.output.startswith(f"error: {tmp_path / 'u.txtpb'}: cannot write as xla-text: ")
    assert "numbers 50" in refused.output and "--drop-unknown" in refused.output
    dropped = _cli("convert", src, tmp_path / "u.txtpb", "--drop-unknown")
    assert dropped.exit_code == 0 and "dropped (numbers 50)" in dropped.output
    scale = _cli("convert", src, tmp_path / "s.pb", "--cost-scale", "2")
    assert scale.exit_code == 2 and "copied field for field" in scale.output


def test_solve_prints_the_plan_in_the_request_node_order(tmp_path, portfolio_cli):
    path = tmp_path / "fol.txtpb"
    from google.protobuf import text_format

    path.write_text(text_format.MessageToString(to_message(FOLLOWERS)))
    proc = portfolio_cli.run("solve", path, "-t", "10", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["solution"] == [1, 1, 1] and doc["request"]["cost"] == 5 and doc["request"]["nodes"] == 3
    (tmp_path / "plan.txt").write_text("[0, 0, 0]\n")
    ev = _cli("evaluate", path, tmp_path / "plan.txt", "--json")
    assert ev.exit_code == 0 and json.loads(ev.stdout[ev.stdout.index("{"):])["cost"] == 6
    (tmp_path / "bad.txt").write_text("[1, 0, 1]\n")
    ev = _cli("evaluate", path, tmp_path / "bad.txt")
    assert ev.exit_code == 2 and "follows" in ev.output


def test_info_reads_a_request(tmp_path):
    (tmp_path / "fol.pb").write_bytes(to_message(FOLLOWERS).SerializeToString())
    res = _cli("info", tmp_path / "fol.pb", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["nodes"] == 2 and summary["intervals"] == 3 and summary["name"] == "fol"


@pytest.mark.parametrize("command", [["info"], ["solve", "-t", "5", "-q"], ["convert"]])
def test_a_malformed_request_is_one_line_and_exit_2(tmp_path, command, portfolio_cli):
    bad = {**FOLLOWERS, "communication_costs": [[0, 0], [0, math.nan], [0, 0]]}
    path = tmp_path / "bad.pb"
    path.write_bytes(to_message(bad).SerializeToString())
    args = [*command, path] + ([tmp_path / "out.json"] if command == ["convert"] else [])
    proc = portfolio_cli.run(*args)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1:] == [f"error: {path}: communication_costs[1].costs[1]: nan is not a number"]
    assert [line for line in lines if "error" in line] == lines[-1:], proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_problem_a_request_cannot_hold_is_refused(tmp_path):
    doc = json.loads(bundled_example_path().read_text())
    doc["problem"]["edges"]["nodes"][0] = [0, 1, 2]
    doc["problem"]["edges"]["costs"][0] = [0] * (1 * 2 * 3)
    (tmp_path / "hyper.json").write_text(json.dumps(doc))
    res = _cli("convert", tmp_path / "hyper.json", tmp_path / "h.pb")
    assert res.exit_code == 2 and "cannot write as xla" in res.output and "pairs only" in res.output
