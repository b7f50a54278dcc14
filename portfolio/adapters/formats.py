"""The format registry: the one place that knows which file formats exist and how to read them.

Each format registers once, with :func:`register`: its name, the suffixes that select it, a reader
that returns a :class:`~.conversion.Conversion` (the problem and the map of plans and costs back to
the file), a writer, and, for formats that are encodings of the same data (a family: XLA's binary and
text request), a raw copy path that moves the data itself, never through a Problem. Everything else
(``portfolio.load``/``solve``, the CLI's ``solve``, ``info``, ``evaluate``, ``presolve`` and
``convert``, the cluster's shards) reads and writes through :func:`read_any`, :func:`save_any` and
:func:`convert`, and never tests a format's name. The built-in formats are registered at the end of
this module; a program adds its own by calling :func:`register` before it reads (docs/architecture.md,
"A file format").

The keyword protocols: ``read(path, cost_scale=...) -> Conversion``; ``write(problem, path,
cost_scale=...)``; ``load_raw(path, drop_unknown=...) -> (payload, Conversion)``;
``save_raw(payload, path, drop_unknown=...) -> notes``. A reader raises
:class:`~portfolio.io.ProblemFormatError` for a file it cannot use; a writer raises ``ValueError``
for a problem the format cannot hold (reported as :class:`CannotWrite`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import ProblemError
from ..io import PathLike
from ..problem import Problem
from . import json_formats
from .conversion import Conversion

Reader = Callable[..., Conversion]
Writer = Callable[..., None]


@dataclass(frozen=True)
class Format:
    """One file format and what the registry needs to read, write and copy it."""

    name: str
    suffixes: tuple[str, ...] = ()
    """File name endings that select it (``.gz`` aside: any name may add it and is then gzipped)."""
    read: Optional[Reader] = None
    write: Optional[Writer] = None
    misfit: Optional[Callable[[Problem], str]] = None
    """Why a problem does not fit this format ('' when it does), checked before writing."""
    fallback: str = ""
    """The format written instead when the problem does not fit and the name chose this format."""
    fractional_costs: bool = False
    """Costs need not be integers: a cost scale multiplies them when read, divides them when written."""
    family: str = ""
    """Formats of one family hold the same data in different encodings: between them, :func:`convert`
    copies the data itself (``load_raw`` then ``save_raw``), field for field."""
    load_raw: Optional[Callable[..., tuple[Any, Conversion]]] = None
    save_raw: Optional[Callable[..., tuple[str, ...]]] = None
    description: str = ""


class CannotWrite(ProblemError):
    """A problem or request that the target format cannot hold (the message says why)."""

    def __init__(self, path: PathLike, fmt: str, reason: str) -> None:
        super().__init__(f"{path}: cannot write as {fmt}: {reason}")


@dataclass(frozen=True)
class Converted:
    """What :func:`convert` did: the formats, what it read, and whether it copied the data itself."""

    source_format: str
    target_format: str
    conversion: Conversion
    """The source as read (its problem); its notes say what the conversion folded, rounded or dropped."""
    copied: bool
    """The same data in another encoding of its family (field for field), not through a Problem."""


_FORMATS: dict[str, Format] = {}
DEFAULT = "contest"
"""The format of a name that no registered suffix matches."""


def register(fmt: Format) -> Format:
    """Add a format (its name and suffixes must be new); returns it."""
    if not fmt.name or fmt.name in _FORMATS:
        raise ValueError(f"format name {fmt.name!r} is empty or taken")
    taken = {s: f.name for f in _FORMATS.values() for s in f.suffixes}
    for suffix in fmt.suffixes:
        if not suffix.startswith(".") or suffix != suffix.lower():
            raise ValueError(f"suffix {suffix!r}: give it in lower case with its dot")
        if suffix in taken:
            raise ValueError(f"suffix {suffix!r} already selects format {taken[suffix]!r}")
    if bool(fmt.load_raw) != bool(fmt.save_raw):
        raise ValueError(f"format {fmt.name!r}: a raw copy path needs both load_raw and save_raw")
    _FORMATS[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    """Remove a format (tests, or a program replacing one)."""
    _FORMATS.pop(name, None)


def names() -> tuple[str, ...]:
    """The registered formats' names, in registration order."""
    return tuple(_FORMATS)


def get(name: str) -> Format:
    """The format of this name (:class:`ProblemError` naming the known ones when there is none)."""
    try:
        return _FORMATS[name]
    except KeyError:
        raise ProblemError(f"unknown format {name!r}; use one of {', '.join(_FORMATS)}") from None


def format_of(path: PathLike, fmt: str | None = None) -> str:
    """``fmt`` when given (checked), else the format its name ends in (``.gz`` aside, the longest
    registered suffix), else :data:`DEFAULT`."""
    if fmt is not None:
        return get(fmt).name
    name = str(path).lower()
    name = name[:-3] if name.endswith(".gz") else name
    found = [(len(s), f.name) for f in _FORMATS.values() for s in f.suffixes if name.endswith(s)]
    return max(found)[1] if found else DEFAULT


