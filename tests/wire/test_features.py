"""Every attribute of the spec format, checked against bytes written out by hand from the spec."""

from __future__ import annotations

import uuid

import pytest

from kafka_epochs import DecodeError, EncodeError, UnsupportedVersionError

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")

# FeatureTourRequest v2 (flexible) with every kind of field set away from its default.
# Each line is one field, computed from the layout in tests/specs/features/FeatureTourRequest.json.
V2_BYTES = bytes.fromhex(
    "".join(
        [
            "00000001",  # id = 1 (int32)
            "ffff",  # port = 65535 (uint16)
            "00000007",  # big = 7 (uint32, v1+)
            "c000000000000000",  # ratio = -2.0 (float64)
            "00",  # label = null (compact nullable string: 0)
            "00026162",  # legacy = "ab": int16 length, because flexibleVersions is "none" for it
            "030102",  # blob = 01 02: compact length 2+1
            "02aa",  # batches = aa (records, compact)
            "00112233445566778899aabbccddeeff",  # topic_id
            "ff",  # owner = null (nullable struct marker -1)
            "02",  # items: compact count 1+1
            "026b",  # items[0].key = "k"
            "030001ffff",  # items[0].flags = [1, -1]
            "010002026e",  # items[0] tags: 1 tag; tag 0 (note), 2 bytes: compact "n"
            "00",  # ids = null (compact nullable array)
            "03",  # message tags: 3 entries, in tag order
            "00080000000000000005",  # tag 0 extra = 5
            "010402780300",  # tag 1 inner = Person(name="x", age=3) with its empty tag section
            "0502beef",  # unknown tag 5 kept from an earlier decode
        ]
    )
)


@pytest.fixture(scope="module")
def tour(features_protocol):  # type: ignore[no-untyped-def]
    return features_protocol.message("FeatureTourRequest")


def v2_object(tour):  # type: ignore[no-untyped-def]
    mod = __import__(tour.__module__, fromlist=["Item", "Person"])
    obj = tour(
        id=1,
        port=65535,
        big=7,
        ratio=-2.0,
        label=None,
        legacy="ab",
        blob=b"\x01\x02",
        batches=b"\xaa",
        topic_id=TOPIC,
        owner=None,
        items=[mod.Item(key="k", flags=[1, -1], note="n")],
        ids=None,
        extra=5,
        inner=mod.Person(name="x", age=3),
    )
    obj._unknown_tags = {5: b"\xbe\xef"}
    return obj


def test_flexible_version_matches_hand_computed_bytes(tour) -> None:  # type: ignore[no-untyped-def]
    obj = v2_object(tour)
    assert obj.encode(2) == V2_BYTES
    decoded = tour.decode(V2_BYTES, 2)
    assert decoded == obj
    assert decoded._unknown_tags == {5: b"\xbe\xef"}
    assert decoded.encode(2) == V2_BYTES


def test_defaults_come_from_the_spec(tour) -> None:  # type: ignore[no-untyped-def]
    obj = tour()
    assert obj.id == 0x10  # "0x10"
    assert obj.port == 9092
    assert obj.big == 0xFFFFFFFF
    assert obj.ratio == 0.5
    assert obj.topic_id == uuid.UUID(int=1)  # base64url "AAAAAAAAAAAAAAAAAAAAAQ"
    assert obj.batches is None  # records default to null
    assert obj.items == [] and obj.items is not tour().items  # fresh list per object
    assert obj.owner is not None and obj.owner.age == -1


def test_non_flexible_version_bytes(tour) -> None:  # type: ignore[no-untyped-def]
    mod = __import__(tour.__module__, fromlist=["Item", "Person"])
    obj = tour(
        id=2,
        port=1,
        ratio=0.0,
        label="",
        legacy="",
        blob=b"",
        batches=None,
        owner=mod.Person(name="a", age=1),
        items=[mod.Item(key="t", flags=[])],
        dropped=9,
        kept=True,
    )
    expected = bytes.fromhex(
        "".join(
            [
                "00000002",
                "0001",
                "0000000000000000",  # id, port, ratio (no `big` in v0)
                "0000",
                "0000",
                "00000000",  # label "", legacy "", blob b"" (int32 length)
                "ffffffff",  # batches null
                "00016101",  # owner: not nullable in v0, so no marker
                "0000000100017400000000",  # items: one item "t" with no flags
                "09",
                "01",  # dropped = 9, kept = true
            ]
        )
    )
    assert obj.encode(0) == expected
    assert tour.decode(expected, 0) == obj


