"""TorchAir's per-rank directories (``worldsize{N}_global_rank{r}``), found without the GE
parsing modules: framework detection runs this for every compare."""

from __future__ import annotations

import os
import re
from pathlib import Path

_RANK_DIR = re.compile(r"^worldsize.*rank(\d+)$")


def rank_dirs(root: Path) -> dict[int, Path]:
    """``worldsize*_global_rank{r}`` sub-directories of ``root`` by rank number."""
    found: dict[int, Path] = {}
    if not root.is_dir():
        return found
    for name in sorted(os.listdir(root)):
        match = _RANK_DIR.match(name)
        if match and (root / name).is_dir():
            found[int(match.group(1))] = root / name
    return found
