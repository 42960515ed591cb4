"""Produce and Fetch keep ``records`` as bytes; ``decode_records`` reads them on request."""

from __future__ import annotations

from kafka_epochs import Protocol
from kafka_epochs.records import (
    Compression,
    LegacyMessage,
    Record,
    RecordBatch,
    decode_records,
    encode_batch,
    encode_legacy,
)


def test_fetch_response_records_decode_on_request() -> None:
    fetch = Protocol.bundled().message("FetchResponse")
    mod = __import__(fetch.__module__, fromlist=["PartitionData"])
    records = encode_batch(
        [Record(offset_delta=i, value=b"v%d" % i) for i in range(3)], base_offset=10, compression=Compression.ZSTD
    )
    cut = records + records[:20]  # the broker stopped at the fetch size, inside the next batch
    response = fetch(
        responses=[
            mod.FetchableTopicResponse(
                topic="t", partitions=[mod.PartitionData(partition_index=0, high_watermark=13, records=cut)]
            )
        ]
    )
    again = fetch.decode(response.encode(11), 11)
    field = again.responses[0].partitions[0].records
    assert field == cut  # still bytes after the message decode
    decoded = decode_records(field)
    [batch] = decoded.entries
    assert isinstance(batch, RecordBatch)
    assert [r.offset for r in batch.records] == [10, 11, 12]
    assert decoded.truncated_tail == 20


def test_produce_request_records_decode_on_request() -> None:
    produce = Protocol.bundled().message("ProduceRequest")
    mod = __import__(produce.__module__, fromlist=["TopicProduceData"])
    records = encode_legacy([LegacyMessage(offset=0, value=b"old client")], magic=1, compression=Compression.GZIP)
    request = produce(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            mod.TopicProduceData(name="t", partition_data=[mod.PartitionProduceData(index=0, records=records)])
        ],
    )
    again = produce.decode(request.encode(3), 3)
    [wrapper] = decode_records(again.topic_data[0].partition_data[0].records, allow_truncated_tail=False).entries
    assert isinstance(wrapper, LegacyMessage) and wrapper.inner is not None
    assert wrapper.inner[0].value == b"old client"
