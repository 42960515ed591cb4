"""The report page from hand-built values: what it shows, what it leaves out, and that it stands alone."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the report extra is not installed (pip install -e '.[report]')")

from html_page import Page
from report_story import report_data

from kafka_epochs.report import render_report, write_report
from kafka_epochs.report.model import PartitionView


def test_each_drawn_partition_has_its_timeline_and_its_incidents_in_words() -> None:
    page = Page(render_report(report_data()))
    assert "partition-c1-orders-1" in page.ids and "partition-c1-orders-0" in page.ids
    assert page.tags.count("svg") == 2  # one timeline each
    assert page.ids.index("partition-c1-orders-1") < page.ids.index("partition-c1-orders-0")  # as given: most first
    assert (
        "Produce v12 from 10.0.0.1:50001 carried leader epoch 4 for orders-0 while the leader was at 5 "
        "→ FENCED_LEADER_EPOCH (KIP-359): the client's metadata is stale; it should refresh its metadata and "
        "retry. The broker answered FENCED_LEADER_EPOCH too." in page.text
    )
    assert "→ UNKNOWN_LEADER_EPOCH (KIP-320)" in page.text
    assert "(the controller) carried leader epoch 2 for orders-1 while the replica was at 3" in page.text
    assert "(KIP-570)" in page.text
    # the timelines' own words: text stays text in the SVG
    assert "LeaderAndIsr INCREMENTAL epoch 7" in page.text and "leader epoch" in page.text


def test_what_is_left_out_is_said() -> None:
    text = Page(render_report(report_data())).text
    assert "3 more with incidents are not drawn (7 incidents, counted in the summary)" in text
    assert "and 3 more incidents of orders-1, not listed" in text
    assert "2 of 9 requests drawn" in text


def test_incidents_link_to_their_frames() -> None:
    text = Page(render_report(report_data())).text
    assert "2023-11-14 22:13:20.030000 UTC · 10.0.0.1:50001 → 10.0.0.10:9092 · correlation id 4" in text
    assert "kafka-epochs decode story.pcap --client 10.0.0.1:50001 --correlation-id 4" in text


def test_summary_counts_by_kind_and_rule() -> None:
    page = Page(render_report(report_data()))
    assert "counts" in page.ids
    assert re.search(r"stale request KIP-359 FENCED_LEADER_EPOCH 1", page.text)
    assert re.search(r"stop replica fenced KIP-570 FENCED_LEADER_EPOCH 1", page.text)
    assert "2023-11-14 22:13:20.000000 UTC to 2023-11-14 22:13:20.130000 UTC (0.130 s)" in page.text


def test_stray_view_and_incidents_about_no_partition() -> None:
    page = Page(render_report(report_data()))
    assert "stray-partitions" in page.ids
    assert re.search(r"10\.0\.0\.20:40000 → 10\.0\.0\.10:9092 5 FULL orders-0 orders-1", page.text)
    assert "LeaderAndIsr (correlation id 4) from 10.0.0.20:40000 with STALE_CONTROLLER_EPOCH" in page.text
    assert "(controller epoch)" in page.text


def test_the_page_fetches_nothing_and_runs_nothing() -> None:
    page = Page(render_report(report_data()))
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert all(ref.startswith("#") for ref in page.references), page.references


def test_names_from_the_capture_are_escaped() -> None:
    data = report_data()
    data.partitions = [PartitionView("c1", "<script>alert(1)</script>", 0)]
    html = render_report(data)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;-0" in html


def test_an_audit_with_nothing_to_report_says_so(tmp_path: Path) -> None:
    data = report_data()
    data.partitions, data.partitions_left_out, data.other_incidents, data.control_requests = [], 0, [], []
    data.summary.counts = {}
    text = Page(write_report(data, tmp_path / "nested" / "empty.html").read_text()).text
    assert "No partition had an incident." in text
    assert "No fenced, stale or unknown-epoch requests and no epoch errors in responses." in text
    assert "No LeaderAndIsr request was captured" in text


def test_the_same_values_give_the_same_page() -> None:
    assert render_report(report_data()) == render_report(report_data())


def test_ids_are_unique_and_every_reference_inside_the_page_resolves() -> None:
    page = Page(render_report(report_data()))
    assert len(page.ids) == len(set(page.ids))
    html = render_report(report_data())
    references = set(re.findall(r'href="#([^"]+)"', html)) | set(re.findall(r"url\(#([^)]+)\)", html))
    assert references and references <= set(page.ids)


def test_a_decode_command_is_offered_only_for_a_capture_file_that_is_there() -> None:
    data = report_data()
    view = data.partitions[1]
    view.incidents = [
        dataclasses.replace(i, frame=dataclasses.replace(i.frame, decodable=False)) for i in view.incidents
    ]
    text = Page(render_report(data)).text
    # orders-0's incident: its capture is not a file here
    assert "--client 10.0.0.1:50001 --correlation-id 4" not in text
    assert "--client 10.0.0.1:50001 --correlation-id 5" in text  # orders-1's still is


def test_contradicted_verdicts_are_not_summed_up_as_nothing_to_report() -> None:
    data = report_data()
    data.summary.counts = {}
    data.summary.disagreements = 3
    text = Page(render_report(data)).text
    assert "No fenced, stale or unknown-epoch requests" not in text
    assert "Verdicts the brokers contradict 3" in text


HOSTILE_NAMES = [
    "$x^2$ and $\\alpha$",
    "$\\notacommand{$",
    "a\x00b\x1bc[31m",
    "lone \ud800 surrogate",
    "tab\there",
    "del\x7f\x85",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_names_are_drawn_and_printed_literally(tmp_path: Path, name: str) -> None:
    """Names from the traffic are text: no math typesetting, no control character or lone
    surrogate in the page, each spelled as its escape; the page is written whatever the name."""
    data = report_data()
    data.partitions = [dataclasses.replace(view, topic=name) for view in data.partitions]
    for incident in data.partitions[0].incidents:
        object.__setattr__(incident, "topic", name)
    page = render_report(data)
    assert re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]", page) is None
    spelled = name.encode("unicode_escape").decode("ascii").replace("\\t", "\\x09")
    drawing = page[page.index("<svg") :]
    if name.startswith("$"):
        assert f"<h3>{name}-0</h3>" in page and f"{name}-0" in drawing  # as typed, never typeset
    else:
        assert spelled + "-0" in page and spelled + "-0" in drawing, spelled
    out = tmp_path / "report.html"
    write_report(data, out)
    assert out.read_text(encoding="utf-8") == page