def _scaled(fmt: Format, cost_scale: float, where: PathLike) -> float:
    if cost_scale != 1.0 and not fmt.fractional_costs:
        raise ProblemError(f"{where}: a cost scale applies only to formats with fractional costs "
                           f"({', '.join(_fractional())}); {fmt.name} costs are integers")
    return cost_scale


def _fractional() -> list[str]:
    return [f.name for f in _FORMATS.values() if f.fractional_costs]


def read_any(path: PathLike, fmt: str | None = None, cost_scale: float = 1.0) -> Conversion:
    """Load and validate a problem in any registered format, with the map back to the file."""
    f = get(format_of(path, fmt))
    if f.read is None:
        raise ProblemError(f"{path}: format {f.name} cannot be read")
    return f.read(path, cost_scale=_scaled(f, cost_scale, path))


def load_any(path: PathLike, fmt: str | None = None, cost_scale: float = 1.0) -> Problem:
    """The :class:`Problem` of a file in any format (a request's followers folded in)."""
    return read_any(path, fmt, cost_scale).problem


def save_any(problem: Problem, path: PathLike, fmt: str | None = None, cost_scale: float = 1.0) -> str:
    """Write ``problem`` in the format named or implied by ``path``; returns the format written.

    A problem that does not fit the format its name chose goes to the format's ``fallback`` (a
    ``.json`` name gets the contest format when the problem fits it, else the extended one); one
    that does not fit a format named in ``fmt`` raises :class:`CannotWrite`.
    """
    f = get(format_of(path, fmt))
    scale = _scaled(f, cost_scale, path)
    reason = f.misfit(problem) if f.misfit else ""
    if reason and fmt is None and f.fallback:
        f, reason = get(f.fallback), ""
    if reason:
        raise CannotWrite(path, f.name, reason)
    if f.write is None:
        raise CannotWrite(path, f.name, "this format is read-only")
    try:
        f.write(problem, path, cost_scale=scale)
    except ProblemError:
        raise
    except ValueError as exc:
        raise CannotWrite(path, f.name, str(exc)) from None
    return f.name


def convert(source: PathLike, target: PathLike, from_fmt: str | None = None, to_fmt: str | None = None,
            cost_scale: float = 1.0, drop_unknown: bool = False) -> Converted:
    """Write the problem of ``source`` to ``target`` (formats by name, or as told).

    Within a family (XLA binary and text) the data itself is copied, every field kept: the same
    request in another encoding (a cost scale is refused; ``drop_unknown`` lets text drop what it
    cannot hold). Across families the problem goes through a :class:`Problem`: what that folds or
    rounds is in the notes, and ``cost_scale`` multiplies costs read from, or divides costs written
    to, a format with fractional costs.
    """
    src, dst = get(format_of(source, from_fmt)), get(format_of(target, to_fmt))
    if src.family and src.family == dst.family and src.load_raw and dst.save_raw:
        if cost_scale != 1.0:
            raise ProblemError(f"a cost scale does not apply from {src.name} to {dst.name}: the "
                               f"file is copied field for field")
        payload, conv = src.load_raw(source, drop_unknown=drop_unknown)
        try:
            notes = dst.save_raw(payload, target, drop_unknown=drop_unknown)
        except ProblemError:
            raise
        except ValueError as exc:
            raise CannotWrite(target, dst.name, str(exc)) from None
        return Converted(src.name, dst.name, conv.with_notes(*notes), copied=True)
    if cost_scale != 1.0 and not (src.fractional_costs or dst.fractional_costs):
        both = src.name if src.name == dst.name else f"{src.name} and {dst.name}"
        raise ProblemError(f"a cost scale applies only to formats with fractional costs "
                           f"({', '.join(_fractional())}); {both} costs are integers")
    conv = read_any(source, src.name, cost_scale if src.fractional_costs else 1.0)
    written = save_any(conv.problem, target, to_fmt, cost_scale if dst.fractional_costs else 1.0)
    return Converted(src.name, written, conv, copied=False)


# ------------------------------------------------------------------------------------------ built-ins
register(Format("contest", (".json",), read=json_formats.read_json, write=json_formats.write_contest,
                misfit=json_formats.contest_misfit, fallback="extended",
                description="contest JSON (reading it reads extended JSON too)"))
register(Format("extended", (), read=json_formats.read_json, write=json_formats.write_extended,
                description="this project's extended JSON (several intervals per node, capacity "
                            "over time, a cost offset)"))
def _xla(name: str, text: bool) -> Callable[..., Any]:
    """``adapters.xla.NAME`` with ``text`` bound, imported at the first call: protobuf and the
    request's declaration would cost every command's start about 7 ms, and most files are JSON."""

    def call(*args: Any, **kwargs: Any) -> Any:
        from . import xla

        return getattr(xla, name)(*args, text=text, **kwargs)

    return call


for _name, _suffixes, _text, _what in (("xla", (".pb", ".binpb"), False, "binary"),
                                       ("xla-text", (".textproto", ".txtpb", ".pbtxt"), True,
                                        "text format")):
    register(Format(_name, _suffixes, read=_xla("read_request", _text),
                    write=_xla("write_request", _text), fractional_costs=True, family="xla",
                    load_raw=_xla("load_message", _text), save_raw=_xla("save_message", _text),
                    description=f"XLA AutoShardingSolverRequest, {_what}"))
