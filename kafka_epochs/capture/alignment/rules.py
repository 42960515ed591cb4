"""How frame alignment recognises frame starts in each direction of a captured flow."""

from __future__ import annotations

import re

from kafka_epochs.capture.events import Flow
from kafka_epochs.direction import Direction
from kafka_epochs.resync import (
    MAX_FRAME_SIZE,
    REQUEST_CANDIDATES,
    RESPONSE_CANDIDATES,
    PlausibleFrame,
    plausible_request,
    plausible_response,
)
from kafka_epochs.values import FrozenValue

_set = object.__setattr__  # how a frozen value's __init__ sets its fields


class FrameRule(FrozenValue):
    """How to recognise frame starts in one direction, and the bounds frame alignment works within.

    ``lookahead``: bytes after an offset the predicate gets before it is asked (fewer only at the
    end of a stream). ``max_size``: a frame size above it (or below 0) at a boundary means the
    stream lost its framing. ``max_span``: a candidate frame is confirmed by a plausible frame
    right after it, so the bytes up to there are held back; a candidate longer than this is passed
    over rather than held, and a later frame is found instead.
    """

    __slots__ = ("candidates", "lookahead", "max_size", "max_span", "plausible")
    plausible: PlausibleFrame
    candidates: re.Pattern[bytes] | bytes | None  # (a pattern, or its text: compiled when first searched)
    lookahead: int
    max_size: int
    max_span: int

    def __init__(
        self,
        plausible: PlausibleFrame,
        candidates: re.Pattern[bytes] | bytes | None = None,
        lookahead: int = 64,
        max_size: int = MAX_FRAME_SIZE,
        max_span: int = 1024 * 1024,
    ) -> None:
        _set(self, "plausible", plausible)
        _set(self, "candidates", candidates)
        _set(self, "lookahead", lookahead)
        _set(self, "max_size", max_size)
        _set(self, "max_span", max_span)


REQUEST_RULE = FrameRule(plausible_request, REQUEST_CANDIDATES)
RESPONSE_RULE = FrameRule(plausible_response, RESPONSE_CANDIDATES)


def default_frame_rule(flow: Flow, direction: Direction) -> FrameRule:
    """The rule for a direction of a flow: the shape checks above, the same for every flow."""
    return REQUEST_RULE if direction is Direction.CLIENT_TO_BROKER else RESPONSE_RULE
