"""Finding backends: the plugin manager, entry-point loading and lookup by name."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Iterable, Optional

import pluggy

from . import hookspecs
from .backend import BackendLike

EXTRA_PLUGINS_ENV = "PORTFOLIO_PLUGINS"
"""Comma-separated module names to register as plugins without installing them (handy for tests)."""


@dataclass(frozen=True)
class BackendInfo:
    """A backend with where it came from."""

    backend: BackendLike
    package: str
    version: str


class RegistryError(LookupError):
    """Unknown backend name, or two plugins claiming the same name."""


class Registry:
    """All backends known to this process, by name."""

    def __init__(self, plugins: Iterable[object] = (), load_entry_points: bool = True) -> None:
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)
        self.load_errors: list[str] = []
        if load_entry_points:
            self._load_entry_points()
        for name in filter(None, os.environ.get(EXTRA_PLUGINS_ENV, "").split(",")):
            try:
                module = importlib.import_module(name.strip())
                if not self.manager.is_registered(module):
                    self.manager.register(module)
            except Exception as exc:  # a broken plugin must not take the tool down
                self.load_errors.append(f"{name}: {type(exc).__name__}: {exc}")
        for plugin in plugins:
            self.manager.register(plugin)
        self._backends = self._collect()

    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        for ep in entry_points(group=hookspecs.ENTRY_POINT_GROUP):
            if self.manager.get_plugin(ep.name) is not None:
                continue
            try:
                self.manager.register(ep.load(), name=ep.name)
            except Exception as exc:
                self.load_errors.append(f"{ep.name} ({ep.value}): {type(exc).__name__}: {exc}")
                continue
            dist = getattr(ep, "dist", None)
            if dist is not None:
                self._dists[ep.name] = (dist.metadata["Name"], dist.version)

    @property
    def _dists(self) -> dict[str, tuple[str, str]]:
        if not hasattr(self, "_dist_map"):
            self._dist_map: dict[str, tuple[str, str]] = {}
        return self._dist_map

    def _collect(self) -> dict[str, BackendInfo]:
        found: dict[str, BackendInfo] = {}
        for plugin in self.manager.get_plugins():
            impl = getattr(plugin, "portfolio_backends", None)
            if impl is None:
                continue
            plugin_name = self.manager.get_name(plugin) or ""
            package, version = self._dists.get(plugin_name, (getattr(plugin, "__name__", "?"), ""))
            try:
                backends = impl()
            except Exception as exc:
                self.load_errors.append(f"{plugin_name}: portfolio_backends() failed: {exc}")
                continue
            for backend in backends or []:
                if backend.name in found:
                    self.load_errors.append(
                        f"backend name {backend.name!r} from {package} is already taken by "
                        f"{found[backend.name].package}; ignored")
                    continue
                found[backend.name] = BackendInfo(backend, package, version)
        return dict(sorted(found.items()))

    def names(self) -> list[str]:
        return list(self._backends)

    def infos(self) -> list[BackendInfo]:
        return list(self._backends.values())

    def get(self, name: str) -> BackendLike:
        try:
            return self._backends[name].backend
        except KeyError:
            known = ", ".join(self.names()) or "(none)"
            raise RegistryError(f"unknown backend {name!r}; known backends: {known}") from None

    def select(self, names: Optional[Iterable[str]]) -> list[BackendLike]:
        """The named backends (all available ones when ``names`` is None), in the given order."""
        if names is None:
            return [info.backend for info in self.infos() if info.backend.available()[0]
                    and not getattr(info.backend, "test_only", False)]
        return [self.get(n) for n in names]
