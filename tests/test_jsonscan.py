"""portfolio.jsonscan must agree exactly with json.loads or raise ScanFallback."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portfolio.jsonscan import ScanFallback, scan_problem

from conftest import BENCH, bench_path, shared

INT64_MAX = 2**63 - 1

SECTIONS = (  # (count key, flat key, path in the JSON document)
    ("interval_counts", "intervals", ("nodes", "intervals")),
    ("cost_counts", "costs", ("nodes", "costs")),
    ("usage_counts", "usages", ("nodes", "usages")),
    ("edge_node_counts", "edge_nodes", ("edges", "nodes")),
    ("edge_cost_counts", "edge_costs", ("edges", "costs")),
)


def expected_from_json(doc: dict) -> dict:
    """What scan_problem must return, derived from the json.loads result."""
    p = doc["problem"]
    out = {"name": p.get("name"), "usage_limit": p.get("usage_limit")}
    for ck, fk, (group, key) in SECTIONS:
        lists = p[group][key]
        out[ck] = np.array([len(x) for x in lists], np.int64)
        out[fk] = np.fromiter((v for x in lists for v in x), np.int64)
    return out


def assert_same(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    assert got["name"] == want["name"]
    assert got["usage_limit"] == want["usage_limit"]
    assert type(got["usage_limit"]) is type(want["usage_limit"])
    for ck, fk, _ in SECTIONS:
        for k in (ck, fk):
            assert got[k].dtype == np.int64, k
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def check_bytes(data: bytes) -> None:
    assert_same(scan_problem(data), expected_from_json(json.loads(data)))


# --------------------------------------------------------------- fixtures


def test_example_file() -> None:
    data = shared(BENCH / "example.json").read_bytes()
    check_bytes(data)
    # every accepted input type gives the same result
    check_bytes(data)
    assert_same(scan_problem(memoryview(data)), scan_problem(data))
    assert_same(scan_problem(np.frombuffer(data, np.uint8)), scan_problem(data))
    assert_same(scan_problem(bytearray(data)), scan_problem(data))


def _bench(letter: str) -> None:
    check_bytes(gzip.decompress(bench_path(letter).read_bytes()))


@pytest.mark.parametrize("letter", ["B", "G"])
def test_small_benchmarks(letter: str) -> None:
    _bench(letter)


@pytest.mark.slow
@pytest.mark.parametrize("letter", ["A", "K", "M", "N", "S"])
def test_big_benchmarks(letter: str) -> None:
    _bench(letter)


# --------------------------------------------------- random documents

ints = st.one_of(
    st.integers(0, 9),
    st.integers(0, 10**6),
    st.sampled_from([0, 10**18, INT64_MAX, INT64_MAX - 1, 10**18 - 1, 2**53 + 1]),
    st.integers(0, INT64_MAX),
)
int_lists = st.lists(st.lists(ints, max_size=5), max_size=6)
names = st.one_of(
    st.text(max_size=20),
    st.sampled_from(['a[b]{c},d:"e"', '"', "\\", "]}", "é☃\U0001f600", "x\n\t\x00"]),
)


@st.composite
def problems(draw: st.DrawFn) -> dict:
    nodes = {
        "intervals": draw(int_lists),
        "costs": draw(int_lists),
        "usages": draw(int_lists),
    }
    edges = {"nodes": draw(int_lists), "costs": draw(int_lists)}
    prob: dict = {"nodes": nodes, "edges": edges}
    if draw(st.booleans()):
        prob["name"] = draw(names)
    if draw(st.booleans()):
        prob["usage_limit"] = draw(ints)
    return {"problem": _shuffled(draw, prob)}


def _shuffled(draw: st.DrawFn, d: dict) -> dict:
    """Random key order at every object level."""
    keys = draw(st.permutations(list(d)))
    return {k: _shuffled(draw, d[k]) if isinstance(d[k], dict) else d[k] for k in keys}


def dump_random_ws(obj: object, rnd: random.Random, ensure_ascii: bool) -> str:
    """JSON with arbitrary whitespace between all tokens."""

    def ws() -> str:
        return "".join(rnd.choice(" \t\n\r") for _ in range(rnd.choice([0, 0, 1, 3])))

    if isinstance(obj, dict):
        inner = ",".join(
            f"{ws()}{json.dumps(k, ensure_ascii=ensure_ascii)}{ws()}:{ws()}"
            f"{dump_random_ws(v, rnd, ensure_ascii)}{ws()}"
            for k, v in obj.items()
        )
        return "{" + (inner or ws()) + "}"
    if isinstance(obj, list):
        inner = ",".join(f"{ws()}{dump_random_ws(v, rnd, ensure_ascii)}{ws()}" for v in obj)
        return "[" + (inner or ws()) + "]"
    return json.dumps(obj, ensure_ascii=ensure_ascii)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    doc = draw(problems())
    style = draw(st.sampled_from(["compact", "default", "indent2", "indent0", "tabs", "random"]))
    ensure_ascii = draw(st.booleans())
    if style == "random":
        text = dump_random_ws(doc, random.Random(draw(st.integers(0, 2**32))), ensure_ascii)
    else:
        kw = {
            "compact": dict(separators=(",", ":")),
            "default": {},
            "indent2": dict(indent=2),
            "indent0": dict(indent=0, separators=(",", " : ")),
            "tabs": dict(indent="\t"),
        }[style]
        text = json.dumps(doc, ensure_ascii=ensure_ascii, **kw)
    text = draw(st.sampled_from(["", " ", "\n", "\r\n\t "])) + text
    return (text + draw(st.sampled_from(["", "\n", "  \n"]))).encode()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_random_documents(data: bytes) -> None:
    check_bytes(data)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_mutations_never_return_wrong_data(data: bytes, draw: st.DataObject) -> None:
    """Random byte edits: the scanner must raise or agree with json.loads."""
    b = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 3))):
        pos = draw.draw(st.integers(0, len(b)))
        op = draw.draw(st.sampled_from(["del", "ins", "set"]))
        byte = draw.draw(st.sampled_from(b'0123456789[]{},:"\\ -.eE+x'))
        if op == "del" and pos < len(b):
            del b[pos]
        elif op == "ins":
            b.insert(pos, byte)
        elif pos < len(b):
            b[pos] = byte
    data = bytes(b)
    try:
        got = scan_problem(data)
    except ScanFallback:
        return
    assert_same(got, expected_from_json(json.loads(data)))


# ---------------------------------------------------- specific shapes

VALID = {
    "problem": {
        "name": "t",
        "nodes": {"intervals": [[0, 1], [2, 3]], "costs": [[1], []], "usages": [[5], []]},
        "edges": {"nodes": [[0, 1]], "costs": [[7]]},
        "usage_limit": 9,
    }
}


def _doc(**changes: object) -> bytes:
    doc = json.loads(json.dumps(VALID))
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = doc["problem"]
        for p in parents:
            target = target[p]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return json.dumps(doc).encode()


def test_empty_lists_and_optional_keys() -> None:
    check_bytes(_doc(nodes__costs=[[], [], []], name=KeyError, usage_limit=KeyError))
    check_bytes(_doc(nodes__intervals=[], edges__nodes=[], edges__costs=[[]]))
    got = scan_problem(_doc(name=KeyError, usage_limit=KeyError))
    assert got["name"] is None and got["usage_limit"] is None
    check_bytes(_doc(edges__nodes=[[0, 1, 2], [3]]))  # ragged edge node lists


def test_big_values_exact() -> None:
    data = _doc(nodes__costs=[[10**18, INT64_MAX, 0]], usage_limit=INT64_MAX)
    got = scan_problem(data)
    assert got["costs"].tolist() == [10**18, INT64_MAX, 0]
    assert got["usage_limit"] == INT64_MAX


def test_name_with_specials() -> None:
    for name in ['a"b', "[{]}:,", "\\", "é\u2603", "\ud83d\ude00", "\\u0041"]:
        check_bytes(_doc(name=name))
        check_bytes(json.dumps(json.loads(_doc(name=name)), ensure_ascii=False).encode())


BAD_DOCS = {
    "truncated": json.dumps(VALID).encode()[:-3],
    "truncated_in_name": b'{"problem": {"name": "abc',
    "empty": b"",
    "whitespace_only": b"  \n",
    "negative": _doc(nodes__costs=[[-1], []]),
    "negative_limit": _doc(usage_limit=-1),
    "float": _doc(nodes__costs=[[1.5], []]),
    "float_int_like": json.dumps(VALID).replace("[7]", "[7.0]").encode(),
    "exponent": json.dumps(VALID).replace("[7]", "[7e2]").encode(),
    "exponent_upper": json.dumps(VALID).replace("[7]", "[7E2]").encode(),
    "plus": json.dumps(VALID).replace("[7]", "[+7]").encode(),
    "leading_zero": json.dumps(VALID).replace("[7]", "[07]").encode(),
    "int64_max_plus_1": _doc(nodes__costs=[[INT64_MAX + 1], []]),
    "twenty_digits": _doc(nodes__costs=[[10**19], []]),
    "limit_overflow": _doc(usage_limit=INT64_MAX + 1),
    "huge": _doc(edges__costs=[[10**40]]),
    "null_value": _doc(edges__costs=[[None]]),
    "true_value": _doc(edges__costs=[[True]]),
    "null_limit": _doc(usage_limit=None),
    "string_value": _doc(edges__costs=[["7"]]),
    "nested_too_deep": _doc(edges__costs=[[[7]]]),
    "flat_list": _doc(edges__costs=[7]),
    "object_in_list": _doc(edges__costs=[{}]),
    "name_not_string": _doc(name=3),
    "unknown_key_problem": _doc(extra=1),
    "unknown_key_nodes": _doc(nodes__extra=[]),
    "unknown_key_edges": _doc(edges__intervals=[]),
    "unknown_key_top": json.dumps({**VALID, "x": 1}).encode(),
    "missing_problem": json.dumps({"x": VALID["problem"]}).encode(),
    "empty_object": b"{}",
    "missing_nodes": _doc(nodes=KeyError),
    "missing_costs": _doc(nodes__costs=KeyError),
    "missing_edge_nodes": _doc(edges__nodes=KeyError),
    "duplicate_key": json.dumps(VALID)
    .replace('"usage_limit"', '"name": "x", "usage_limit"')
    .encode(),
    "duplicate_top": b'{"problem": 1, ' + json.dumps(VALID).encode()[1:],
    "trailing_garbage": json.dumps(VALID).encode() + b" x",
    "two_documents": json.dumps(VALID).encode() * 2,
    "top_level_list": json.dumps([VALID]).encode(),
    "top_level_number": b"1",
    "trailing_comma_inner": json.dumps(VALID).replace("[7]", "[7,]").encode(),
    "trailing_comma_outer": json.dumps(VALID).replace("[[7]]", "[[7],]").encode(),
    "missing_comma": json.dumps(VALID).replace("[0, 1]]", "[0 1]]").encode(),
    "leading_comma": json.dumps(VALID).replace("[7]", "[,7]").encode(),
    "single_quotes": json.dumps(VALID).replace('"t"', "'t'").encode(),
    "bad_escape_in_name": json.dumps(VALID).replace('"t"', '"\\q"').encode(),
    "control_char_in_name": json.dumps(VALID).replace('"t"', '"\x01"').encode(),
    "invalid_utf8_in_name": json.dumps(VALID).encode().replace(b'"t"', b'"\xff"'),
    "escaped_key": json.dumps(VALID).replace('"usages"', '"usage\\u0073"').encode(),
    "nan": json.dumps(VALID).replace("[7]", "[NaN]").encode(),
    "bom": b"\xef\xbb\xbf" + json.dumps(VALID).encode(),
}


@pytest.mark.parametrize("case", sorted(BAD_DOCS))
def test_malformed_raises(case: str) -> None:
    with pytest.raises(ScanFallback) as info:
        scan_problem(BAD_DOCS[case])
    assert isinstance(info.value.reason, str) and info.value.reason


def test_valid_baseline() -> None:
    check_bytes(json.dumps(VALID).encode())
    check_bytes(json.dumps(VALID, indent=2).encode())
