"""The plugin manager and the :class:`Host` facade the pipeline talks to.

Built-in implementations register exactly like third-party plugins: they are the modules
listed in :data:`BUILTIN_PLUGINS`. Third-party plugins are found through the entry-point
group ``probe``. Pipeline code never calls ``pm.hook.x(...)`` directly; it asks the
:class:`Host`, which calls each registration hook once and caches the registries.

Environment:

* ``PROBE_DISABLE_PLUGINS=a,b`` blocks plugins by name (entry-point name or built-in name);
* ``PROBE_TRACE_PLUGINS=1`` prints every hook call to stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from importlib import metadata
from typing import Any

import pluggy

import probe.hookspecs as hookspecs
from probe.errors import PluginError
from probe.model import PairPlan
from probe.registry import Registry
from probe.version import __version__

ENTRY_POINT_GROUP = "probe"

BUILTIN_PLUGINS: tuple[str, ...] = (
    "probe.builtin.reader",
    "probe.builtin.layout",
    "probe.builtin.modes",
    "probe.builtin.exporters",
    "probe.builtin.mappers",
    "probe.builtin.commands",
    "probe.builtin.graph_commands",
    "probe.regression.commands",
    "probe.builtin.analysis",
    "probe.automatch.plugin",
)


@dataclass(frozen=True)
class PluginInfo:
    """What ``probe plugins`` shows about one plugin."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]
    error: str | None = None


