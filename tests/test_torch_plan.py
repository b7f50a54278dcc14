"""The PyTorch front end's plans: solved through portfolio.solve, read back (placements, modules in
words, collectives, peak, JSON), verified on every rank, and refused when they are wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import skip_or_fail

try:
    import torch  # noqa: F401
except ImportError:
    skip_or_fail("torch is not installed: pip install torch==2.13.0 (the CPU build)",
                 "the torch extra must be installed")

import torch_models  # noqa: E402
from portfolio.errors import ProblemError  # noqa: E402
from portfolio.frontends.torch import ShardPlan, plan, zoo  # noqa: E402
from portfolio.frontends.torch.verify import verify_plan  # noqa: E402
from torch.distributed.tensor.placement_types import Partial, Replicate, Shard  # noqa: E402

SOLVE = {"time_limit": 10.0}
"""Tiny problems: an exact backend proves them in well under a second on a quiet machine; the
limit is for a loaded one (and an early stop ends the run at the proof)."""


@pytest.fixture(scope="module")
def gpt2_training():
    """The zoo's GPT-2 at its test size with one layer, training on 2x4 with half the unsharded
    peak, verified."""
    module, inputs = zoo.gpt2(layers=1)
    return plan(module, inputs, mesh=(2, 4), memory="50%", training=True, verify=True, **SOLVE), \
        (module, inputs)


def test_a_training_plan_fits_and_is_verified_on_every_rank(gpt2_training):
    p, _ = gpt2_training
    assert p.feasible and p.peak <= p.budget == p.built.unsharded_peak // 2
    check = p.check
    assert check.ok, check.text()
    assert check.measured_peaks == [p.peak] * 8          # every rank, exactly the problem's peak
    assert check.executed == check.planned and sum(check.planned.values()) > 0
    assert set(check.gradients) == set(p.built.traced.param_of.values())
    assert max(check.gradients.values()) < 1e-3 and check.outputs
    assert "verified on every rank" in check.text()


def test_the_plan_reads_as_placements_modules_and_collectives(gpt2_training):
    p, _ = gpt2_training
    placements = p.placements
    assert set(placements) == set(p.built.traced.param_of.values())
    assert all(len(v) == 2 and all(isinstance(x, (Shard, Replicate)) for x in v)
               for v in placements.values())
    assert set(p.modules) >= {"layers.0.mlp.up", "layers.0.attn.q", "tok"}
    words = ("column-parallel", "row-parallel", "data-parallel", "replicated", "FSDP",
             "vocabulary-parallel", "sharded")
    assert all(any(w in line for w in words) and " ax" in line for line in p.modules.values())
    assert p.cost == p.compute_ns + p.communication_ns and p.communication_ns >= 0
    assert sum(c.ns for c in p.collectives) <= p.communication_ns
    table = p.table()
    for heading in ("parameters", "modules", "collectives", "predicted", "verified"):
        assert heading in table


def test_the_json_document_has_all_of_it(gpt2_training):
    p, _ = gpt2_training
    doc = json.loads(json.dumps(p.to_dict()))
    assert doc["feasible"] and doc["mesh"] == [2, 4] and doc["training"] and doc["optimizer"] == "adam"
    assert doc["peak_bytes"] == p.peak and doc["cost_ns"] == p.cost and doc["check"]["ok"]
    weight = doc["parameters"]["layers.0.mlp.up.weight"]
    assert len(weight["placements"]) == 2 and weight["shape"] == list(p.shape_of(
        p.built.nodes[p.built.names.index("layers.0.mlp.up.weight")]))
    assert len(doc["nodes"]) == doc["problem"]["nodes"] == len(doc["plan"])
    assert {c["kind"] for c in doc["collectives"]} <= {"all_gather", "all_reduce", "reduce_scatter",
                                                       "all_to_all"}
    assert set(doc["build_seconds"]) >= {"trace", "sharding rules", "edge costs"}


def test_a_plan_that_lies_about_a_placement_fails_verification(gpt2_training):
    p, (module, inputs) = gpt2_training
    b = p.built
    i = next(i for i, n in enumerate(b.names) if n.endswith(":addmm") or ":addmm_" in n)
    opts = b.options[i]
    k = int(p.plan[i])
    told = opts.outputs[k]
    other = tuple(Replicate() if not isinstance(x, Replicate) else Shard(0) for x in told)
    opts.outputs[k] = other
    try:
        report = verify_plan(p, module, inputs)
    finally:
        opts.outputs[k] = told
    assert not report.ok
    assert any(b.names[i] in d and "the plan says" in d for d in report.differences)
    assert "verification FAILED" in report.text()


def test_a_wrong_peak_fails_verification(gpt2_training):
    p, (module, inputs) = gpt2_training
    lying = ShardPlan(p.built, p.plan, p.result, p.budget)
    lying.built = p.built
    original = type(p).peak
    try:
        type(p).peak = property(lambda self: original.fget(self) + 4)
        report = verify_plan(lying, module, inputs)
    finally:
        type(p).peak = original
    assert any("peak of rank 0" in d and "predicted" in d for d in report.differences)


def test_a_plan_that_cannot_run_is_a_difference_not_a_traceback(gpt2_training):
    p, (module, inputs) = gpt2_training
    node = next(n for n in p.built.traced.nodes if n.name.startswith("addmm"))
    real = node.target

    def refuses(*args, **kwargs):
        raise RuntimeError("view size is not compatible with input tensor's size and stride")
    node.target = refuses
    try:
        report = verify_plan(p, module, inputs)
    finally:
        node.target = real
    assert not report.ok and len(report.differences) == 1
    assert "could not run (RuntimeError: view size" in report.differences[0]
    assert p.built.names[p.built.index(node.name)] in report.differences[0]


def test_a_vocabulary_parallel_embedding_verifies():
    """The embedding's table split by vocabulary: its indices masked per rank (DTensor's
    ``_MaskPartial``, made by DTensor's own dispatch), its output partial sums reduced where used."""
    from portfolio.evaluate import evaluate
    from portfolio.frontends.torch import build

    module, inputs = zoo.gpt2(layers=1)
    b = build(module, inputs, mesh=8)
    chosen = b.replicated.copy()
    weight, lookup = b.names.index("tok.weight"), b.names.index("tok:embedding")
    chosen[weight] = b.options[weight].outputs.index((Shard(0),))
    chosen[lookup] = next(k for k, (out, ins) in enumerate(zip(b.options[lookup].outputs,
                                                              b.options[lookup].inputs))
                          if type(out[0]).__name__ == "_MaskPartial" and ins[0] == (Shard(0),))
    cost = evaluate(b.problem, chosen)
    assert not cost.has_forbidden
    result = type("Result", (), {"cost": int(cost.cost)})()
    report = verify_plan(ShardPlan(b, chosen, result, None), module, inputs)
    assert report.ok, report.text()
    # the lookup's partial sums reduced once, the tied head's table gathered once
    assert report.planned == report.executed == {"all_reduce": 1, "all_gather": 1}


