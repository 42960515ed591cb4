"""The audit's HTML report from real audits: the epoch story, the bundled sample, and the page in a browser.

The browser test opens the sample's report in headless Chromium (Debian's ``chromium``), takes a
screenshot and reads the DOM back. Where no Chromium is installed it is skipped, unless
KAFKA_EPOCHS_REQUIRE_BROWSER is set, as ``.ci/run`` sets it after installing one: there it fails.
With KAFKA_EPOCHS_REGENERATE_DOCS=1 it also rewrites docs/audit-report.png.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib", reason="the report extra is not installed (pip install -e '.[report]')")

from epoch_story import Script, client_script, controller_script, leader_and_isr, leader_and_isr_response
from html_page import Page

from kafka_epochs.capture.synth import write_capture
from kafka_epochs.spark.datasource import register
from kafka_epochs.spark.epoch_audit import audit

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "kafka_epochs" / "samples" / "sample.pcap"
DOCS_PNG = ROOT / "docs" / "audit-report.png"


def story_with_full_request() -> list[Any]:
    controller: Script = controller_script()
    # a FULL LeaderAndIsr (KIP-516) naming only orders-0: orders-1, given at 110 ms, becomes a stray
    controller.exchange(130, leader_and_isr(2, {0: 8}, kind=2), leader_and_isr_response(0, [0]), 5)
    return [client_script().conn, controller.conn]


@pytest.fixture(scope="module")
def story_report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    register(spark)
    folder = tmp_path_factory.mktemp("report")
    capture = folder / "story.pcap"
    write_capture(capture, story_with_full_request(), mss=200)
    result = audit(spark.read.format("kafka-capture").load(str(capture)))
    return result.report(folder / "story.html", sources=["story.pcap"])


@pytest.fixture(scope="module")
def story_page(story_report: Path) -> Page:
    return Page(story_report.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def sample_report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    register(spark)
    result = audit(spark.read.format("kafka-capture").load(str(SAMPLE)))
    path = tmp_path_factory.mktemp("sample-report") / "sample.html"
    return result.report(path, title="kafka-epochs audit of the bundled sample", sources=["sample.pcap"])


def test_story_partitions_are_drawn_with_their_incidents(story_page: Page) -> None:
    ids = [i for i in story_page.ids if i.startswith("partition-")]
    assert len(ids) == 2 and all(i.endswith(("orders-0", "orders-1")) for i in ids)
    text = story_page.text
    assert (
        "Produce v12 from 10.0.0.1:50001 carried leader epoch 4 for orders-0 while the leader was at 5 "
        "→ FENCED_LEADER_EPOCH (KIP-359)" in text
    )
    assert "Fetch v12 from 10.0.0.1:50001 carried leader epoch 4 for orders-1, newer than the leader's 3" in text
    assert "Fetch v12 from 10.0.0.1:50001 carried leader epoch 6 for orders-0 while the leader was at 7" in text
    assert "StopReplica v3 from 10.0.0.20:40000 (the controller) carried leader epoch 2 for orders-1" in text
    assert "with STALE_CONTROLLER_EPOCH for orders-1" in text and "(controller epoch)" in text


def test_story_summary_counts(story_page: Page) -> None:
    text = story_page.text
    assert "stale request KIP-359 FENCED_LEADER_EPOCH 1" in text
    assert "stale request KIP-320 FENCED_LEADER_EPOCH 1" in text  # the Fetch at 90 ms
    assert "stale request KIP-320 UNKNOWN_LEADER_EPOCH 1" in text
    assert "stop replica fenced KIP-570 FENCED_LEADER_EPOCH 1" in text
    # the LeaderAndIsr answer at 110 ms: STALE_CONTROLLER_EPOCH at the top and for orders-1
    assert "fenced response controller epoch STALE_CONTROLLER_EPOCH 2" in text


def test_story_controller_rules_and_strays(story_page: Page) -> None:
    text = story_page.text
    assert "LeaderAndIsr INCREMENTAL epoch 7" in text and "StopReplica delete" in text
    # 110 ms gave orders-1 (the fenced StopReplica at 60 ms deleted nothing); the FULL at 130 ms leaves it out
    assert "10.0.0.20:40000 → 10.0.0.10:9092 5 FULL orders-0 orders-1" in text


def test_sample_report_shows_the_fenced_producer_and_stop_replica(sample_report: Path) -> None:
    text = Page(sample_report.read_text(encoding="utf-8")).text
    assert (
        "Produce v12 from 10.20.0.3:52000 carried leader epoch 6 for orders-1 while the leader was at 8 "
        "→ FENCED_LEADER_EPOCH (KIP-359)" in text
    )
    assert (
        "StopReplica v3 from 10.20.0.2:51000 (the controller) carried leader epoch 6 for orders-0 while the "
        "replica was at 8 → FENCED_LEADER_EPOCH (KIP-570)" in text
    )


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("KAFKA_EPOCHS_REQUIRE_BROWSER"):
        pytest.fail("KAFKA_EPOCHS_REQUIRE_BROWSER is set but no Chromium is installed (apt-get install chromium)")
    pytest.skip("no Chromium installed (Debian: apt-get install chromium); .ci/run installs one")


def _browser(chromium: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    return subprocess.run([chromium, *flags, *args], capture_output=True, timeout=120, check=True)


def test_sample_report_in_a_browser(sample_report: Path, tmp_path: Path) -> None:
    chromium = _chromium()
    from PIL import Image  # matplotlib's own dependency

    url = sample_report.resolve().as_uri()
    shot = tmp_path / "shot.png"
    _browser(chromium, f"--screenshot={shot}", "--window-size=1280,2000", url)
    with Image.open(shot) as image:
        pixels = image.convert("RGB")
        assert pixels.size == (1280, 2000)
        colours = pixels.getcolors(maxcolors=1 << 20) or []
        drawn = sum(count for count, rgb in colours if rgb != (255, 255, 255))
        assert drawn > 0.03 * 1280 * 2000, "the page is (nearly) blank"
        # the verdict colours of the two incidents' markers are on screen: FENCED red, fenced StopReplica purple
        assert any(_near(rgb, (0xC6, 0x28, 0x28)) for _, rgb in colours)
        assert any(_near(rgb, (0x6A, 0x1B, 0x9A)) for _, rgb in colours)
        if os.environ.get("KAFKA_EPOCHS_REGENERATE_DOCS"):
            pixels.crop((0, 0, 1280, 1900)).save(DOCS_PNG, optimize=True)
    dom = Page(_browser(chromium, "--dump-dom", url).stdout.decode())
    assert {i for i in dom.ids if i.startswith("partition-")} == {
        "partition-sample.pcap 10.20.0.1:9092-orders-0",
        "partition-sample.pcap 10.20.0.1:9092-orders-1",
    }
    assert dom.tags.count("svg") == 2
    assert "FENCED_LEADER_EPOCH (KIP-359)" in dom.text and "FENCED_LEADER_EPOCH (KIP-570)" in dom.text


def test_the_story_report_in_a_browser(story_report: Path, tmp_path: Path) -> None:
    chromium = _chromium()
    from PIL import Image

    shot = tmp_path / "story.png"
    url = story_report.resolve().as_uri()
    _browser(chromium, f"--screenshot={shot}", "--window-size=1280,1600", url)
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert sum(count for count, rgb in colours if rgb != (255, 255, 255)) > 0.03 * 1280 * 1600
    assert any(_near(rgb, (0xEF, 0x6C, 0x00)) for _, rgb in colours)  # the UNKNOWN_LEADER_EPOCH markers
    dom = Page(_browser(chromium, "--dump-dom", url).stdout.decode())
    drawn = [i for i in dom.ids if i.startswith("partition-")]
    assert len(drawn) == 2 and {i[-8:] for i in drawn} == {"orders-0", "orders-1"}
    assert dom.tags.count("svg") == 2 and "UNKNOWN_LEADER_EPOCH (KIP-320)" in dom.text
    assert "FULL orders-0 orders-1" in dom.text  # the stray view: orders-1 left out of the FULL request


def test_docs_keep_a_screenshot_of_the_sample_report() -> None:
    from PIL import Image

    with Image.open(DOCS_PNG) as image:
        assert image.size[0] == 1280 and image.size[1] > 1000
    assert "docs/audit-report.png" in (ROOT / "README.md").read_text(encoding="utf-8")


def _near(rgb: tuple[int, int, int], want: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 6 for a, b in zip(rgb, want, strict=True))
