"""The model zoo of the PyTorch front end (portfolio/frontends/torch/zoo): each model builds, runs,
is the same for the same seed, exports to the aten ops its docstring names (each with a DTensor
rule), has the module paths the front end reports, trains, and reaches its real size on paper."""

from __future__ import annotations

import operator

import pytest

from conftest import skip_or_fail

try:
    import torch
except ImportError:
    skip_or_fail("torch is not installed: pip install torch==2.13.0 (the CPU build)",
                 "the torch extra must be installed")

from portfolio.frontends.torch import zoo  # noqa: E402
from portfolio.frontends.torch.zoo.common import rotary_tables, rotate  # noqa: E402

NAMES = sorted(zoo.ZOO)


@pytest.fixture(scope="module")
def built() -> dict:
    return {name: zoo.ZOO[name].factory() for name in NAMES}


@pytest.fixture(scope="module")
def exported(built) -> dict:
    return {name: torch.export.export(module, inputs).run_decompositions()
            for name, (module, inputs) in built.items()}


def _op_name(target) -> str:
    return "getitem" if target is operator.getitem else str(target)


def _leaf_paths(program) -> set[str]:
    """The innermost module path of every call in an exported graph."""
    paths = set()
    for node in program.graph.nodes:
        stack = node.meta.get("nn_module_stack")
        if node.op == "call_function" and stack:
            paths.add(list(stack.values())[-1][0])
    return paths


def test_zoo_names_and_descriptions():
    assert NAMES == ["gpt2", "llama", "mlp", "moe"]
    lines = zoo.describe().splitlines()
    assert [line.split(":")[0] for line in lines] == list(zoo.ZOO)
    assert "124,439,808 at real size" in lines[list(zoo.ZOO).index("gpt2")]


@pytest.mark.parametrize("name", NAMES)
def test_builds_and_runs(built, name):
    module, inputs = built[name]
    assert isinstance(inputs, tuple) and all(isinstance(x, torch.Tensor) for x in inputs)
    assert not module.training
    with torch.no_grad():
        out = module(*inputs)
    expected = {"mlp": inputs[0].shape, "moe": inputs[0].shape,
                "gpt2": (*inputs[0].shape, 512), "llama": (*inputs[0].shape, 512)}[name]
    assert out.shape == expected and out.dtype == torch.float32
    assert torch.isfinite(out).all() and out.abs().max() > 0


@pytest.mark.parametrize("name", NAMES)
def test_the_same_seed_gives_the_same_model(name):
    before = torch.random.get_rng_state()
    (a, xa), (b, xb) = zoo.ZOO[name].factory(seed=3), zoo.ZOO[name].factory(seed=3)
    assert torch.equal(torch.random.get_rng_state(), before), "the caller's random state moved"
    (c, xc) = zoo.ZOO[name].factory(seed=4)
    for key, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[key]), key
    assert all(torch.equal(x, y) for x, y in zip(xa, xb))
    assert any(not torch.equal(v, c.state_dict()[k]) for k, v in a.state_dict().items())
    assert not all(torch.equal(x, y) for x, y in zip(xa, xc))


@pytest.mark.parametrize("name", NAMES)
def test_exports_to_the_documented_ops(exported, name):
    ops = {_op_name(n.target) for n in exported[name].graph.nodes if n.op == "call_function"}
    assert ops == zoo.ZOO[name].inference_ops
    for op in ops - {"getitem"}:
        assert f"``{op.removeprefix('aten.').removesuffix('.default')}``" in zoo.__doc__, op


def test_every_op_has_a_dtensor_rule(exported):
    """The point of the zoo's op choices: the front end finds a sharding rule for each op."""
    from torch.distributed.tensor import DTensor

    propagator = DTensor._op_dispatcher.sharding_propagator
    ruled = {str(op) for table in ("op_strategy_funcs", "op_single_dim_strategy_funcs", "op_to_rules")
             for op in getattr(propagator, table, {})}
    if not ruled:
        skip_or_fail(f"torch {torch.__version__}: DTensor's rule tables moved", "torch 2.13")
    used = set().union(*(entry.inference_ops for entry in zoo.ZOO.values()))
    assert sorted(used - ruled - {"getitem"}) == []


