"""JSON text byte-for-byte as Go's ``encoding/json`` writes it, for TF_CONFIG and MX_CONFIG.

Programs parse these env vars, and users compare them with what upstream produced, so the
text must match: no spaces, ``<``, ``>`` and ``&`` escaped, U+2028/U+2029 escaped, other
non-ASCII left as is. Key order is the caller's: Go writes struct fields in declaration order
and map keys sorted, so callers build dicts in that order. Pure.
"""

from __future__ import annotations

import json
from typing import Any

_GO_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def marshal(value: Any) -> str:
    """Compact JSON; the characters Go escapes appear only inside strings, so this is safe."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(_GO_ESCAPES)


def sorted_map(mapping: dict[str, Any]) -> dict[str, Any]:
    """A Go map as ``encoding/json`` writes it: keys in byte order."""
    return {key: mapping[key] for key in sorted(mapping, key=lambda k: k.encode())}
