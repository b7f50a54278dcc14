"""Finding backends: the plugin manager, entry-point loading and lookup by name.

Every plugin is registered with a pluggy plugin manager, and its backends are asked for through
that manager's ``portfolio_backends`` hook (:mod:`portfolio.hookspecs`), one plugin at a time: a
subset hook caller that leaves every other plugin out, so a failure is that plugin's alone and
names it. What each backend declares (:class:`portfolio.backend.BackendMeta`) is read once, here,
through :func:`portfolio.backend.declared`, and kept with it (:attr:`BackendInfo.meta`).

Plugin code is third-party code, so nothing a plugin does here may take the tool down or make the
choice of backend depend on chance:

- a plugin that fails to import or to register, a ``portfolio_backends()`` that raises, hangs or
  returns junk, and every item of its list that is not a backend are skipped with a one-line
  warning naming the distribution; a declaration of the wrong type is ignored (its default
  stands) with a one-line warning too;
- name clashes are settled the same way every time: a built-in backend (``DISTRIBUTION``'s) keeps
  its name, otherwise the first distribution in alphabetical order does; every other claimant is
  known by its qualified name ``DIST:NAME`` (its ``name`` attribute is set to that, so results and
  tables say which one ran), and each backend can also be picked by its qualified name;
- ``available()`` runs in a helper thread under :data:`AVAILABLE_TIMEOUT`: one that raises, hangs or
  answers nonsense counts as "not available, because ..."; so does a backend whose option
  declaration is invalid (it would fail every run reading the option): listed, never run.

Installing a plugin must not change a plain run unasked: the default set (:meth:`Registry.select`
with no names) holds this project's own built-ins that declare ``default=True``, and a backend of
another distribution (an entry point of another package, a ``PORTFOLIO_PLUGINS`` module, a plugin
object given in code) only when the user adds it (a config's ``[portfolio] add_to_default``,
handed in as ``add_to_default``); named, any available backend runs.
:meth:`Registry.default_reason` is the one rule, and says why; :meth:`Registry.outside` is the
record of the outside backends a run used.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

import pluggy

from . import hookspecs
from .backend import (DISTRIBUTION, BackendLike, BackendMeta, Capabilities, declared,
                      distribution_version, invalid_options)
from .hookspecs import PLUGINS_ENV

EXTRA_PLUGINS_ENV = PLUGINS_ENV
"""Comma-separated module names to register as plugins without installing them (handy for tests);
read by every command that runs or lists backends, recorded with their runs."""

DEFAULT_RULES = ("built-in", "added", "outside", "named only", "test")
"""What puts a backend in the default set or keeps it out (:meth:`Registry.default_reason`): a
built-in declaring ``default=True``; a config's ``add_to_default``; out: a backend of another
distribution not added, one declaring ``default=False``, a test's backend."""

BUILTIN, ENTRY_POINT, ENV, IN_CODE = "built-in", "entry point", PLUGINS_ENV, "registered in code"
"""How a backend's plugin came (``BackendInfo.via``): this project's own entry points, another
distribution's, a module named in ``PORTFOLIO_PLUGINS``, a plugin object given to the registry."""

AVAILABLE_TIMEOUT = 3.0
"""Seconds ``available()`` checks may take together (importing ortools takes about 1 s)."""

HOOK_TIMEOUT = 5.0
"""Seconds one plugin's ``portfolio_backends()`` may take."""

_BAD_NAME_CHARS = frozenset(",: \t\n")


@dataclass(frozen=True)
class BackendInfo:
    """A backend with where it came from and the names it is selected by."""

    backend: BackendLike
    package: str
    version: str
    qualified: str = ""       # DIST:NAME, always unique
    builtin: bool = False
    clash: str = ""           # one line when another distribution claims the same name
    meta: BackendMeta = BackendMeta()   # its declarations, checked (portfolio.backend.declared)
    via: str = BUILTIN        # how its plugin came: BUILTIN, ENTRY_POINT, ENV or IN_CODE
    broken: str = ""          # why its declaration cannot run (an invalid option), or ''


