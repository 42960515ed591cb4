"""Raw SASL tokens: which frames of a connection carry no Kafka header at all.

After a successful ``SaslHandshake`` **v0**, client and broker exchange the mechanism's tokens as
bare size-prefixed frames (no api key, no correlation id) until authentication is done, then go
back to Kafka requests. (From handshake v1 on, tokens travel inside ``SaslAuthenticate``
requests instead, which decode like any other api.) :class:`SaslTokens` follows one connection
and says which frames are such tokens; it owns no bytes and decodes nothing itself, so framing
and the Spark capture source can share it.

The end of the token exchange is not announced on the wire: a client frame ends it when it reads
as a Kafka request (the caller says so); mechanisms' tokens never do (a PLAIN token starts with
an authorization id or a NUL, SCRAM's with ``n,`` or ``c=``, GSSAPI's with an ASN.1 tag).
"""

from __future__ import annotations

from collections.abc import Callable, Container

SASL_HANDSHAKE = 17


class SaslTokens:
    """The SASL state of one connection, fed its frames in order."""

    __slots__ = ("active", "asked", "mechanism", "unanswered")

    def __init__(self) -> None:
        self.active = False  # tokens are being exchanged now
        self.mechanism: str | None = None
        self.unanswered = 0  # client tokens the broker has not answered yet
        #: correlation id of a v0 handshake not answered yet -> its mechanism
        self.asked: dict[int, str] = {}

    def handshake(self, correlation_id: int, version: int, mechanism: str) -> None:
        """A SaslHandshake request went out."""
        if version == 0:
            self.asked[correlation_id] = mechanism

    def answered(self, correlation_id: int, error_code: int) -> None:
        """A SaslHandshake response came back: a v0 handshake that succeeded starts the tokens."""
        mechanism = self.asked.pop(correlation_id, None)
        if mechanism is not None and error_code == 0:
            self.active, self.mechanism, self.unanswered = True, mechanism, 0

    def client_token(self, frame: bytes, is_request: Callable[[bytes], bool]) -> bool:
        """Whether a client frame is a raw token; a Kafka request ends the token exchange."""
        if not self.active:
            return False
        if is_request(frame):
            self.active = False
            return False
        self.unanswered += 1
        return True

    def broker_token(self, frame: bytes, pending: Container[int], correlation_id: int | None) -> bool:
        """Whether a broker frame is a raw token: the answer to a client token, or a frame that
        answers no pending request while tokens are being exchanged."""
        if self.unanswered:
            self.unanswered -= 1
            return True
        return self.active and (correlation_id is None or correlation_id not in pending)
