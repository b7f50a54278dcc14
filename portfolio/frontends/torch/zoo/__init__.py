"""A model zoo for the PyTorch front end: our own small models, random weights, nothing downloaded.

Four factories, each ``f(**sizes, seed=0, device="cpu") -> (module, example_inputs)``, where
``example_inputs`` is a tuple of tensors; the same call gives the same weights and inputs (built
under ``seed`` without touching the caller's random state). Defaults are tiny, for tests; every
width is an argument, and ``ZOO[name].real`` holds a published model's shapes. On
``device="meta"`` a model is built from shapes alone (``count_parameters("gpt2", **ZOO["gpt2"].real)``
is GPT-2 small's 124,439,808 without allocating it). Modules are in eval mode; none has dropout.

- ``mlp``: ``layers.N.up``, ``layers.N.down`` (GELU between). Input (batch, d_model).
- ``gpt2``: ``tok``, ``pos``, ``layers.N.attn_norm``, ``layers.N.attn.{q,k,v,out}``,
  ``layers.N.mlp_norm``, ``layers.N.mlp.{up,down}``, ``norm``, ``head`` (tied to ``tok``).
  Tokens (batch, seq) of int64 in, logits out.
- ``llama``: ``tok``, ``layers.N.attn_norm``, ``layers.N.attn.{q,k,v,out}`` (``k``, ``v`` narrower:
  grouped-query), ``layers.N.mlp_norm``, ``layers.N.mlp.{gate,up,down}``, ``norm``, ``head``.
  Tokens in, logits out.
- ``moe``: ``router``, ``experts.up``, ``experts.down`` (each a stacked (experts, in, out)
  weight). Input (batch, seq, d_model).

Training: every model returns one float tensor that depends on every parameter, so a scalar loss
is any reduction of it; the zoo's is :func:`loss`, the mean of the squared output
(``loss(module(*inputs)).backward()``). A front end's stand-in loss (the sum of the outputs) works
as well.

Aten ops after ``torch.export.export(m, x).run_decompositions()`` (torch 2.13; checked by
tests/test_torch_zoo.py against ``ZOO[name].inference_ops``):

- mlp: ``permute`` (the weight's transpose), ``addmm``, ``gelu``.
- gpt2: ``embedding``, ``slice.Tensor`` and ``alias`` (positions and mask cut to the input),
  ``add.Tensor``, ``native_layer_norm`` with ``getitem``, ``view``, ``permute``, ``addmm``, ``mm``
  (the bias-free head), ``expand``, ``clone``, ``bmm``, ``mul.Tensor`` (the scores' scale),
  ``_softmax``, ``gelu``.
- llama: ``embedding``, ``slice.Tensor``, ``alias``, ``pow.Tensor_Scalar``, ``mean.dim``,
  ``add.Tensor``, ``rsqrt``, ``mul.Tensor`` (RMSNorm, rotary, SwiGLU), ``view``, ``permute``,
  ``mm``, ``split_with_sizes`` with ``getitem``, ``neg``, ``cat`` (rotary), ``unsqueeze``,
  ``expand``, ``clone`` (grouped-query widening), ``bmm``, ``_softmax``, ``sigmoid`` (SiLU).
- moe: ``view``, ``permute``, ``mm``, ``_softmax``, ``topk`` with ``getitem``, ``slice.Tensor``,
  ``ge.Tensor``, ``mul.Tensor``, ``sum.dim_IntList``, ``div.Tensor``, ``unsqueeze``, ``expand``,
  ``bmm``, ``gelu``.

Every one of these has a DTensor sharding rule in torch 2.13 (``getitem`` is not an aten op). Not
used on purpose: ``scaled_dot_product_attention`` (its decomposition depends on the kernel chosen),
complex numbers for rotary (no rules), ``masked_fill`` and ``where`` with a scalar (they decompose
to ``scalar_tensor``, which has no rule), factory ops in ``forward`` (positions, masks and rotary
tables are buffers), ``.to(dtype)`` (``_assert_tensor_metadata``, no rule), two slices for the
rotary halves (their backward zero-fills a ``full`` tensor, no rule). The training graph adds the
ops' backward forms; with torch's core decompositions the embedding's backward becomes ``full``,
``index_put``, ``where`` and ``scalar_tensor``, so a front end keeps ``embedding_dense_backward``
(it has a rule) out of its decomposition table.
"""

from __future__ import annotations

from .catalog import ZOO, Entry, count_parameters, describe
from .common import ModelAndInputs, loss, parameter_count
from .gpt2 import gpt2
from .llama import llama
from .mlp import mlp
from .moe import moe

__all__ = ["ZOO", "Entry", "ModelAndInputs", "count_parameters", "describe", "gpt2", "llama", "loss",
           "mlp", "moe", "parameter_count"]
