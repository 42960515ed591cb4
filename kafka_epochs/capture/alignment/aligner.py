"""Keep one direction's data aligned on Kafka frame boundaries, through gaps and mid-stream starts.

While *synced*, data passes through untouched and the aligner only follows the int32 size of each
frame to know where the next one starts. It loses sync when:

* the stream started mid-stream: bytes are searched for a frame start (``MIDSTREAM_START``);
* a gap fell inside a frame: that frame is skipped up to the boundary its size announced
  (``GAP_INSIDE_FRAME``), no search needed;
* a gap swallowed a boundary, or the bytes in front of it: search (``AFTER_GAP``);
* a size at a boundary is out of range: search from there (``IMPLAUSIBLE_SIZE``).

Searching holds the bytes back, tests offsets with the direction's :class:`FrameRule`, and
accepts a candidate once the frame after it looks plausible too (or the stream ended first). Then
it emits ``Discarded`` for the bytes skipped, ``Resync`` for the boundary, and the data from
there. Bytes held while searching are bounded by the rule's ``max_span`` plus ``lookahead``.
"""

from __future__ import annotations

import struct

from kafka_epochs.capture.alignment.rules import FrameRule
from kafka_epochs.capture.events import (
    Direction,
    Discarded,
    Flow,
    FlowEvent,
    Gap,
    Resync,
    ResyncReason,
    StreamData,
    StreamEnd,
    StreamEvent,
    StreamStart,
)
from kafka_epochs.capture.stats import CaptureStats
from kafka_epochs.resync import find_frame_start

# What a direction in sync holds of the searching state: shared empty objects, never added to
# (a search starts with a buffer and a list of its own), so that a connection costs little until
# it loses sync: a capture may hold a great many connections.
_NOT_SEARCHING = bytearray()
_INT32 = struct.Struct(">i")
_NOTHING_HELD: list[StreamData] = []


