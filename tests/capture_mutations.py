"""Damaged real captures: mutations of the bundled captures, and what decoding them must give.

Shared by the bounded test (``tests/capture/test_capture_mutations.py``) and the long campaign
(``benchmarks/capture_campaign.py``). A mutation flips bits, writes absurd values over record
lengths and timestamps, cuts the file, removes a few bytes (a packet that lost them, its record's
lengths unchanged), or removes, repeats or zeroes a range. Decoding a
mutated capture (every exchange, rendered as the command line prints it, records included)
must never raise anything but ``CaptureFormatError``, and that only when the mutation touched
the file's own header (the pcap file header, or a pcapng file's first section and interface
blocks): damage to packets is reported packet by packet.
"""

from __future__ import annotations

import gzip
import io
import random
import struct
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.capture import CaptureFormatError, Packet, read_packets
from kafka_epochs.exchanges import DecodeSummary
from kafka_epochs.fused_lines import decode_lines
from kafka_epochs.json_lines import LineWriter
from kafka_epochs.rendering import exchange_json, json_line
from kafka_epochs.traffic import decode_capture

SAMPLES = Path(__file__).resolve().parent.parent / "kafka_epochs" / "samples"
PCAP_HEADER = 24


def le_block(block_type: int, body: bytes) -> bytes:
    """A little-endian pcapng block of ``block_type`` around ``body`` (padded to 4 bytes)."""
    body += b"\x00" * (-len(body) % 4)
    total = 12 + len(body)
    return struct.pack("<II", block_type, total) + body + struct.pack("<I", total)


def as_pcapng(pcap: bytes, tsresol: int = 9) -> bytes:
    """The packets of a pcap file as a pcapng file: one section, one Ethernet interface whose
    times are in units of 10**-tsresol seconds."""
    section = le_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    option = struct.pack("<HH", 9, 1) + bytes([tsresol, 0, 0, 0]) + struct.pack("<HH", 0, 0)
    interface = le_block(1, struct.pack("<HHI", 1, 0, 0) + option)
    blocks = [section, interface]
    for p in read_packets(io.BytesIO(pcap)):
        assert isinstance(p, Packet)
        t = p.timestamp_ns // 10 ** (9 - tsresol)
        blocks.append(le_block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(p.data), len(p.data)) + p.data))
    return b"".join(blocks)


def real_captures() -> dict[str, bytes]:
    """The bundled captures of real clients, as pcap, as pcapng, and one gzip-compressed."""
    out: dict[str, bytes] = {}
    for path in sorted(SAMPLES.glob("*.pcap")):
        data = path.read_bytes()
        out[path.name] = data
        out[f"{path.stem}.pcapng"] = as_pcapng(data)
    # times in whole seconds: a flipped high bit is then a time past any calendar
    out["clients-seconds.pcapng"] = as_pcapng((SAMPLES / "clients.pcap").read_bytes(), tsresol=0)
    out["sample.pcap.gz"] = gzip.compress((SAMPLES / "sample.pcap").read_bytes(), 6)
    return out


def header_end(data: bytes) -> int:
    """Where the file's own header ends: mutations before this may refuse the whole file."""
    if data[:2] == b"\x1f\x8b":
        return len(data)  # a compressed file: any byte may be the one that says what it is
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        section = struct.unpack_from("<I", data, 4)[0]
        interface = struct.unpack_from("<I", data, section + 4)[0]
        return section + interface
    return PCAP_HEADER


ABSURD_32 = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF0)


def damaged(captures: dict[str, bytes], seed: int, count: int) -> Iterator[tuple[bytes, random.Random]]:
    """``count`` mutations of captures picked from ``captures`` (by name order, so a seed always
    gives the same ones), each with the generator that made it (for a test's own draws after)."""
    rng = random.Random(seed)
    names = sorted(captures)
    for _ in range(count):
        mutated, _, _ = mutate(captures[rng.choice(names)], rng)
        yield mutated, rng


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    """One mutation: the mutated bytes, what was done, and whether it touched the file header."""
    n = len(data)
    kind = rng.choice(("flip", "flips", "absurd", "absurd64", "cut", "drop", "lose", "repeat", "zero"))
    at = rng.randrange(n)
    out = bytearray(data)
    touched = (at, at + 1)
    if kind == "flip":
        out[at] ^= 1 << rng.randrange(8)
    elif kind == "flips":
        spots = [rng.randrange(n) for _ in range(rng.randint(2, 16))]
        for spot in spots:
            out[spot] ^= 1 << rng.randrange(8)
        touched = (min(spots), max(spots) + 1)
    elif kind == "absurd":
        at = rng.randrange(max(n - 4, 1))
        out[at : at + 4] = struct.pack("<I", rng.choice(ABSURD_32))
        touched = (at, at + 4)
    elif kind == "absurd64":  # where a timestamp or a 64-bit offset may be
        at = rng.randrange(max(n - 8, 1))
        out[at : at + 8] = rng.choice((b"\xff" * 8, b"\x7f" + b"\xff" * 7, rng.randbytes(8)))
        touched = (at, at + 8)
    elif kind == "cut":
        out = out[:at]
        touched = (at, n)
    elif kind == "lose":  # a few bytes gone from inside a packet, its record's lengths unchanged
        length = rng.randint(1, min(8, n - at))
        del out[at : at + length]
        touched = (at, at + length)
    else:
        length = rng.randint(1, min(4096, n - at))
        if kind == "drop":
            del out[at : at + length]
        elif kind == "repeat":
            out[at:at] = data[at : at + length]
        else:
            out[at : at + length] = bytes(length)
        touched = (at, at + length)
    return bytes(out), f"{kind} at {touched[0]}..{touched[1]}", touched[0] < header_end(data)


@dataclass
class Outcome:
    exchanges: int = 0
    problems: int = 0
    whole_file: str | None = None  # the CaptureFormatError that refused the file
    crash: str | None = None  # any other exception, with its traceback


PROTOCOL = Protocol.auto()


def decode_all(data: bytes) -> Outcome:
    """Decode every exchange and render it as ``kafka-epochs decode --records`` prints it, and as
    plain ``decode`` prints it: the direct line writer's text must be the reference's, and the
    fused path's lines (what the command prints) the layered path's."""
    outcome = Outcome()
    writer = LineWriter()
    printed = []
    try:
        for exchange in decode_capture(io.BytesIO(data), PROTOCOL):
            line = exchange_json(exchange, records=True)
            outcome.exchanges += 1
            outcome.problems += bool(line.get("problem"))
            direct = writer.line(exchange)
            reference = json_line(exchange_json(exchange, bodies_as_text=True))
            if direct is not None and direct != reference:
                raise AssertionError(f"the line writer and the reference differ on exchange {outcome.exchanges}")
            printed.append(reference)
        if printed_lines(data) != printed:
            raise AssertionError("the fused path's lines and the layered path's differ")
    except CaptureFormatError as e:
        outcome.whole_file = str(e)
    except Exception:  # what the campaign looks for
        outcome.crash = traceback.format_exc()
    return outcome


def printed_lines(data: bytes) -> list[str]:
    """The lines ``decode`` prints for a capture, through :mod:`kafka_epochs.fused_lines`."""
    writer = LineWriter()
    lines = []
    for batch in decode_lines(io.BytesIO(data), PROTOCOL, writer, summary=DecodeSummary()):
        for item in batch:
            line = item if isinstance(item, str) else writer.line(item)
            lines.append(line if line is not None else json_line(exchange_json(item, bodies_as_text=True)))
    return lines