def _blocked_from_env() -> set[str]:
    raw = os.environ.get("PROBE_DISABLE_PLUGINS", "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def get_plugin_manager(
    entrypoints: bool = True, blocked: tuple[str, ...] = (), extra: tuple[object, ...] = ()
) -> tuple[pluggy.PluginManager, list[PluginInfo]]:
    """Build a plugin manager with the built-ins, entry-point plugins and ``extra`` objects.

    Returns the manager and one :class:`PluginInfo` per plugin, including those that
    failed to load (with ``error`` set): a broken plugin is reported, never skipped silently.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    blocked_names = set(blocked) | _blocked_from_env()
    for name in blocked_names:
        pm.set_blocked(name)
    infos: list[PluginInfo] = []
    for module_name in BUILTIN_PLUGINS:
        short = module_name.rsplit(".", 1)[-1]
        if short in blocked_names or module_name in blocked_names:
            continue
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
        infos.append(PluginInfo(module_name, "probe", __version__, _hooks_of(pm, module)))
    if entrypoints:
        infos.extend(_load_entry_points(pm, blocked_names))
    for index, obj in enumerate(extra):
        name = getattr(obj, "__name__", None) or f"{type(obj).__name__}-{index}"
        pm.register(obj, name=name)
        infos.append(PluginInfo(name, "<local>", "", _hooks_of(pm, obj)))
    pm.check_pending()
    if os.environ.get("PROBE_TRACE_PLUGINS") == "1":
        pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
        pm.enable_tracing()
    return pm, infos


def _load_entry_points(pm: pluggy.PluginManager, blocked: set[str]) -> list[PluginInfo]:
    infos: list[PluginInfo] = []
    seen: set[str] = set()
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in blocked or ep.name in seen:
            continue
        seen.add(ep.name)
        dist = ep.dist.name if ep.dist else "?"
        version = ep.dist.version if ep.dist else "?"
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code is reported
            infos.append(PluginInfo(ep.name, dist, version, (), f"{type(exc).__name__}: {exc}"))
            continue
        infos.append(PluginInfo(ep.name, dist, version, _hooks_of(pm, plugin)))
    return infos


def _hooks_of(pm: pluggy.PluginManager, plugin: object) -> tuple[str, ...]:
    callers = pm.get_hookcallers(plugin) or []
    return tuple(sorted(caller.name for caller in callers))


class Host:
    """Facade over the plugin manager: one cached accessor per registration hook."""

    def __init__(
        self, entrypoints: bool = True, blocked: tuple[str, ...] = (), extra: tuple[object, ...] = ()
    ) -> None:
        self.pm, self.plugin_infos = get_plugin_manager(entrypoints, blocked, extra)

    def broken_plugins(self) -> list[PluginInfo]:
        """Plugins that failed to load."""
        return [info for info in self.plugin_infos if info.error]

    def _collect(self, kind: str, hook_name: str) -> Registry[Any]:
        registry: Registry[Any] = Registry(kind)
        hook = getattr(self.pm.hook, hook_name)
        # Call implementations one plugin at a time (through pluggy, so tracing sees every
        # call) so that the registry knows which plugin registers what.
        plugins = self.pm.get_plugins()
        for impl in reversed(hook.get_hookimpls()):
            registry._current_plugin = impl.plugin_name
            others = [p for p in plugins if p is not impl.plugin]
            try:
                self.pm.subset_hook_caller(hook_name, remove_plugins=others)(register=registry)
            except PluginError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise PluginError(
                    f"plugin {impl.plugin_name!r} failed in {hook_name}: {type(exc).__name__}: {exc}"
                ) from exc
        return registry

    @cached_property
    def readers(self) -> Registry[Any]:
        """Dump readers, plugins first, built-in msProbe JSON reader last."""
        return self._collect("reader", "probe_register_readers")

    @cached_property
    def tensor_loaders(self) -> Registry[Any]:
        """Tensor-file loaders keyed by suffix."""
        return self._collect("tensor loader", "probe_register_tensor_loaders")

    @cached_property
    def normalizers(self) -> Registry[Any]:
        """Name normalizers."""
        return self._collect("normalizer", "probe_register_normalizers")

    @cached_property
    def mappers(self) -> Registry[Any]:
        """Mappers (data / cell / api / layer)."""
        return self._collect("mapper", "probe_register_mappers")

    @cached_property
    def pairers(self) -> Registry[Any]:
        """Pairers (exact, fuzzy, and plugins')."""
        return self._collect("pairer", "probe_register_pairers")

    @cached_property
    def modes(self) -> Registry[Any]:
        """Metric modes."""
        return self._collect("metric mode", "probe_register_modes")

    @cached_property
    def tensor_metrics(self) -> Registry[Any]:
        """Extra tensor-mode metric columns."""
        return self._collect("tensor metric", "probe_register_tensor_metrics")

    @cached_property
    def exporters(self) -> Registry[Any]:
        """Exporters keyed by format name."""
        return self._collect("exporter", "probe_register_exporters")

    @cached_property
    def commands(self) -> Registry[Any]:
        """CLI sub-commands."""
        return self._collect("command", "probe_register_commands")

    @cached_property
    def analyzers(self) -> Registry[Any]:
        """Post-compare analyzers."""
        return self._collect("analyzer", "probe_register_analyzers")

    @cached_property
    def graph_rules(self) -> Registry[Any]:
        """Framework knowledge for the graph builder and parallel merge."""
        return self._collect("graph rules", "probe_register_graph_rules")

    def add_compare_options(self, parser: Any) -> None:
        """Let plugins add options to ``probe compare``."""
        self.pm.hook.probe_add_compare_options(parser=parser)

    def plan_compare(self, request: Any) -> list[PairPlan]:
        """Ask plugins (then the built-in planner) how to split a compare into :class:`PairPlan` s."""
        plans = self.pm.hook.probe_plan_compare(request=request)
        for plan in plans:
            if not isinstance(plan, PairPlan):
                raise PluginError(f"probe_plan_compare returned {type(plan).__name__}, not a PairPlan")
        return plans

    def detect_framework(self, path: str) -> str | None:
        """Ask plugins which framework wrote the dump at ``path``."""
        return self.pm.hook.probe_detect_framework(path=path)


_HOST: Host | None = None


def default_host() -> Host:
    """The process-wide host with entry-point plugins (built on first use).

    Worker processes call this to rebuild the host instead of receiving it pickled.
    """
    global _HOST
    if _HOST is None:
        _HOST = Host()
    return _HOST