class FrameAligner:
    """Turns one direction's reassembled events into frame-aligned ones (see the module docstring)."""

    __slots__ = (
        "_discard_from",
        "_discarded",
        "_header",
        "_held",
        "_reason",
        "_rule",
        "_scan",
        "_scan_offset",
        "_skip_to",
        "_synced",
        "clean",
        "direction",
        "flow",
        "frame_end",
        "stats",
    )

    def __init__(self, flow: Flow, direction: Direction, rule: FrameRule, stats: CaptureStats) -> None:
        self.flow = flow
        self.direction = direction
        self.stats = stats
        self._rule = rule
        self._synced = True
        self._reason = ResyncReason.MIDSTREAM_START  # why the current search began
        # While synced: where the next frame's size field starts, and its first bytes if a chunk
        # boundary split it; after a gap inside a frame, data before `_skip_to` is dropped.
        self.frame_end = 0
        self._header = b""
        self._skip_to = -1
        #: Whether the aligner holds nothing of the stream but ``frame_end``: in sync, no size
        #: field split, nothing to skip. Then whole frames taken from ``frame_end`` by someone else
        #: need only ``frame_end`` moved past them (what :meth:`take` would have followed), and
        #: bytes that end no later than it are inside the frame being followed (what ``take``
        #: would hand on as they are). Set by every step that changes those three:
        #: the capture's lanes read it for each packet, where a method call would cost more than
        #: the check.
        self.clean = True
        # While searching: the bytes held back, from stream offset `_scan_offset`, and the
        # chunks they came from (to hand them on with their own timestamps).
        self._scan = _NOT_SEARCHING
        self._scan_offset = 0
        self._held: list[StreamData] = _NOTHING_HELD
        # Captured bytes skipped and not yet reported.
        self._discard_from = 0
        self._discarded = 0

    def feed(self, event: FlowEvent, out: list[StreamEvent]) -> None:
        if type(event) is StreamData:
            self.take(event, out)
        elif type(event) is Gap:
            self._gap(event, out)
        elif type(event) is StreamStart:
            out.append(event)
            if event.midstream:
                self._search_from(0, ResyncReason.MIDSTREAM_START)
        elif type(event) is StreamEnd:
            # No more bytes will come: the last search may accept a frame the end cuts short. Data
            # handed on after an accepted frame may lose sync again, hence the loop.
            while not self._synced and self._scan:
                self._search(True, event.timestamp_ns, out)
            if not self._synced:
                self._discard_front(len(self._scan))
            self._report_discarded(event.timestamp_ns, out)
            out.append(event)
        else:
            out.append(event)

    # -- synced

    @property
    def max_size(self) -> int:
        """The largest frame size the direction's rule allows at a boundary."""
        return self._rule.max_size

    def take(self, event: StreamData, out: list[StreamEvent]) -> None:
        """``feed`` for a :class:`StreamData` (a caller that knows the event's type skips the dispatch)."""
        if not self._synced:
            self._hold(event, out)  # (clean stays False, unless a frame found sets it: _accept)
            return
        data = event.data
        offset = event.stream_offset
        if self._skip_to >= 0:
            if offset + len(data) <= self._skip_to:
                self._discard(offset, len(data))
                return
            if offset < self._skip_to:
                cut = self._skip_to - offset
                self._discard(offset, cut)
                data, offset = data[cut:], self._skip_to
                event = StreamData(event.flow, event.direction, event.timestamp_ns, event.packet, offset, data)
            self._skip_to = -1
            self._report_discarded(event.timestamp_ns, out)
            self._resync(offset, event.timestamp_ns, out)
        length = len(data)
        max_size = self._rule.max_size
        while self.frame_end - offset < length:
            at = self.frame_end - offset  # negative when the size field began in an earlier chunk
            header = self._header
            begin = max(at, 0)
            if not header and length - begin >= 4:  # the size field whole in this chunk (nearly always)
                size = _INT32.unpack_from(data, begin)[0]
            else:
                missing = 4 - len(header)
                if length - begin < missing:
                    self._header = header + data[begin:]
                    break
                size = int.from_bytes(header + data[begin : begin + missing], "big", signed=True)
                self._header = b""
            if not 0 <= size <= max_size:
                if begin:
                    out.append(
                        StreamData(event.flow, event.direction, event.timestamp_ns, event.packet, offset, data[:begin])
                    )
                self._search_from(offset + begin, ResyncReason.IMPLAUSIBLE_SIZE)
                rest = data[begin:]
                if rest:
                    self._hold(
                        StreamData(event.flow, event.direction, event.timestamp_ns, event.packet, offset + begin, rest),
                        out,
                    )
                return  # (clean: False from _search_from, unless a frame found sets it)
            self.frame_end += 4 + size
        out.append(event)
        self.clean = self._synced and self._skip_to < 0 and not self._header

    def _gap(self, gap: Gap, out: list[StreamEvent]) -> None:
        gap_end = gap.stream_offset + gap.length
        if not self._synced:
            # Bytes held before a gap cannot be chained to those after it: the search restarts.
            self._discard_front(len(self._scan))
            self._report_discarded(gap.timestamp_ns, out)
            out.append(gap)
            self._search_from(gap_end, ResyncReason.AFTER_GAP)
            return
        self._report_discarded(gap.timestamp_ns, out)
        out.append(gap)
        if self._skip_to >= 0:
            if gap_end <= self._skip_to:
                return
        elif not self._header and gap.stream_offset < self.frame_end and gap_end <= self.frame_end:
            self._skip_to = self.frame_end
            self._reason = ResyncReason.GAP_INSIDE_FRAME
            self.clean = False
            return
        self._skip_to = -1
        self._header = b""
        self._search_from(gap_end, ResyncReason.AFTER_GAP)

    # -- searching

    def _search_from(self, offset: int, reason: ResyncReason) -> None:
        self._synced = False
        self.clean = False
        self._reason = reason
        self._scan = bytearray()
        self._scan_offset = offset
        self._held = []

    def _hold(self, event: StreamData, out: list[StreamEvent]) -> None:
        if not self._scan:
            self._scan_offset = event.stream_offset
        self._scan += event.data
        self._held.append(event)
        self._search(False, event.timestamp_ns, out)

    def _search(self, final: bool, timestamp_ns: int, out: list[StreamEvent]) -> None:
        """Look for a confirmed frame start in the held bytes; ``final`` when no more bytes will come."""
        rule = self._rule
        scan = self._scan
        limit = len(scan) if final else len(scan) - rule.lookahead + 1
        pos = 0
        while pos < limit:
            candidate = find_frame_start(scan, pos, rule.plausible, end=limit, candidates=rule.candidates)
            if candidate is None:
                break
            verdict = self._confirm(candidate, final)
            if verdict is None:  # wait for the bytes that decide
                self._discard_front(candidate)
                return
            if verdict:
                self._discard_front(candidate)
                self._accept(timestamp_ns, out)
                return
            pos = candidate + 1
        self._discard_front(max(0, min(limit, len(scan))))

    def _confirm(self, candidate: int, final: bool) -> bool | None:
        """Whether the frame at ``candidate`` is followed by a plausible one; ``None``: not known yet."""
        rule = self._rule
        scan = self._scan
        size = int.from_bytes(scan[candidate : candidate + 4], "big", signed=True)
        if not 0 <= size <= rule.max_size or 4 + size > rule.max_span:
            return False
        following = candidate + 4 + size
        if following >= len(scan):
            # The frame reaches the end of what we hold: at the stream's end that is as good as it gets.
            return True if final else None
        if following + rule.lookahead > len(scan) and not final:
            return None
        return rule.plausible(scan, following)

    def _accept(self, timestamp_ns: int, out: list[StreamEvent]) -> None:
        """Sync on the frame starting at the first held byte, and hand on the held data."""
        held = self._held
        self._synced = True
        self.frame_end = self._scan_offset
        self._header = b""
        self._skip_to = -1
        self.clean = True
        self._scan = _NOT_SEARCHING
        self._held = _NOTHING_HELD
        self._report_discarded(timestamp_ns, out)
        self._resync(self.frame_end, held[0].timestamp_ns if held else timestamp_ns, out)
        for event in held:
            self.take(event, out)

    def _discard_front(self, count: int) -> None:
        """Drop the first ``count`` held bytes: no frame starts in them."""
        if count <= 0:
            return
        self._discard(self._scan_offset, count)
        del self._scan[:count]
        self._scan_offset += count
        held = self._held
        while held and held[0].stream_offset + len(held[0].data) <= self._scan_offset:
            held.pop(0)
        if held and held[0].stream_offset < self._scan_offset:
            first = held[0]
            cut = self._scan_offset - first.stream_offset
            held[0] = StreamData(
                first.flow, first.direction, first.timestamp_ns, first.packet, self._scan_offset, first.data[cut:]
            )

    # -- reporting

    def _resync(self, offset: int, timestamp_ns: int, out: list[StreamEvent]) -> None:
        out.append(Resync(self.flow, self.direction, timestamp_ns, offset, self._reason))
        self.stats.resyncs += 1

    def _discard(self, offset: int, length: int) -> None:
        if not self._discarded:
            self._discard_from = offset
        self._discarded += length

    def _report_discarded(self, timestamp_ns: int, out: list[StreamEvent]) -> None:
        if self._discarded:
            out.append(Discarded(self.flow, self.direction, timestamp_ns, self._discard_from, self._discarded))
            self.stats.discarded_bytes += self._discarded
            self._discarded = 0
