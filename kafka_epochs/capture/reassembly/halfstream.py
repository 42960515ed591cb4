"""One direction of a TCP connection: its byte stream, put in order from the segments captured.

Policy (see docs/captures.md):

* Sequence numbers become 64-bit stream offsets by taking, modulo 2**32, the value nearest the
  point delivered so far, so streams go past 4 GiB and across the 2**32 wrap-around.
* Data is delivered in stream order. A segment ahead of a hole waits in a buffer until the hole
  fills; retransmitted and overlapping bytes are dropped: **the first copy seen wins**, as a
  receiving TCP keeps it (RFC 9293, 3.10) and most intrusion-detection reassemblers do. Copies are
  not compared: bytes already handed on are not kept to compare with.
* A hole becomes a :class:`Gap` and the stream goes on after it when the bytes can no longer come:
  the receiver acknowledged them (``ACKED_UNSEEN``, only for holes with data after them: an ACK
  past the last byte may just be acknowledging a FIN that was not captured), waiting would exceed
  the buffer bound (``BUFFER_FULL``), the snapshot length cut them (``SNAPLEN``), or the stream
  ended (``CLOSED``). The buffer bound is on bytes and on the number of waiting pieces.
* A FIN ends the direction once every byte before it is in; bytes beyond a FIN are ignored.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from kafka_epochs.capture.events import (
    Direction,
    EndReason,
    Flow,
    FlowEvent,
    Gap,
    GapReason,
    StreamData,
    StreamEnd,
    StreamStart,
)
from kafka_epochs.capture.stats import CaptureStats

SEQ_MASK = 0xFFFFFFFF
HALF_SEQ_SPACE = 1 << 31

# A waiting piece of the stream: (start, end, data or None for bytes known lost, timestamp_ns, packet).
_Chunk = tuple[int, int, bytes | None, int, int]
# What a direction with nothing waiting holds: one shared empty list, never added to (the first
# piece to wait gets lists of its own).
_NOTHING: list[Any] = []


class HalfStream:
    """The reassembly state of one direction; events go to the ``out`` list each call is given."""

    __slots__ = (
        "_buffered",
        "_max_buffered",
        "_max_chunks",
        "_starts",
        "base_seq",
        "delivered",
        "direction",
        "ended",
        "fin_offset",
        "flow",
        "midstream",
        "peer_acked",
        "started",
        "stats",
        "waiting",
    )

    def __init__(
        self, flow: Flow, direction: Direction, stats: CaptureStats, max_buffered_bytes: int, max_buffered_segments: int
    ) -> None:
        self.flow = flow
        self.direction = direction
        self.stats = stats
        self._max_buffered = max_buffered_bytes
        # Tiny segments cost far more to keep than their bytes: their number is bounded too.
        self._max_chunks = max_buffered_segments
        self.started = False
        self.ended = False
        self.midstream = False
        self.base_seq = 0  # the sequence number of stream offset 0
        self.delivered = 0  # every byte before this stream offset was delivered or declared lost
        self.fin_offset: int | None = None
        self.peer_acked = 0  # how far the other side acknowledged (a stream offset)
        # Both lists are made when the first piece waits: a capture may hold a great many
        # connections that never have a hole (a SYN flood's, say).
        self._starts: list[int] = _NOTHING  # chunk starts, for bisection
        #: the pieces ahead of a hole, waiting for it to fill: sorted, non-overlapping, all at or
        #: after ``delivered`` (empty in the common case, which a reader may take a shortcut for)
        self.waiting: list[_Chunk] = _NOTHING
        self._buffered = 0

    def start(self, seq: int, midstream: bool, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        self.started = True
        self.midstream = midstream
        self.base_seq = seq & SEQ_MASK
        out.append(StreamStart(self.flow, self.direction, timestamp_ns, packet, self.base_seq, midstream))

    def offset_of(self, seq: int) -> int:
        """The stream offset of ``seq``: of all values congruent modulo 2**32, the nearest to ``delivered``."""
        expected = (self.base_seq + self.delivered) & SEQ_MASK
        return self.delivered + ((seq - expected + HALF_SEQ_SPACE) & SEQ_MASK) - HALF_SEQ_SPACE

    def seq_of(self, offset: int) -> int:
        return (self.base_seq + offset) & SEQ_MASK

    def segment(
        self, seq: int, payload: bytes, missing: int, fin: bool, timestamp_ns: int, packet: int, out: list[FlowEvent]
    ) -> None:
        """Take a segment whose payload starts at sequence number ``seq`` (after the SYN, if it has one)."""
        if self.ended:
            self.stats.late_segments += 1
            return
        start = self.offset_of(seq)
        end = start + len(payload)
        if fin and self.fin_offset is None and end + missing >= self.delivered:
            self.fin_offset = end + missing
        if payload or missing:
            if (
                start == self.delivered
                and not self.waiting
                and not missing
                and (self.fin_offset is None or end <= self.fin_offset)
            ):
                # The common case: the next bytes, nothing waiting.
                out.append(StreamData(self.flow, self.direction, timestamp_ns, packet, start, payload))
                self.delivered = end
            else:
                if start > self.delivered:
                    self.stats.out_of_order_segments += 1
                if payload:
                    self._insert(start, end, payload, timestamp_ns, packet)
                if missing:
                    self._insert(end, end + missing, None, timestamp_ns, packet)
        self._settle(timestamp_ns, packet, out)

    def peer_ack(self, ack: int, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        """The other side acknowledged everything before sequence number ``ack``."""
        if not self.started or self.ended:
            return
        acked = self.offset_of(ack)
        if self.fin_offset is not None and acked > self.fin_offset:
            acked = self.fin_offset  # the FIN takes a sequence number but is not a byte
        if acked > self.peer_acked:
            self.peer_acked = acked
            if self.waiting and acked > self.delivered:
                self._settle(timestamp_ns, packet, out)

    def finish(self, reason: EndReason, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        """End the direction: every hole left is final. Does nothing for a direction already ended."""
        if self.ended or not self.started:
            return
        chunks = self.waiting
        while chunks:
            if chunks[0][0] > self.delivered:
                self._gap(chunks[0][0], GapReason.CLOSED, timestamp_ns, packet, out)
            self._drain(out)
            if self.ended:
                return
        if self.fin_offset is not None:
            if self.delivered < self.fin_offset:
                self._gap(self.fin_offset, GapReason.CLOSED, timestamp_ns, packet, out)
            if reason is EndReason.CAPTURE_END:
                reason = EndReason.FIN
        self._end(reason, timestamp_ns, out)

    # -- internals

    def _insert(self, start: int, end: int, data: bytes | None, timestamp_ns: int, packet: int) -> None:
        """Buffer the bytes of ``[start, end)`` that are not already delivered or buffered."""
        data_start = start
        if self.fin_offset is not None and end > self.fin_offset:
            end = self.fin_offset
        if start < self.delivered:
            self.stats.retransmitted_bytes += min(end, self.delivered) - start
            start = self.delivered
        if start >= end:
            return
        if self.waiting is _NOTHING:
            self.waiting, self._starts = [], []
        starts, chunks = self._starts, self.waiting
        i = bisect_right(starts, start)
        pos = start
        if i > 0 and chunks[i - 1][1] > pos:  # the chunk before overlaps our beginning
            covered_to = chunks[i - 1][1]
            self.stats.retransmitted_bytes += min(covered_to, end) - pos
            pos = covered_to
        pieces: list[tuple[int, int]] = []
        while pos < end and i < len(chunks) and chunks[i][0] < end:
            chunk_start, chunk_end = chunks[i][0], chunks[i][1]
            if chunk_start > pos:
                pieces.append((pos, chunk_start))
            self.stats.retransmitted_bytes += min(chunk_end, end) - max(chunk_start, pos)
            pos = max(pos, chunk_end)
            i += 1
        if pos < end:
            pieces.append((pos, end))
        for piece_start, piece_end in pieces:
            piece = None if data is None else data[piece_start - data_start : piece_end - data_start]
            at = bisect_left(starts, piece_start)
            starts.insert(at, piece_start)
            chunks.insert(at, (piece_start, piece_end, piece, timestamp_ns, packet))
            self._buffered += piece_end - piece_start

    def _drain(self, out: list[FlowEvent]) -> None:
        """Deliver the buffered chunks that continue the stream."""
        chunks = self.waiting
        while chunks and chunks[0][0] == self.delivered:
            start, end, data, timestamp_ns, packet = chunks.pop(0)
            del self._starts[0]
            self._buffered -= end - start
            if self.fin_offset is not None and end > self.fin_offset:  # buffered before the FIN was seen
                end = self.fin_offset
                data = None if data is None else data[: end - start]
            if data is None:
                self._gap(end, GapReason.SNAPLEN, timestamp_ns, packet, out)
            else:
                out.append(StreamData(self.flow, self.direction, timestamp_ns, packet, start, data))
                self.delivered = end
            if self.fin_offset is not None and self.delivered >= self.fin_offset:
                self._end(EndReason.FIN, timestamp_ns, out)
                return

    def _settle(self, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        """Deliver what continues the stream, and give up on holes that can no longer fill."""
        chunks = self.waiting
        if chunks:
            self._drain(out)
            # Holes the receiver acknowledged will never be retransmitted.
            while chunks and self.peer_acked > self.delivered:
                lost_to = min(chunks[0][0], self.peer_acked)
                self._gap(lost_to, GapReason.ACKED_UNSEEN, timestamp_ns, packet, out)
                self._drain(out)
            while chunks and (self._buffered > self._max_buffered or len(chunks) > self._max_chunks):
                self._gap(chunks[0][0], GapReason.BUFFER_FULL, timestamp_ns, packet, out)
                self._drain(out)
        if not self.ended and self.fin_offset is not None and self.delivered >= self.fin_offset:
            self._end(EndReason.FIN, timestamp_ns, out)

    def _gap(self, to: int, reason: GapReason, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        """Declare ``[delivered, to)`` lost."""
        length = to - self.delivered
        out.append(
            Gap(
                self.flow,
                self.direction,
                timestamp_ns,
                packet,
                self.delivered,
                length,
                self.seq_of(self.delivered),
                reason,
            )
        )
        self.stats.gaps += 1
        self.stats.gap_bytes += length
        self.delivered = to

    def _end(self, reason: EndReason, timestamp_ns: int, out: list[FlowEvent]) -> None:
        self.ended = True
        self.waiting = self._starts = _NOTHING
        self._buffered = 0
        out.append(StreamEnd(self.flow, self.direction, timestamp_ns, self.delivered, reason))
