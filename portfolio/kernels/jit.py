"""``kernel``: ``numba.njit(cache=True)`` that compiles one signature per argument types.

Why not plain ``njit``: when a jitted function calls another one, numba compiles the callee for the
argument types *as typed at the call site*, and an integer constant there is ``Literal[int](0)``,
not ``int64``. Type inference also resolves a call before a loop's back edge widened a variable
(``tail = 0`` ... ``tail = push(...)``), so a callee is often compiled twice: once for the literal,
once for ``int64``, each copy optimised again inside every caller. Measured on a cold cache:
13 kernels were compiled twice this way (about 15 s of the ~85 s). This dispatcher drops the
literal types before the callee is looked up, so each kernel has one specialisation per real
argument types; nothing in these kernels needs a literal argument.
"""

from __future__ import annotations

from typing import Callable

from numba.core import config, types
from numba.core.registry import CPUDispatcher


class KernelDispatcher(CPUDispatcher):
    """A CPU dispatcher that types calls from jitted code with non-literal argument types."""

    def get_call_template(self, args, kws):  # noqa: ANN001 -- numba's own signature
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def _dispatcher(func: Callable, cache: bool, wrapper: bool) -> Callable:
    options = {"nopython": True, "boundscheck": None}
    if not wrapper:
        options["no_cpython_wrapper"] = True
    disp = KernelDispatcher(py_func=func, locals={}, targetoptions=options)
    if cache:
        disp.enable_caching()
    return disp


def kernel(func: Callable) -> Callable:
    """An entry point: compiled in nopython mode, lazily, with numba's on-disk cache, callable from
    Python."""
    return func if config.DISABLE_JIT else _dispatcher(func, True, True)


def inner(func: Callable) -> Callable:
    """A kernel called only from other kernels: as :func:`kernel`, without the CPython wrapper.

    Why: the wrapper (unboxing a :class:`~portfolio.kernels.model.KModel` and a ``Scratch``, 40
    arrays) is compiled for every function, linked into every caller's module and optimised
    again there; measured, it was about a third of a small kernel's compile time. Python calls
    such a function through :func:`from_python` (tests).
    """
    return func if config.DISABLE_JIT else _dispatcher(func, True, False)


_PYTHON: dict = {}


def from_python(func: Callable) -> Callable:
    """A Python-callable version of an :func:`inner` kernel (compiled in this process, not cached:
    its cache entry would be the inner one's, which Python cannot call). For tests."""
    if config.DISABLE_JIT or getattr(func, "targetoptions", {}).get("no_cpython_wrapper") is None:
        return func
    if func not in _PYTHON:
        _PYTHON[func] = _dispatcher(func.py_func, False, True)
    return _PYTHON[func]
