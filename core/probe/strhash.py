"""Strings kept as this process's hashes: sorted ``int64`` arrays looked up a list at a time.

An index that keeps its strings' hashes instead of the strings costs 8 bytes an entry, but a
string's hash is salted per interpreter, so the arrays mean something only in the process that
made them and in its forked children. :class:`ForkLocal` makes a pickled holder of such arrays
refuse to load anywhere else. A hash two different strings share, never seen in practice, can at
most make a look-up find the other string's entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

_SALT = "probe.strhash"
"""Hashed when a holder is pickled and again when it is unpickled: equal only in processes that
share the string hashes."""


def string_hashes(texts: Iterable[str], count: int) -> Any:
    """The hashes of the ``count`` strings of ``texts``, as an ``int64`` array."""
    import numpy as np  # not at start-up

    return np.fromiter(map(hash, texts), np.int64, count)


def lookup(hashes: Any, wanted: Any) -> tuple[Any, Any]:
    """``(at, hit)`` for each of ``wanted`` in the sorted, non-empty ``hashes``: the position it would
    take (within bounds) and whether the hash there is its own."""
    import numpy as np

    at = np.searchsorted(hashes, wanted)
    np.minimum(at, len(hashes) - 1, out=at)
    return at, hashes[at] == wanted


class ForkLocal:
    """A holder of string hashes that unpickles only where they were made (or in a forked child)."""

    _HOLDS: ClassVar[str] = "an index"
    """What the holder is, for the message of a refused load."""

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_salt": hash(_SALT)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.pop("_salt") != hash(_SALT):
            raise TypeError(f"{self._HOLDS} holds string hashes of the process that made it: it crosses only "
                            "between that process and its forked children")
        self.__dict__.update(state)
