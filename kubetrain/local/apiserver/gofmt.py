"""Strings quoted as Go's ``strconv.Quote`` (``%q``) prints them.

kube-apiserver builds its messages with Go's fmt, and users and tests match those messages
word for word, so every module that quotes a value in a message uses this one function.
Pure: no I/O.
"""

from __future__ import annotations


def go_quote(text: str) -> str:
    """``strconv.Quote``: double quotes, Go escapes, printable Unicode kept as is."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}
