"""construct.json's ``{entry: enclosing module call}`` kept without its entries' names.

A dict of construct.json holds every entry's name as a string (about 155 bytes an entry with the
dict's slots); the diagnosis only asks, a window of entries at a time, which module encloses each.
:class:`ParentMap` keeps the entries' string hashes (sorted, 8 bytes) and the number of their
module (4 bytes), with each module's name once: answers are looked up by hash, a window at a
time, and equal a dict's (the hashes are this process's, shared by its forked children only).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from probe.strhash import ForkLocal, lookup, string_hashes

class ParentMap(ForkLocal):
    """Each entry's enclosing module call (``""`` when construct.json names none), looked up a list at a time.

    ``hashes`` holds the entries' string hashes, sorted, and ``codes`` the number of each one's module in
    ``modules`` (which ends with ``""``, the answer for an entry not in the map). Two different names with
    one hash, never seen in practice, would share the later one's module."""

    _HOLDS = "a parent map"

    def __init__(self, hashes: Any, codes: Any, modules: list[str]) -> None:
        self.hashes, self.codes, self.modules = hashes, codes, modules

    @classmethod
    def of(cls, parts: Iterable[Mapping[str, Any]]) -> ParentMap:
        """The members of ``parts`` merged in order (a later member of the same name wins), without those whose
        value is not text (modules without a parent: null); each distinct module name kept once."""
        import numpy as np  # not at start-up

        numbers: dict[str, int] = {}
        modules: list[str] = []
        hashes, codes = [], []
        for part in parts:
            values = list(part.values())
            try:
                found = list(map(numbers.get, values))  # the usual member: a module met before
            except TypeError:  # an unhashable value (a list): not text
                found = [None] * len(values)
            for i in [i for i, code in enumerate(found) if code is None]:
                value = values[i]
                if value.__class__ is not str:
                    found[i] = -1
                    continue
                code = numbers.get(value)
                if code is None:
                    code = numbers[value] = len(modules)
                    modules.append(value)
                found[i] = code
            hashes.append(string_hashes(part, len(values)))
            codes.append(np.array(found, np.int32))
        if not modules:
            return cls.empty()
        every = np.concatenate(hashes)
        order = np.argsort(every)
        if bool((every[order][1:] == every[order][:-1]).any()):  # a name given twice: the last one wins
            order = np.argsort(every, kind="stable")
        every, code = every[order], np.concatenate(codes)[order]
        last = np.ones(len(every), bool)
        last[:-1] = every[1:] != every[:-1]
        last &= code >= 0
        return cls(every[last], code[last], modules + [""])

    @classmethod
    def empty(cls) -> ParentMap:
        """A map that knows no entry."""
        return cls((), (), [""])

    def __len__(self) -> int:
        return len(self.hashes)

    def modules_of(self, entries: Sequence[str]) -> list[str]:
        """The enclosing module call of each of ``entries`` (``""`` for those the map does not know)."""
        modules = self.modules
        if not len(self.hashes) or not entries:
            return list(repeat("", len(entries)))
        import numpy as np

        hashes = self.hashes
        wanted = string_hashes(entries, len(entries))
        by = np.argsort(wanted)  # looked up in order: several times faster than at random
        at, hit = lookup(hashes, wanted[by])
        codes = np.empty(len(entries), np.intp)
        codes[by] = np.where(hit, self.codes[at], len(modules) - 1)
        return [modules[code] for code in codes.tolist()]
