"""Kafka's text form of a uuid, written and read in one place.

Kafka shows a uuid (a topic id, say) as 22 characters of unpadded base64url (``Uuid.toString``).
Reading accepts that form and the canonical hyphenated one; anything else (other lengths, braces,
``urn:uuid:``, base64 whose unused low bits are set) is refused, since an id that could be read
two ways is not an id.
"""

from __future__ import annotations

import binascii
import re
import uuid
from binascii import a2b_base64, b2a_base64  # (base64's primitives: base64 itself costs every start a millisecond)

#: base64url's two letters of its own, from and to standard base64's
_TO_URLSAFE, _FROM_URLSAFE = bytes.maketrans(b"+/", b"-_"), bytes.maketrans(b"-_", b"+/")
# (patterns as text: ``re`` compiles them at the first uuid read from text, not at every start)
_BASE64URL = r"[A-Za-z0-9_-]{22}"
_HYPHENATED = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def uuid_text(value: uuid.UUID) -> str:
    """Kafka's text form of ``value``: unpadded base64url, 22 characters."""
    return b2a_base64(value.bytes, newline=False).translate(_TO_URLSAFE).decode("ascii").rstrip("=")


def parse_uuid(text: str) -> uuid.UUID:
    """A uuid from Kafka's base64url form or the hyphenated form; ValueError for anything else."""
    if re.fullmatch(_BASE64URL, text):
        try:
            value = uuid.UUID(bytes=a2b_base64(text.encode("ascii").translate(_FROM_URLSAFE) + b"=="))
        except (binascii.Error, ValueError) as e:  # pragma: no cover - the pattern admits only valid base64
            raise ValueError(f"not a base64url uuid: {text!r}") from e
        # 22 characters hold 132 bits for 128: the text must be the one Kafka would write
        if uuid_text(value) != text:
            raise ValueError(f"not the canonical base64url form of a uuid: {text!r}")
        return value
    if re.fullmatch(_HYPHENATED, text):
        return uuid.UUID(text)
    raise ValueError(f"not a uuid in Kafka's base64url form or the hyphenated form: {text!r}")
