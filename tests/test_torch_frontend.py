"""The PyTorch front end's build (portfolio/frontends/torch): trace, DTensor's rules on the whole
mesh, costs in nanoseconds, memory over liveness, names, export; no solving here
(tests/test_torch_plan.py solves and verifies)."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from conftest import skip_or_fail

try:
    import torch
except ImportError:
    skip_or_fail("torch is not installed: pip install torch==2.13.0 (the CPU build)",
                 "the torch extra must be installed")

import torch_models  # noqa: E402
from portfolio.errors import ProblemError  # noqa: E402
from portfolio.frontends.torch import build, zoo  # noqa: E402
from portfolio.frontends.torch.devices import DEVICES, device  # noqa: E402
from portfolio.frontends.torch.memory import budget_bytes, parse_budget  # noqa: E402
from portfolio.frontends.torch.mesh import mesh_shape  # noqa: E402
from portfolio.frontends.torch.strategies import is_even, placeholder_placements  # noqa: E402
from torch.distributed.tensor.placement_types import Partial, Replicate, Shard  # noqa: E402


@pytest.fixture(scope="module")
def mlp_inference():
    return build(*zoo.mlp(d_model=16, hidden=64, layers=1, batch=8), mesh=(2, 4))


@pytest.fixture(scope="module")
def mlp_training():
    return build(*zoo.mlp(d_model=16, hidden=64, layers=1, batch=8), mesh=8, training=True,
                 optimizer="adam")


# ------------------------------------------------------------------------------------ arguments
@pytest.mark.parametrize("given, shape", [(8, (8,)), ("2x4", (2, 4)), ((4, 8), (4, 8)), (" 2 x 4 ", (2, 4))])
def test_mesh_shapes(given, shape):
    assert mesh_shape(given) == shape


@pytest.mark.parametrize("bad", ["2x", "two", 0, (2, 0), True, "1x2x3x4x5"])
def test_bad_meshes_are_one_line(bad):
    with pytest.raises(ProblemError, match="mesh") as err:
        mesh_shape(bad)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("text, parsed", [("12GiB", (12 * 2**30, None)), ("512MB", (512 * 10**6, None)),
                                          ("60%", (None, 0.6)), (2048, (2048, None)),
                                          ("1.5e3", (1500, None)), (None, (None, None))])
def test_memory_budgets(text, parsed):
    assert parse_budget(text) == parsed


@pytest.mark.parametrize("bad", ["12 parsecs", "-5GiB", "0%", "GiB", True])
def test_bad_memory_budgets_are_one_line(bad):
    with pytest.raises(ProblemError, match="memory"):
        parse_budget(bad)


def test_a_share_is_of_the_unsharded_peak():
    assert budget_bytes("50%", 1000) == 500 and budget_bytes("1KiB", 1000) == 1024


def test_device_profiles_name_their_figures():
    assert {"h100", "a100", "tpu-v5e", "cpu"} <= set(DEVICES)
    h100 = device("H100")
    assert h100.peak_flops("torch.bfloat16") == 989e12 and h100.memory_bandwidth == 3350e9
    assert [link.bandwidth for link in h100.links((4, 8))] == [50e9, 450e9]   # nodes of 8
    assert device("tpu").name == "tpu-v5e"
    with pytest.raises(ProblemError, match="device"):
        device("abacus")


# ------------------------------------------------------------------------------------ options
def test_placeholders_take_every_even_combination():
    combos = placeholder_placements((8, 6), (2, 4))
    assert (Replicate(), Replicate()) in combos and (Shard(0), Shard(0)) in combos
    assert (Replicate(), Shard(1)) not in combos          # 6 is not divisible by 4
    assert all(is_even((8, 6), c, (2, 4)) for c in combos)
    assert len(combos) == len(set(combos))
    assert placeholder_placements((3,), (8,)) == [(Replicate(),)]


def test_every_node_has_options_from_the_rules(mlp_inference):
    b = mlp_inference
    kinds = {o.kind for o in b.options}
    assert kinds <= {"placeholder", "rule", "getitem"} and not b.fallbacks.nodes
    addmm = b.options[b.names.index("layers.0.up:addmm")]
    outputs = {o for o in addmm.outputs}
    # column-parallel on axis 1 (output features split), data-parallel on axis 0 (batch split)
    assert (Shard(0), Shard(1)) in outputs
    # row-parallel gives partial sums
    assert any(isinstance(p, Partial) for o in outputs for p in o)
    for o, ins in zip(addmm.outputs, addmm.inputs):
        assert len(ins) == 3 and is_even((8, 64), o, (2, 4))
    assert len(set(zip(addmm.outputs, addmm.inputs))) == len(addmm.outputs)   # no duplicates


def test_an_op_without_a_rule_is_replicated_and_listed():
    b = build(*torch_models.bucketed(), mesh=8)
    assert b.fallbacks.count >= 1
    op, nodes = next(iter(b.fallbacks.nodes.items()))
    assert "searchsorted" in op and b.fallbacks.why[op] == "no sharding rule"
    i = b.index(nodes[0])
    assert b.options[i].kind == "fallback" and b.options[i].outputs == [(Replicate(),)]


def test_a_mesh_no_dimension_divides_gives_a_replicated_problem_and_a_note():
    b = build(*torch_models.odd(), mesh=(2, 4))
    assert all(len(o) == 1 for o in b.options)
    assert any("replicated" in note for note in b.notes)


def test_a_module_torch_cannot_trace_is_one_line():
    with pytest.raises(ProblemError, match="cannot trace Branchy") as err:
        build(*torch_models.branchy(), mesh=8)
    assert "\n" not in str(err.value) and "models" in str(err.value)   # names the source file


# ------------------------------------------------------------------------------------ names, memory
def test_nodes_are_named_by_module_path(mlp_training):
    b = mlp_training
    assert b.names[:4] == ["layers.0.up.weight", "layers.0.up.bias", "layers.0.down.weight",
                           "layers.0.down.bias"]
    assert "input:0" in b.names and "layers.0.up:addmm" in b.names
    backward = [n for n in b.names if ":backward:" in n]
    assert backward and {n.split(":")[0] for n in backward} >= {"layers.0.up", "layers.0.down"}
    assert len(set(b.names)) == len(b.names)


def test_parameters_hold_weights_gradients_and_adam_state_over_the_whole_run(mlp_training):
    b, p = mlp_training, mlp_training.problem
    i = b.names.index("layers.0.up.weight")
    assert (p.interval_start[i], p.interval_end[i]) == (0, p.num_nodes)
    for k, out in enumerate(b.options[i].outputs):
        shards = math.prod(8 if isinstance(x, Shard) else 1 for x in out)
        assert p.usages_of_interval(i)[k] == 4 * 64 * 16 * 4 // shards   # weight, grad, two moments
    grads = [b.index(g) for g in b.traced.grad_of]
    assert all(p.interval_end[g] == p.interval_start[g] + 1 for g in grads)


def test_a_tensor_lives_from_its_step_to_its_last_use(mlp_inference):
    b, p = mlp_inference, mlp_inference.problem
    for i, name in enumerate(b.nodes):
        node = next(n for n in b.traced.nodes if n.name == name)
        users = [b.index(u.name) for u in node.users if u.op != "output"]
        if name in b.traced.param_of or name in b.traced.outputs:
            assert p.interval_end[i] == p.num_nodes
        else:
            assert p.interval_end[i] == max(users, default=i) + 1 and p.interval_start[i] == i


def test_the_unsharded_peak_is_the_replicated_plans(mlp_inference):
    b = mlp_inference
    params = sum(4 * t.numel() for n, t in b.traced.values.items() if n in b.traced.param_of)
    assert b.unsharded_peak >= params + 4 * 8 * 64            # weights and the hidden activation
    assert all(all(isinstance(p, Replicate) for p in b.options[i].outputs[k])
               for i, k in enumerate(b.replicated))


# ------------------------------------------------------------------------------------ costs
def test_an_all_gather_costs_its_alpha_beta_time():
    b = build(*zoo.mlp(d_model=16, hidden=64, layers=1, batch=8), mesh=8)
    from torch.distributed.tensor._dtensor_spec import TensorMeta

    meta = TensorMeta(torch.Size([64, 16]), (16, 1), torch.float32)
    steps = b.redistributions.steps((Shard(0),), (Replicate(),), meta)
    assert [(s.kind, s.axis, s.bytes_in, s.bytes_out) for s in steps] == \
        [("all_gather", 0, 512, 4096)]
    link = device("h100").intra
    assert b.costs.steps_ns(steps) == math.ceil((7 * link.latency + 7 * 512 / link.bandwidth) * 1e9)
    assert b.redistributions.steps((Shard(0),), (Partial(),), meta) is None   # never from a shard
    assert b.redistributions.steps((Replicate(),), (Partial(),), meta)[0].kind == "local"
    cached = b.redistributions.planned
    b.redistributions.steps((Shard(0),), (Replicate(),), meta)
    assert b.redistributions.planned == cached                               # cached


def test_a_matmul_costs_its_roofline_on_the_local_shard(mlp_inference):
    b = mlp_inference
    i = b.names.index("layers.0.up:addmm")
    opts, costs = b.options[i], b.problem.costs_of(i)
    k = opts.outputs.index((Replicate(), Replicate()))
    flops, moved = 2 * 8 * 16 * 64, 4 * (64 + 8 * 16 + 16 * 64 + 8 * 64)
    h100 = device("h100")
    assert costs[k] == math.ceil(max(flops / h100.peak_flops("torch.float32"),
                                     moved / h100.memory_bandwidth) * 1e9)
    assert costs.min() <= costs[k]                  # sharded shards cost less
    assert b.problem.costs_of(b.names.index("layers.0.up:permute")).max() == 0   # a view moves nothing


def test_unreachable_moves_are_forbidden_and_the_replicated_plan_is_not(mlp_inference):
    from portfolio.evaluate import evaluate

    b = mlp_inference
    assert (b.problem.edge_costs == 10**18).any()
    assert not evaluate(b.problem, b.replicated).has_forbidden


# ------------------------------------------------------------------------------------ export
def test_the_export_is_contest_json_with_node_names(mlp_inference, tmp_path):
    from portfolio.api.inputs import read
    from portfolio.frontends.torch.solving import export_problem

    path = tmp_path / "mlp.json.gz"
    export_problem(mlp_inference, path)
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert set(doc) == {"problem", "node_names"} and doc["node_names"] == mlp_inference.names
    again = read(path)
    assert again.names == tuple(mlp_inference.names)
    assert np.array_equal(again.problem.edge_costs, mlp_inference.problem.edge_costs)
    assert again.naming.label(7) == f"7 ({mlp_inference.names[7]})"


def test_node_names_of_another_count_are_refused(mlp_inference, tmp_path):
    from portfolio.io import ProblemFormatError, write_problem
    from portfolio.api.inputs import read

    path = tmp_path / "bad.json"
    write_problem(mlp_inference.problem, path, names=mlp_inference.names)
    text = path.read_text().replace('"node_names":["', '"node_names":["extra","', 1)
    path.write_text(text)
    with pytest.raises(ProblemFormatError, match="node_names: has"):
        read(path)