class RegistryError(LookupError):
    """Unknown, unavailable or badly listed backend names (the message is one line)."""


@dataclass
class _Source:
    """A registered plugin object and the distribution it came from."""

    plugin: object
    package: str
    version: str
    builtin: bool
    via: str = BUILTIN


@dataclass
class _Candidate:
    backend: BackendLike
    source: _Source
    meta: BackendMeta
    order: int = 0
    broken: str = ""


# ------------------------------------------------------------------------------------------ guarded calls
def call_with_timeout(fn: Callable[[], Any], timeout: float) -> tuple[str, Any]:
    """Run ``fn()`` in a daemon thread: ("ok", value), ("raised", exception) or ("timeout", None).

    A thread cannot be killed; a call that never returns is abandoned (daemon threads do not keep the
    process alive), which is enough for cheap checks such as ``available()``.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 -- anything a plugin raises is reported
            box["error"] = exc

    thread = threading.Thread(target=target, name="portfolio-guarded-call", daemon=True)
    thread.start()
    thread.join(max(0.0, timeout))
    if thread.is_alive():
        return "timeout", None
    if "error" in box:
        return "raised", box["error"]
    return "ok", box.get("value")


def _availability_answer(outcome: str, value: Any, timeout: float) -> tuple[bool, str]:
    if outcome == "timeout":
        return False, f"available() did not answer within {timeout:g} s"
    if outcome == "raised":
        return False, f"available() raised {type(value).__name__}: {value}"
    if (isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], bool)):
        return value[0], "" if value[0] else str(value[1])
    return False, f"available() returned {type(value).__name__}, not (bool, str)"


_AVAILABILITY: dict[int, tuple[object, tuple[bool, str]]] = {}
_PENDING: dict[int, tuple[object, threading.Thread, dict, float]] = {}
_AVAILABILITY_LOCK = threading.Lock()


def _start_check(backend: BackendLike) -> tuple[threading.Thread, dict, float]:
    """The check of ``backend`` already running, or a new one: never two threads for one backend."""
    key = id(backend)
    with _AVAILABILITY_LOCK:
        pending = _PENDING.get(key)
        if pending is not None and pending[0] is backend:
            return pending[1], pending[2], pending[3]
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = backend.available()
            except BaseException as exc:  # noqa: BLE001
                box["error"] = exc

        thread = threading.Thread(target=target, name="portfolio-available", daemon=True)
        started = time.monotonic()
        _PENDING[key] = (backend, thread, box, started)
    thread.start()
    return thread, box, started


def check_available(backends: Sequence[BackendLike], timeout: float | None = None) -> list[tuple[bool, str]]:
    """``available()`` of each backend, all checked at once; cached per object once answered.

    ``timeout`` counts from the moment a backend's check first started (a later call waits for the
    same check, it never starts another), so a check that hangs costs ``timeout`` seconds once.
    A check still running is reported as (False, "did not answer within ...") and not cached: a later
    call with a longer limit may still get its answer (see :func:`still_checking`).
    """
    timeout = AVAILABLE_TIMEOUT if timeout is None else timeout
    answers: dict[int, tuple[bool, str]] = {}
    running: dict[int, tuple[threading.Thread, dict, float]] = {}
    for backend in backends:
        key = id(backend)
        with _AVAILABILITY_LOCK:
            cached = _AVAILABILITY.get(key)
        if cached is not None and cached[0] is backend:
            answers[key] = cached[1]
        elif key not in running:
            running[key] = _start_check(backend)
    by_id = {id(b): b for b in backends}
    for key, (thread, box, started) in running.items():
        thread.join(max(0.0, started + timeout - time.monotonic()))
        if thread.is_alive():
            answers[key] = _availability_answer("timeout", None, timeout)
            continue
        if "error" in box:
            answer = _availability_answer("raised", box["error"], timeout)
        else:
            answer = _availability_answer("ok", box.get("value"), timeout)
        answers[key] = answer
        with _AVAILABILITY_LOCK:
            _AVAILABILITY[key] = (by_id[key], answer)
            _PENDING.pop(key, None)
    return [answers[id(b)] for b in backends]


def still_checking(answer: tuple[bool, str]) -> bool:
    """True for the answer of a check that has not finished (yet)."""
    return not answer[0] and answer[1].startswith("available() did not answer within")


def start_checks(backends: Sequence[BackendLike]) -> None:
    """Start the ``available()`` check of each backend not answered yet, without waiting."""
    for backend in backends:
        with _AVAILABILITY_LOCK:
            cached = _AVAILABILITY.get(id(backend))
        if cached is None or cached[0] is not backend:
            _start_check(backend)


def poll_available(backend: BackendLike, timeout: float | None = None) -> Optional[tuple[bool, str]]:
    """The answer of ``backend``'s check, or None while it is still running and younger than
    ``timeout`` seconds (then the "did not answer" answer): for an event loop that must not block."""
    timeout = AVAILABLE_TIMEOUT if timeout is None else timeout
    with _AVAILABILITY_LOCK:
        cached = _AVAILABILITY.get(id(backend))
    if cached is not None and cached[0] is backend:
        return cached[1]
    thread, _, started = _start_check(backend)
    if thread.is_alive() and time.monotonic() - started < timeout:
        return None
    return check_available([backend], timeout)[0]


def _junk_reason(backend: object) -> str:
    """Why ``backend`` is not a backend, or '' when it looks like one."""
    if backend is None:
        return "None"
    name = getattr(backend, "name", None)
    if not isinstance(name, str) or not name:
        return f"a {type(backend).__name__} without a name"
    if _BAD_NAME_CHARS & set(name):
        return f"backend name {name!r} contains ',', ':' or white space"
    for attr in ("solve", "available"):
        if not callable(getattr(backend, attr, None)):
            return f"{name!r} has no {attr}() method"
    if not isinstance(getattr(backend, "capabilities", None), Capabilities):
        return f"{name!r} has no Capabilities"
    if not isinstance(getattr(backend, "description", ""), str):
        return f"{name!r} has a description that is not a string"
    return ""


# ------------------------------------------------------------------------------------------ registry
class Registry:
    """All backends known to this process, by name (and by qualified name ``DIST:NAME``)."""

    def __init__(self, plugins: Iterable[object] = (), load_entry_points: bool = True) -> None:
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)
        self.warnings: list[str] = []
        self.check_timeout = AVAILABLE_TIMEOUT
        """Seconds ``available()`` checks may take (the CLI shortens it for short runs)."""
        self._sources: list[_Source] = []
        if load_entry_points:
            self._load_entry_points()
        for name in filter(None, (n.strip() for n in os.environ.get(EXTRA_PLUGINS_ENV, "").split(","))):
            try:
                module = importlib.import_module(name)
            except Exception as exc:  # a broken plugin must not take the tool down
                self.warnings.append(f"plugin {name} not loaded: {type(exc).__name__}: {exc}")
                continue
            self._add(module, name, "", builtin=False, plugin_name=f"{name} (env)", via=ENV)
        for plugin in plugins:
            package = getattr(plugin, "__name__", type(plugin).__name__)
            self._add(plugin, package, "", builtin=False, plugin_name=None, via=IN_CODE)
        self._backends, self._qualified = self._collect()

    # ---------------------------------------------------------------- loading
    def _add(self, plugin: object, package: str, version: str, builtin: bool,
             plugin_name: Optional[str], via: str = ENTRY_POINT) -> None:
        if self.manager.is_registered(plugin):
            return
        try:
            hash(plugin)   # the plugin manager keeps plugins in sets
        except TypeError as exc:
            self.warnings.append(f"plugin {package} not loaded: {type(exc).__name__}: {exc}")
            return
        name = plugin_name
        if name is not None and self.manager.get_plugin(name) is not None:
            name = f"{name}#{len(self._sources)}"
        try:
            self.manager.register(plugin, name=name)
        except Exception as exc:
            self.warnings.append(f"plugin {package} not loaded: {type(exc).__name__}: {exc}")
            return
        self._sources.append(_Source(plugin, package, version, builtin,
                                     BUILTIN if builtin else via))

    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        found = []
        for ep in entry_points(group=hookspecs.ENTRY_POINT_GROUP):
            dist = getattr(ep, "dist", None)
            package = dist.metadata["Name"] if dist is not None else ep.value.split(":")[0]
            version = dist.version if dist is not None else ""
            found.append((package != DISTRIBUTION, package, ep.name, ep, version))
        for not_builtin, package, ep_name, ep, version in sorted(found, key=lambda t: t[:3]):
            try:
                plugin = ep.load()
            except Exception as exc:
                self.warnings.append(f"plugin {ep_name} ({ep.value}) from {package} not loaded: "
                                     f"{type(exc).__name__}: {exc}")
                continue
            self._add(plugin, package, version, builtin=not not_builtin,
                      plugin_name=f"{package}:{ep_name}")

    def _backends_of(self, source: _Source) -> list[object]:
        """``source``'s answer to the ``portfolio_backends`` hook, called through the plugin manager
        with every other plugin left out (a subset hook caller), under :data:`HOOK_TIMEOUT`."""
        hook = self.manager.hook.portfolio_backends
        if not any(impl.plugin is source.plugin for impl in hook.get_hookimpls()):
            if callable(getattr(source.plugin, "portfolio_backends", None)):
                self.warnings.append(f"{source.package}: portfolio_backends() is not marked "
                                     f"@hookimpl (portfolio.hookspecs); skipped")
            return []
        others = [s.plugin for s in self._sources if s is not source]
        call = self.manager.subset_hook_caller("portfolio_backends", remove_plugins=others)
        outcome, results = call_with_timeout(call, HOOK_TIMEOUT)
        if outcome == "timeout":
            self.warnings.append(f"{source.package}: portfolio_backends() did not return within "
                                 f"{HOOK_TIMEOUT:g} s; skipped")
            return []
        if outcome == "raised":
            self.warnings.append(f"{source.package}: portfolio_backends() raised "
                                 f"{type(results).__name__}: {results}; skipped")
            return []
        found: list[object] = []
        for value in results if isinstance(results, list) else [results]:
            # pluggy leaves out a None answer and lists the others, one per implementation
            if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
                self.warnings.append(f"{source.package}: portfolio_backends() returned a "
                                     f"{type(value).__name__}, not a list of backends; skipped")
                continue
            try:
                found.extend(value)
            except Exception as exc:
                self.warnings.append(f"{source.package}: portfolio_backends() result could not be "
                                     f"read: {type(exc).__name__}: {exc}; skipped")
        return found

    def _collect(self) -> tuple[dict[str, BackendInfo], dict[str, BackendInfo]]:
        by_name: dict[str, list[_Candidate]] = {}
        order = 0
        for source in self._sources:
            for index, backend in enumerate(self._backends_of(source)):
                why = _junk_reason(backend)
                if why:
                    self.warnings.append(f"{source.package}: portfolio_backends() item {index} is "
                                         f"{why}, not a backend; skipped")
                    continue
                meta, problems = declared(backend)
                self.warnings += [f"{source.package}: backend {backend.name!r} {problem}"
                                  for problem in problems]
                candidate = _Candidate(backend, source, meta, order, invalid_options(problems))
                by_name.setdefault(backend.name, []).append(candidate)
                order += 1
        plain: dict[str, BackendInfo] = {}
        qualified: dict[str, BackendInfo] = {}
        for name, candidates in by_name.items():
            candidates.sort(key=lambda c: (not c.source.builtin, c.source.package, c.order))
            winner = candidates[0]
            packages = [c.source.package for c in candidates]
            clash = ""
            if len(candidates) > 1:
                who = " and ".join(dict.fromkeys(packages))
                clash = (f"backend name {name!r} is claimed by {who}; {winner.source.package} keeps it"
                         + (" (built-in)" if winner.source.builtin else " (first by name)"))
            for rank, cand in enumerate(candidates):
                qname = f"{cand.source.package}:{name}"
                if qname in qualified:
                    self.warnings.append(f"{cand.source.package}: backend {name!r} listed twice; "
                                         f"the second is skipped")
                    continue
                if rank > 0:
                    try:
                        setattr(cand.backend, "name", qname)
                    except Exception:  # a read-only name: the backend cannot be told apart
                        self.warnings.append(f"{cand.source.package}: backend {name!r} clashes "
                                             f"with {winner.source.package} and cannot be renamed; "
                                             f"skipped")
                        continue
                info = BackendInfo(cand.backend, cand.source.package, cand.source.version, qname,
                                   cand.source.builtin, clash, cand.meta, cand.source.via,
                                   cand.broken)
                qualified[qname] = info
                plain[name if rank == 0 else qname] = info
            if clash:
                others = ", ".join(f"{c.source.package}:{name}" for c in candidates[1:])
                self.warnings.append(f"{clash}; pick another by its qualified name: {others}")
        return dict(sorted(plain.items())), qualified

    # ---------------------------------------------------------------- lookup
    def names(self) -> list[str]:
        return list(self._backends)

    def infos(self) -> list[BackendInfo]:
        return list(self._backends.values())

    def info(self, name: str) -> Optional[BackendInfo]:
        """The backend of a plain or qualified name, or None."""
        return self._backends.get(name) or self._qualified.get(name)

    def meta(self, name: str) -> BackendMeta:
        """What the backend of a plain or qualified name declares (checked when it was listed)."""
        info = self.info(name)
        return info.meta if info is not None else BackendMeta()

    def get(self, name: str) -> BackendLike:
        info = self.info(name)
        if info is None:
            known = ", ".join(self.names()) or "(none)"
            raise RegistryError(f"unknown backend {name!r}; known backends: {known}")
        return info.backend

    def available(self, backends: Sequence[BackendLike]) -> list[tuple[bool, str]]:
        """Guarded ``available()`` of each backend (see :func:`check_available`); a backend whose
        option declaration is invalid is not available, whatever it answers (never asked)."""
        broken = {id(i.backend): i.broken for i in self._qualified.values() if i.broken}
        asked = [b for b in backends if id(b) not in broken]
        answers = iter(check_available(asked, self.check_timeout))
        return [(False, f"{broken[id(b)]}; the backend is not run") if id(b) in broken
                else next(answers) for b in backends]

    # ---------------------------------------------------------------- the default set
    def default_reason(self, info: BackendInfo, added: Iterable[str] = ()) -> tuple[bool, str, str]:
        """Whether ``info``'s backend is in the default set, the rule that decides it (one word of
        :data:`DEFAULT_RULES`) and why (one phrase): the one rule (see the module). ``added``:
        the names a config's ``[portfolio] add_to_default`` gives."""
        meta = info.meta
        if meta.test_only:
            return False, "test", "a test's backend: runs only when named"
        if any(self.info(name) is info for name in added):
            return True, "added", "added by the config's [portfolio] add_to_default"
        if not meta.default:
            return False, "named only", "declares default=False: runs only when named"
        if info.builtin:
            return True, "built-in", f"built-in ({DISTRIBUTION})"
        return False, "outside", (f"from {info.package} ({info.via}), not built in: runs when "
                                  f"named, or add it to the default set with [portfolio] "
                                  f"add_to_default = [\"{info.backend.name}\"] in a config")

    def check_added(self, names: Iterable[str]) -> None:
        """``add_to_default``'s names, each known here; else one :class:`RegistryError` line."""
        unknown = [n for n in names if self.info(n) is None]
        if unknown:
            word = "backend" if len(unknown) == 1 else "backends"
            raise RegistryError(f"add_to_default: unknown {word} {', '.join(map(repr, unknown))}; "
                                f"known backends: {', '.join(self.names()) or '(none)'}")

    def outside(self, backends: Iterable[BackendLike]) -> list[dict]:
        """The backends among ``backends`` that are not this project's own built-ins, each with its
        distribution, version and how it came (``via``); a backend object the registry does not
        know (given in code) has no distribution, ``via`` names its class. What a run records."""
        out = []
        for backend in backends:
            info = self.info(backend.name)
            if info is not None and info.backend is backend:
                if not info.builtin:
                    out.append({"name": backend.name, "distribution": info.package,
                                "version": info.version, "via": info.via})
                continue
            cls = type(backend)
            out.append({"name": backend.name, "distribution": None, "version": None,
                        "via": f"object ({cls.__module__}.{cls.__qualname__})"})
        return out

    def describe(self, add_to_default: Iterable[str] = ()) -> list[dict]:
        """One row per backend, as ``portfolio backends --json`` and ``portfolio.backends()`` show
        them: its names and distribution, whether it is a built-in, whether it can run here (and
        why not, with the pip command its ``meta`` declares), in the default set or not and why
        (``add_to_default``: a config's additions), and the installed version of each engine it
        declares (None: not installed)."""
        infos = self.infos()
        added = tuple(add_to_default)
        rows = []
        for info, (ok, why) in zip(infos, self.available([i.backend for i in infos])):
            hint = "" if ok else info.meta.install_hint
            default, rule, default_why = self.default_reason(info, added)
            rows.append({"name": info.backend.name, "qualified": info.qualified,
                         "package": info.package, "version": info.version, "available": ok,
                         "reason": f"{why}; {hint}" if hint and hint not in why else why,
                         "builtin": info.builtin, "via": info.via, "default": default,
                         "default_rule": rule, "default_why": default_why, "deterministic": info.meta.deterministic,
                         "description": info.backend.description,
                         "capabilities": info.backend.capabilities.labels(), "clash": info.clash,
                         "engines": {e: distribution_version(e) for e in info.meta.engines},
                         "options": [o.describe() for o in info.meta.options]})
        return rows

    def select(self, names: Optional[Iterable[str]],
               add_to_default: Iterable[str] = ()) -> list[BackendLike]:
        """The named backends, in the given order; when ``names`` is None, the default set's
        available ones (:meth:`default_reason`: the built-ins that declare ``default=True``, and
        the backends a config adds, ``add_to_default``)."""
        if names is None:
            added = tuple(add_to_default)
            pool = [info.backend for info in self.infos() if self.default_reason(info, added)[0]]
            return [b for b, (ok, _) in zip(pool, self.available(pool)) if ok]
        return [self.get(n) for n in names]

    def resolve(self, names: Sequence[str]) -> list[BackendLike]:
        """The named backends, each available here; else one line naming every problem at once."""
        unknown = [n for n in names if self.info(n) is None]
        known = [self.get(n) for n in names if self.info(n) is not None]
        answers = self.available(known)
        unavailable = []
        for name, backend, (ok, why) in zip([n for n in names if self.info(n) is not None], known, answers):
            if not ok and not still_checking((ok, why)):  # a slow check: the runner waits for it
                hint = self.meta(name).install_hint
                unavailable.append(f"{name} ({why}" + (f"; {hint}" if hint and hint not in why else "")
                                   + ")")
        if not unknown and not unavailable:
            return known
        usable = [i.backend.name for i, answer in zip(self.infos(), self.available(
            [i.backend for i in self.infos()]))  # a check still running may yet say yes
                  if (answer[0] or still_checking(answer)) and not i.meta.test_only]
        parts = []
        if unknown:
            word = "backend" if len(unknown) == 1 else "backends"
            parts.append(f"unknown {word} " + ", ".join(map(repr, unknown)))
        if unavailable:
            parts.append("not available here: " + ", ".join(unavailable))
        parts.append("available: " + (", ".join(usable) or "(none)"))
        raise RegistryError("; ".join(parts))


def parse_backend_list(text: str, registry: Optional[Registry] = None) -> list[str]:
    """Split a ``--backends`` value into names: no empty list, no name twice (one line otherwise)."""
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise RegistryError(f"--backends {text!r} names no backend; give names such as "
                            f"greedy,localsearch (see `portfolio backends`)")
    names = [n for n in names if n]
    seen: dict[object, str] = {}
    twice = []
    for name in names:
        info = registry.info(name) if registry is not None else None
        key: object = info.qualified if info is not None else name
        if key in seen:
            twice.append(name if seen[key] == name else f"{seen[key]} = {name}")
        else:
            seen[key] = name
    if twice:
        raise RegistryError(f"--backends lists a backend more than once: {', '.join(twice)}")
    return names