def test_a_warm_start_from_an_earlier_plan_maps_every_node(gpt2_training):
    p, (module, inputs) = gpt2_training
    again = plan(module, inputs, mesh=(2, 4), memory="50%", training=True,
                 warm_start=p.to_dict(), time_limit=3.0)
    n = p.built.problem.num_nodes
    assert f"{n:,} of {n:,} nodes kept" in again.notes[0]
    assert again.result.warm_start["status"] == "as given" and again.cost <= p.cost


def test_a_budget_no_plan_fits_names_the_least_peak_in_module_paths():
    module, inputs = zoo.mlp(d_model=16, hidden=64, layers=1, batch=8)
    p = plan(module, inputs, mesh=8, memory="1KiB", **SOLVE)
    assert not p.feasible and p.plan is None and p.check is None
    memory = p.result.memory
    assert memory["verdict"] == "proven infeasible" and memory["bound"]["value"] > 1024
    assert "layers.0." in memory["text"] and "every plan uses at least" in memory["text"]
    assert "no plan fits" in p.summary()


def test_an_op_without_a_rule_still_verifies():
    module, inputs = torch_models.bucketed()
    p = plan(module, inputs, mesh=(2, 4), memory="70%", verify=True, **SOLVE)
    assert p.check.ok, p.check.text()
    assert "searchsorted" in p.table()


@pytest.mark.parametrize("bad, match", [({"mesh": "2x"}, "mesh"), ({"device": "abacus"}, "device"),
                                        ({"optimizer": "lion", "training": True}, "optimizer"),
                                        ({"memory": "lots"}, "memory")])
def test_bad_arguments_are_one_line(bad, match):
    module, inputs = zoo.mlp(d_model=16, hidden=64, layers=1, batch=8)
    with pytest.raises(ProblemError, match=match):
        plan(module, inputs, **bad, **SOLVE)


def test_the_textbook_mlp_plan_under_memory_pressure():
    """Megatron's plan on a 2x4 mesh: the up projection column-parallel and the down projection
    row-parallel on one axis, data-parallel on the other; found by the solver, not imposed, when
    half of each weight must go (docs/benchmarks/frontends.md has the sizes where it is not)."""
    module, inputs = zoo.mlp(d_model=1024, hidden=4096, layers=1, batch=4096)
    p = plan(module, inputs, mesh=(2, 4), memory="25%", time_limit=60.0)
    up, down = p.placements["layers.0.up.weight"], p.placements["layers.0.down.weight"]
    tp = next(a for a in range(2) if isinstance(up[a], Shard))
    dp = 1 - tp
    assert up[tp] == Shard(0) and down[tp] == Shard(1)
    assert up[dp] == down[dp] == Replicate()
    assert p.modules["layers.0.up"].startswith(f"column-parallel on axis {tp}")
    assert f"row-parallel on axis {tp}" in p.modules["layers.0.down"]
    assert f"data-parallel on axis {dp}" in p.modules["layers.0.up"]
    addmm = p.built.index(next(n for n, name in zip(p.built.nodes, p.built.names)
                               if name == "layers.0.down:addmm_1"))
    out = p.built.options[addmm].outputs[p.plan[addmm]]
    assert isinstance(out[tp], Partial) and out[dp] == Shard(0)
    assert [c.kind for c in p.collectives] == ["all_reduce"]     # the one all-reduce, handing it back
    assert np.isclose(p.peak, p.problem.usage_limit, rtol=0.2) or p.peak <= p.problem.usage_limit
