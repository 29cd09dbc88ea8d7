"""``probe match`` output: a ``-dm`` mapping YAML (confidence as comments) and a JSON list."""

from __future__ import annotations

import json
from pathlib import Path

from probe.automatch.matcher import REVIEW_CONFIDENCE, MatchResult
from probe.io import atomic_write, unique_path


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escaping is valid YAML) for any name."""
    return json.dumps(text, ensure_ascii=True)


def mapping_yaml(result: MatchResult) -> str:
    """The ``-dm`` file: one ``"target": "golden"`` line per row (``"N/A"`` without a partner).

    The confidence of each pair is a comment; ``-dm`` with this file reproduces the pairs.
    """
    lines = [
        "# probe match: target row -> golden row (use with: probe compare -dm THIS_FILE)",
        f"# a pair marked 'review' has a confidence below {REVIEW_CONFIDENCE}; N/A: no partner found",
    ]
    for row in result.rows:
        if row.golden is None:
            lines.append(f"{_quoted(row.target)}: \"N/A\"  # no partner")
            continue
        flag = "  review" if row.confidence < REVIEW_CONFIDENCE else ""
        lines.append(f"{_quoted(row.target)}: {_quoted(row.golden)}  # confidence {row.confidence:.3f}{flag}")
    if len(lines) == 2:
        lines.append("{}")
    return "\n".join(lines) + "\n"


def write_match_files(result: MatchResult, directory: Path, stamp: str) -> list[Path]:
    """Write ``mapping_{stamp}.yaml`` and ``match_{stamp}.json`` atomically; return both paths."""
    yaml_path = unique_path(directory, f"mapping_{stamp}", ".yaml")
    json_path = unique_path(directory, f"match_{stamp}", ".json")
    with atomic_write(yaml_path, encoding="utf-8") as handle:
        handle.write(mapping_yaml(result))
    with atomic_write(json_path, encoding="utf-8") as handle:
        json.dump([row.to_dict() for row in result.rows], handle, indent=1, ensure_ascii=True)
        handle.write("\n")
    return [yaml_path, json_path]
