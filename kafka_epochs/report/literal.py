"""Text from a capture as the report shows it: literally, with what cannot be shown spelled out.

Topic names, client ids and file names come from the traffic, so they can hold anything a peer
sent: ``$...$`` (which matplotlib would typeset as math), control characters (NUL and ESC are not
even allowed in an HTML or SVG document), lone surrogates (which no UTF-8 file can hold). The
report draws and prints such text as it is, with each unshowable character written as its
Python escape (``\\x00``, ``\\x1b``, ``\\ud800``), so two different names never look alike.
"""

from __future__ import annotations

import re

__all__ = ["literal"]

# C0 controls, DEL, C1 controls, and surrogates (which only a lone, undecodable one can be here)
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def literal(text: object) -> str:
    """``str(text)`` with every control character and lone surrogate spelled as its escape."""
    shown = str(text)
    if _UNSHOWABLE.search(shown) is None:
        return shown
    return _UNSHOWABLE.sub(_spelled, shown)


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
