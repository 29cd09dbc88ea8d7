"""Self-contained HTML pages: a template filled in one pass, data as inert gzip+base64 blocks, and a
Content-Security-Policy that lets only the page's own inline script and style run (no network).

Data never reaches the markup: it is embedded as base64 (whose alphabet cannot close a tag) and
the scripts put it on the page as text only.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

import orjson

_SLOT = re.compile(r"__TITLE__|__CSP__|__BLOBS__|/\*__CSS__\*/|/\*__JS__\*/")


def asset(name: str) -> str:
    """The text of ``probe/viewer/assets/<name>``."""
    return resources.files("probe.viewer").joinpath("assets", name).read_text(encoding="utf-8")


class Encoded(str):
    """A data block already encoded by :func:`encode` (a page holds it as it is)."""


def encode(data: Any) -> Encoded:
    """``data`` as base64 of gzip-compressed JSON (what the pages embed)."""
    return Encoded(base64.b64encode(gzip.compress(orjson.dumps(data), compresslevel=6, mtime=0)).decode("ascii"))


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def csp(script: str, style: str) -> str:
    """The policy: nothing may load (no network, no other script/style/frame/form); only the inline
    script and style whose hashes are given run."""
    return (
        f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
        "base-uri 'none'; form-action 'none'"
    )


def render_page(template: str, title: str, scripts: Iterable[str], styles: Iterable[str],
                blobs: Mapping[str, Any]) -> str:
    """Fill ``template`` (an asset): title, policy, CSS, JS and one inert data block per blob id."""
    script = "\n".join(asset(name) for name in scripts)
    style = "\n".join(asset(name) for name in styles)
    if "</script" in script.lower() or "</style" in style.lower():
        raise ValueError("an asset closes its own tag")
    blocks = "\n".join(
        f'<script id="{html.escape(key)}" type="application/octet-stream" data-encoding="gzip+base64">'
        f"{value if isinstance(value, Encoded) else encode(value)}</script>"
        for key, value in blobs.items()
    )
    # the hashed text must be exactly the element's text: the template wraps the slots in newlines
    script_text, style_text = f"\n{script}\n", f"\n{style}\n"
    values = {
        "__TITLE__": html.escape(title),
        "__CSP__": html.escape(csp(script_text, style_text)),
        "__BLOBS__": blocks,
        "/*__CSS__*/": style,
        "/*__JS__*/": script,
    }
    return _SLOT.sub(lambda m: values[m.group(0)], asset(template))
