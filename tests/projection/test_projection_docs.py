"""docs/projections.md: its Python example runs as written, and every path in its table resolves."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.projection import Projection

DOC = (Path(__file__).resolve().parents[2] / "docs" / "projections.md").read_text()


def test_the_python_example_runs() -> None:
    block = DOC.split("## In Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    metadata = Protocol.apache().message("MetadataResponse")
    body = metadata.from_dict(
        {"topics": [{"name": "orders", "partitions": [{"partition_index": 0, "leader_epoch": 5}]}]}
    ).encode(12)
    scope: dict[str, object] = {"body_bytes": body, "bodies": [(body, 12), (body, 12)]}
    exec(block, scope)
    assert scope["columns"] == {"topics[].name": ["orders"], "topics[].partitions[].leader_epoch": [5]}
    assert scope["batch"] == [["orders", "orders"], [5, 5]]


def test_every_path_in_the_table_resolves() -> None:
    table = DOC.split("## Paths", 1)[1].split("##", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (\w+)", table, re.MULTILINE)
    assert len(rows) == 6
    apache = Protocol.apache()
    for path, message in rows:
        if message != "any":
            Projection(apache.message(message), [path])
