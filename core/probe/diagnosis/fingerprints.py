"""The fingerprints of the outputs a rank's earlier entries produced, most of them in one sorted array.

Diagnosis asks, for an input of a forward call, whether an earlier call produced a tensor of the
same fingerprint (:func:`probe.diagnosis.facts._fingerprint`). A set of every output's fingerprint
costs about 100 bytes an entry; here only the latest :data:`RECENT` of them stay in the set, the
older ones that are two packed floats (almost all) move to a sorted array of 16 bytes each, and a
bit per hash (:data:`BITS` bytes) answers most questions about them without searching it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

RECENT = 1 << 16
"""Fingerprints kept in the set itself before the older ones move to the array."""
BITS = 1 << 21
"""Bytes of the bit table of the moved fingerprints' hashes (fixed: 16M bits)."""
_MASK = BITS - 1
_PAIR = struct.Struct("<2d")


class Fingerprints(set):
    """A set of fingerprints (bytes, or tuples holding a NaN) whose older 16-byte members (two packed
    floats, neither a NaN nor ``-0.0``) are kept as ``complex128`` numbers in a sorted array: equal
    numbers are equal bytes, and complex numbers sort by their real then their imaginary part.
    Only ``in`` sees the moved ones (``len`` and iteration count the set's own members)."""

    def __init__(self, items: Iterable[Any] = (), recent: int | None = None) -> None:
        super().__init__(items)
        self.recent = self.limit = RECENT if recent is None else recent
        self.older: Any = None
        """The moved fingerprints, sorted (a numpy array; ``None`` before the first move)."""
        self.bits = bytearray()

    def __contains__(self, fp: object) -> bool:
        if set.__contains__(self, fp):
            return True
        older = self.older
        if older is None or fp.__class__ is not bytes or len(fp) != 16:  # type: ignore[arg-type]
            return False
        h = hash(fp)
        if not self.bits[(h >> 3) & _MASK] >> (h & 7) & 1:
            return False
        number = complex(*_PAIR.unpack(fp))  # type: ignore[arg-type]
        at = older.searchsorted(number)
        return bool(at < len(older) and older[at] == number)

    def spill(self) -> None:
        """Move the 16-byte fingerprints to the array once the set holds more than its share."""
        if set.__len__(self) <= self.limit:
            return
        import numpy as np  # not at start-up

        moved = [fp for fp in set.__iter__(self) if fp.__class__ is bytes and len(fp) == 16]
        if self.older is None:
            self.older = np.empty(0, np.complex128)
            self.bits = bytearray(BITS)
        numbers = np.sort(np.frombuffer(b"".join(moved), "<c16"))
        at = np.searchsorted(self.older, numbers)
        new = self.older[np.minimum(at, len(self.older) - 1)] != numbers if len(self.older) else slice(None)
        self.older = np.insert(self.older, at[new], numbers[new])  # moved again after being met again: once
        hashes = np.fromiter(map(hash, moved), np.int64, len(moved)).view(np.uint64)
        np.bitwise_or.at(np.frombuffer(self.bits, np.uint8), (hashes >> np.uint64(3)) & np.uint64(_MASK),
                         (np.uint8(1) << (hashes & np.uint64(7)).astype(np.uint8)))
        self.difference_update(moved)
        self.limit = set.__len__(self) + self.recent  # the others (rare) stay in the set
