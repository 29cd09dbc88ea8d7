"""Typed register objects handed to the ``probe_register_*`` hooks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from probe.errors import InputError, PluginError

T = TypeVar("T")


@dataclass(frozen=True)
class Registered(Generic[T]):
    """One registered object and the plugin that registered it."""

    name: str
    value: T
    plugin: str


class Registry(Generic[T]):
    """Name -> object map filled by one registration hook.

    ``add`` refuses a name that another plugin already registered, naming both plugins.
    Iteration follows registration order.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Registered[T]] = {}
        self._current_plugin = "?"

    def add(self, name: str, value: T) -> None:
        """Register ``value`` under ``name`` for the plugin currently being asked."""
        key = name.lower()
        if key in self._items:
            other = self._items[key].plugin
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by plugin {other!r} "
                f"and by plugin {self._current_plugin!r}"
            )
        self._items[key] = Registered(name, value, self._current_plugin)

    def get(self, name: str) -> T:
        """Return the object registered as ``name`` or raise a one-line error listing valid names."""
        item = self._items.get(name.lower())
        if item is None:
            raise InputError(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}")
        return item.value

    def find(self, name: str) -> T | None:
        """Return the object registered as ``name`` or ``None``."""
        item = self._items.get(name.lower())
        return item.value if item else None

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return [item.name for item in self._items.values()]

    def values(self) -> list[T]:
        """Registered objects, in registration order."""
        return [item.value for item in self._items.values()]

    def as_dict(self) -> dict[str, T]:
        """``{lower-case name: object}``, a plain dict that pickles when the objects do."""
        return {key: item.value for key, item in self._items.items()}

    def entries(self) -> Iterator[Registered[T]]:
        """Registered items with the plugin that added each."""
        return iter(self._items.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __len__(self) -> int:
        return len(self._items)
