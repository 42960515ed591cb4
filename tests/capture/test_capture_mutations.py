"""Damaged real captures decode packet by packet: no traceback, no whole-file failure for packet damage.

A bounded run of :mod:`capture_mutations` (400 mutations, a few seconds); the long campaign is
``benchmarks/capture_campaign.py``. The seed is fixed so a failure reproduces; the first failure's
mutation is in the assertion message.
"""

from __future__ import annotations

import random

import pytest
from capture_mutations import decode_all, header_end, mutate, real_captures

CAPTURES = real_captures()


def test_the_captures_decode_cleanly_before_any_mutation() -> None:
    for name, data in CAPTURES.items():
        outcome = decode_all(data)
        assert outcome.crash is None and outcome.whole_file is None, name
        assert outcome.exchanges > 10 and outcome.problems == 0, name


@pytest.mark.parametrize("seed", range(4))
def test_mutated_real_captures_never_crash(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        name = rng.choice(sorted(CAPTURES))
        data, what, header = mutate(CAPTURES[name], rng)
        outcome = decode_all(data)
        assert outcome.crash is None, f"{name}, {what}:\n{outcome.crash}"
        assert header or outcome.whole_file is None, f"{name}, {what}: {outcome.whole_file}"


def test_a_flipped_high_bit_in_a_seconds_timestamp_is_one_packet_s_problem() -> None:
    data = bytearray(CAPTURES["clients-seconds.pcapng"])
    start = header_end(bytes(data))
    data[start + 12 + 3] ^= 0x80  # the first packet's timestamp, high word: 2**31 * 2**32 seconds
    outcome = decode_all(bytes(data))
    assert outcome.crash is None and outcome.whole_file is None
    assert outcome.problems >= 1 and outcome.exchanges > 10
