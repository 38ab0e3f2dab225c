"""Text from logs and users, made safe to show: control characters visible, rich markup inert.

A request id, account id, model name or path can hold anything a client sent: ANSI / OSC escape
sequences that repaint or retitle a terminal, bidi overrides that reorder what is read, or rich markup
(`[link=…]`, `[/x]`) that would be interpreted, vanish or crash the renderer. Everything kvir prints
passes through `visible` (and `markup_escape` where it is embedded in kvir's own markup).
"""
from __future__ import annotations

import unicodedata

# Characters shown as escapes: C0/C1 controls (ESC starts ANSI/OSC sequences), DEL, and the format
# characters that change how text reads (bidi overrides and isolates, zero-width joiners, BOM).
_SHOWN = {"Cc", "Cf", "Zl", "Zp"}


def visible(value: object) -> str:
    """str(value) with every control or format character written as an escape (\\x1b, \\u202e, \\n)."""
    text = "" if value is None else str(value)
    if text.isprintable():          # the common case: nothing to change (fast path)
        return text
    out = []
    for ch in text:
        if unicodedata.category(ch) in _SHOWN or not ch.isprintable() and ch != " ":
            code = ord(ch)
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or
                       (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"))
        else:
            out.append(ch)
    return "".join(out)


def markup_escape(value: object) -> str:
    """visible(value), with rich markup escaped, for text embedded in a markup string."""
    from rich.markup import escape

    return escape(visible(value))
