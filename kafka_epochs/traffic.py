"""Captured traffic, decoded: the pipeline (:mod:`kafka_epochs.exchanges`) and its rendering
(:mod:`kafka_epochs.rendering`) under one name.

:func:`decode_capture` yields an :class:`Exchange` per request/response pair (and per thing that
could not be paired or decoded, so nothing is dropped); :func:`exchange_json` renders one as a
JSON-ready dict, as ``kafka-epochs decode`` prints it.
"""

from __future__ import annotations

from kafka_epochs.exchanges import SASL_TOKENS, DecodeSummary, Exchange, Kind, api_name, decode_capture
from kafka_epochs.rendering import SASL_AUTHENTICATE, error_codes, exchange_json

__all__ = [
    "SASL_AUTHENTICATE",
    "SASL_TOKENS",
    "DecodeSummary",
    "Exchange",
    "Kind",
    "api_name",
    "decode_capture",
    "error_codes",
    "exchange_json",
]