def test_module_paths(exported, built):
    paths = _leaf_paths(exported["gpt2"])
    expected = {"tok", "pos", "norm", "head"} | {
        f"layers.{i}.{part}" for i in range(2) for part in
        ("attn_norm", "attn.q", "attn.k", "attn.v", "attn.out", "mlp_norm", "mlp.up", "mlp.down")}
    assert expected <= paths
    llama_paths = _leaf_paths(exported["llama"])
    assert {"layers.1.mlp.gate", "layers.1.mlp.up", "layers.1.attn.k", "norm", "head"} <= llama_paths
    assert "pos" not in llama_paths
    assert {"layers.0.up", "layers.1.down"} <= _leaf_paths(exported["mlp"])
    assert {"router", "experts.up", "experts.down"} <= _leaf_paths(exported["moe"])
    gpt2 = built["gpt2"][0]
    assert gpt2.head.weight is gpt2.tok.weight
    assert "layers.1.attn.q.weight" in dict(gpt2.named_parameters())


@pytest.mark.parametrize("name", NAMES)
def test_training_loss_reaches_every_parameter(name):
    module, inputs = zoo.ZOO[name].factory(seed=1)
    value = zoo.loss(module(*inputs))
    assert value.dim() == 0
    value.backward()
    for path, param in module.named_parameters():
        assert param.grad is not None and param.grad.abs().max() > 0, path


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_attention_is_causal(built, name):
    """A later token never changes an earlier position's logits; an earlier one does change later
    ones (the mask is applied, and not everything is masked)."""
    module, (tokens,) = built[name]
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 512
    earlier = tokens.clone()
    earlier[:, 0] = (earlier[:, 0] + 1) % 512
    with torch.no_grad():
        base, late, early = module(tokens), module(changed), module(earlier)
    assert torch.equal(base[:, :-1], late[:, :-1]) and not torch.equal(base[:, -1], late[:, -1])
    assert not torch.allclose(base[:, -1], early[:, -1])


def test_rotary_rotates():
    """Rotary keeps each pair's length, and position 0 is left as it is."""
    cos, sin = rotary_tables(seq=5, head_dim=8, theta=10000.0)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    y = rotate(x, cos, sin)
    pair_norm = lambda t: t[..., :4] ** 2 + t[..., 4:] ** 2  # noqa: E731
    assert torch.allclose(pair_norm(x), pair_norm(y), atol=1e-5)
    assert torch.equal(y[:, 0], x[:, 0]) and not torch.allclose(y[:, 1], x[:, 1])


def test_moe_gates_keep_top_k(built):
    module, (x,) = built["moe"]
    with torch.no_grad():
        gates = module.gates(x.reshape(-1, x.shape[-1]))
    assert gates.shape == (x.shape[0] * x.shape[1], 8)
    assert ((gates > 0).sum(dim=-1) == 2).all()
    assert torch.allclose(gates.sum(dim=-1), torch.ones(gates.shape[0]))


def test_sizes_are_arguments():
    module, (tokens,) = zoo.llama(layers=8, d_model=32, heads=4, kv_heads=1, hidden=64, vocab=100,
                                  seq=6, batch=2)
    assert len(module.layers) == 8 and tokens.shape == (2, 6) and int(tokens.max()) < 100
    assert module.layers[7].attn.k.weight.shape == (8, 32)    # one key head of width 32 / 4
    with pytest.raises(ValueError, match="multiple of kv_heads"):
        zoo.llama(heads=8, kv_heads=3)
    with pytest.raises(ValueError, match="top_k"):
        zoo.moe(experts=4, top_k=5)


def test_real_sizes_on_paper():
    """Published shapes, counted on the meta device (nothing allocated): GPT-2 small's 124,439,808
    and LLaMA-3 8B's 8,030,261,248 parameters."""
    module, (tokens,) = zoo.gpt2(**zoo.ZOO["gpt2"].real, device="meta")
    assert all(p.device.type == "meta" for p in module.parameters()) and tokens.shape == (8, 1024)
    assert zoo.parameter_count(module) == 124_439_808
    assert zoo.count_parameters("llama", **zoo.ZOO["llama"].real) == 8_030_261_248
    experts, d, hidden = 8, 4096, 14336
    assert zoo.count_parameters("moe", **zoo.ZOO["moe"].real) == d * experts + 2 * experts * d * hidden
