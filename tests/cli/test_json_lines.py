"""The CLI's JSON lines with generated body renderers are the lines ``json.dumps`` wrote.

On the bundled captures (a real-client one among them), every exchange rendered the fast way
(bodies as text spliced into the line) must equal ``json.dumps`` of the dict rendering.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.rendering import JsonText, json_line
from kafka_epochs.traffic import decode_capture, exchange_json

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"


@pytest.mark.parametrize("name", ["sample.pcap", "clients.pcap"])
@pytest.mark.parametrize("secrets", [False, True])
def test_text_bodies_give_the_same_lines(name: str, secrets: bool) -> None:
    texts = 0
    for exchange in decode_capture(SAMPLES / name, Protocol.auto()):
        fast = exchange_json(exchange, secrets=secrets, bodies_as_text=True)
        texts += sum(type(v) is JsonText for v in fast.values())
        assert json_line(fast) == json.dumps(exchange_json(exchange, secrets=secrets), ensure_ascii=False)
    assert texts > 50  # the fast path was taken


def test_json_line_matches_json_dumps_on_awkward_values() -> None:
    row = {
        "a": None,
        "b": [1, "zü\u2603"],
        "c": {"x": float("nan")},
        "d": JsonText('{"k": 1}'),
        "clé \u2603": 'line\nbreak "quoted" \x01',
        "t": True,
        "f": 1.5,
        "big": 2**70,
        "neg": -3,
    }
    assert json_line(row) == json.dumps({**row, "d": {"k": 1}}, ensure_ascii=False)
