"""Strings that are not UTF-8 read as Kafka's Java side reads them (``new String(bytes, UTF_8)``:
a U+FFFD per bad sequence), with a warning naming the field; ``strict=True`` refuses them.

Before, one bad byte in a client id failed every frame of its connection."""

from __future__ import annotations

import io

import pytest

from kafka_epochs import DecodeError, Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.traffic import decode_capture

AUTO = Protocol.auto()
Metadata = AUTO.message("MetadataRequest")
DescribeGroups = AUTO.message("DescribeGroupsRequest")
T0 = 1_700_000_000_000_000_000
NOTE = "read with U+FFFD replacements (as Kafka's Java side reads it)"


def _metadata(version: int) -> bytes:
    body = Metadata(topics=[Metadata.MetadataRequestTopic(name="orders"), Metadata.MetadataRequestTopic(name="bills")])
    frame = AUTO.encode_request(body, version, correlation_id=3, client_id="abcdef")
    return frame.replace(b"abcdef", b"ab\xff\xfeef").replace(b"bills", b"bi\xc3(s")


@pytest.mark.parametrize("version", [4, 12])  # a plain header and body, and flexible ones
def test_bad_bytes_in_the_header_and_the_body_read_with_replacements(version: int) -> None:
    decoded = AUTO.decode_request(_metadata(version))
    assert decoded.header.client_id == "ab\ufffd\ufffdef"
    assert [t.name for t in decoded.body.topics] == ["orders", "bi\ufffd(s"]
    assert decoded.warnings == [f"invalid UTF-8 in client_id {NOTE}", f"invalid UTF-8 in topics[1].name {NOTE}"]
    assert decoded.problem is None  # tolerated, as a broker does: a warning, not a problem
    with pytest.raises(
        DecodeError, match=r"invalid UTF-8 in string: invalid start byte in RequestHeader v\d.client_id"
    ):
        AUTO.decode_request(_metadata(version), strict=True)


def test_an_element_of_a_string_array() -> None:
    frame = AUTO.encode_request(DescribeGroups(groups=["g1", "gx", "g3"]), 5, correlation_id=1, client_id="c")
    decoded = AUTO.decode_request(frame.replace(b"gx", b"g\x80"))
    assert decoded.body.groups == ["g1", "g\ufffd", "g3"]
    assert decoded.warnings == [f"invalid UTF-8 in groups[1] {NOTE}"]


def test_other_damage_is_still_an_error() -> None:
    """A bad string beside a length that runs past the frame: the length is what is said."""
    frame = bytearray(_metadata(4))
    at = frame.index(b"bi\xc3(s") - 2
    frame[at : at + 2] = b"\x7f\xff"
    with pytest.raises(
        DecodeError, match=r"truncated: string of length 32767 .* in MetadataRequest v4.topics\[1\].name"
    ):
        AUTO.decode_request(bytes(frame))


def test_a_connection_whose_client_id_is_not_utf8_decodes() -> None:
    good = AUTO.encode_request(Metadata(topics=None), 4, correlation_id=1, client_id="abcdef")
    bad = good.replace(b"abcdef", b"ab\xff\xfeef")
    response = AUTO.encode_response(AUTO.message("MetadataResponse")(), 4, correlation_id=1)
    capture = io.BytesIO()
    write_capture(
        capture,
        [
            RecordedConnection(
                ("10.0.0.1", 5000), ("10.0.0.2", 9092), [(T0, "client", bad), (T0 + 10, "broker", response)]
            )
        ],
    )
    (exchange,) = decode_capture(io.BytesIO(capture.getvalue()), AUTO)
    assert exchange.ok and exchange.request is not None and exchange.response is not None
    assert exchange.request.warnings == [f"invalid UTF-8 in client_id {NOTE}"]
    assert exchange.request.decoded is not None and exchange.request.decoded.header.client_id == "ab\ufffd\ufffdef"