def test_tagged_field_at_default_is_not_written(tour) -> None:  # type: ignore[no-untyped-def]
    data = tour().encode(3)
    assert data.endswith(b"\x01\x01\x00")  # items empty, ids empty, no tags at all


def test_non_ignorable_field_missing_from_version_is_an_error(tour) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EncodeError, match=r"kept.*version 2"):
        tour(kept=True).encode(2)
    with pytest.raises(EncodeError, match=r"names.*version 2"):
        tour(names=["a"]).encode(2)


def test_ignorable_field_missing_from_version_is_dropped(tour) -> None:  # type: ignore[no-untyped-def]
    assert tour(dropped=7).encode(2) == tour().encode(2)


def test_null_in_a_version_that_is_not_nullable_is_an_encode_error(tour) -> None:  # type: ignore[no-untyped-def]
    tour(label=None).encode(1)
    with pytest.raises(EncodeError, match="FeatureTourRequest v0"):
        tour(label=None).encode(0)


def test_out_of_range_value_is_an_encode_error(tour) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EncodeError):
        tour(port=70000).encode(0)


def test_unknown_version(tour) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnsupportedVersionError):
        tour().encode(4)
    with pytest.raises(UnsupportedVersionError):
        tour.decode(b"", 9)


def test_known_tag_invalid_for_the_version_is_a_decode_error(tour) -> None:  # type: ignore[no-untyped-def]
    # v2 bytes whose message tag section carries tag 2 (names), which only v3 has.
    data = tour().encode(2)[:-1] + bytes.fromhex("01020101")
    with pytest.raises(DecodeError, match=r"tag 2 \(Names\) is not valid in version 2") as info:
        tour.decode(data, 2)
    assert info.value.path == "names"
    assert info.value.offset == len(data) - 3
    assert tour.decode(data, 3).names == []


def test_class_metadata(tour) -> None:  # type: ignore[no-untyped-def]
    assert tour.API_KEY == 9000
    assert range(0, 4) == tour.VALID_VERSIONS
    assert range(2, 4) == tour.FLEXIBLE_VERSIONS
    assert range(0, 1) == tour.DEPRECATED_VERSIONS
    assert tour.LATEST_VERSION_UNSTABLE is True
    assert "port" in tour.__slots__ and not hasattr(tour(), "__dict__")


def test_to_dict_from_dict_json_ready(tour) -> None:  # type: ignore[no-untyped-def]
    import json

    obj = v2_object(tour)
    plain = obj.to_dict()
    text = json.dumps(plain)  # JSON-ready: no bytes, no UUID objects
    assert plain["topic_id"] == "ABEiM0RVZneImaq7zN3u/w".replace("/", "_")
    assert plain["blob"] == "AQI="
    assert plain["items"][0] == {"key": "k", "flags": [1, -1], "note": "n"}
    assert plain["_unknown_tags"] == {"5": "vu8="}
    assert tour.from_dict(json.loads(text)) == obj
    with pytest.raises(ValueError, match="no field 'nope'"):
        tour.from_dict({"nope": 1})


def test_repr_is_readable(tour) -> None:  # type: ignore[no-untyped-def]
    text = repr(tour(id=3))
    assert text.startswith("FeatureTourRequest(id=3, port=9092,")
    assert "owner=Person(name='', age=-1)" in text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"port": 70000}, r"port: 70000 is out of range for uint16 \(0\.\.65535\)"),
        ({"id": "7"}, r"id: expected an int for int32, got str"),
        ({"legacy": None}, r"legacy: None is not allowed \(the field is not nullable in version 1\)"),
        ({"legacy": "x" * 40000}, r"legacy: string of 40000 bytes is over Kafka's limit of 32767"),
        ({"topic_id": "not-a-uuid"}, r"topic_id: expected a uuid.UUID, got str"),
    ],
)
def test_encode_errors_name_the_field(tour, change, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EncodeError, match=message):
        tour(**change).encode(1)


def test_encode_error_path_inside_arrays(tour) -> None:  # type: ignore[no-untyped-def]
    obj = tour(items=[tour.Item(key="a"), tour.Item(key="b", flags=[1, 99999])])
    with pytest.raises(EncodeError, match=r"v2: items\[1\]\.flags\[1\]: 99999 is out of range for int16"):
        obj.encode(2)
    with pytest.raises(EncodeError, match=r"items\[0\]: None is not allowed"):
        tour(items=[None]).encode(2)
