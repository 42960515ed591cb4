"""One partition's epoch timeline drawn as SVG text with matplotlib (the ``report`` extra).

The leader epoch is a step line over capture time (the highest epoch seen so far, as the audit
judges by); each request that named an epoch is a marker at that epoch, shaped and coloured by
its verdict; controller requests are vertical rules. Text stays text in the SVG (no glyph
paths), so the page can be searched and the labels read by a test.
"""

from __future__ import annotations

import io
import re
from typing import Any

import matplotlib
from matplotlib.figure import Figure  # a Figure alone, not pyplot: no display, no global state

from kafka_epochs.report.literal import literal
from kafka_epochs.report.model import (
    ACCEPTED,
    DISPUTED,
    FENCED,
    NO_EPOCH,
    STALE_CONTROL,
    STOP_FENCED,
    UNKNOWN,
    VERDICTS,
    PartitionView,
)

#: marker, colour, size and drawing order of each verdict (incidents drawn over accepted requests)
STYLES: dict[str, tuple[str, str, float, int]] = {
    ACCEPTED: ("o", "#2e7d32", 18.0, 2),
    FENCED: ("X", "#c62828", 70.0, 4),
    UNKNOWN: ("^", "#ef6c00", 60.0, 4),
    STOP_FENCED: ("s", "#6a1b9a", 60.0, 4),
    STALE_CONTROL: ("D", "#4e342e", 50.0, 4),
    DISPUTED: ("P", "#0097a7", 50.0, 3),
    NO_EPOCH: (".", "#9e9e9e", 20.0, 1),
}


def timeline_svg(view: PartitionView, start_ns: int, end_ns: int, prefix: str = "") -> str:
    """The SVG of one partition's timeline; x is seconds since ``start_ns``.

    ``prefix`` goes before every id in it (and every reference to one), so that several SVGs
    in one page keep their ids apart."""
    # text kept as text; ids the same from run to run
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "kafka-epochs", "font.size": 9.0}):
        figure = Figure(figsize=(9.0, 3.2), dpi=96)
        axes = figure.add_subplot()
        _draw(axes, view, start_ns, end_ns)
        figure.tight_layout()
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = out.getvalue()
    text = text[text.index("<svg") :]  # the XML prologue and doctype do not belong inside HTML
    return _IDS.sub(lambda m: f"{m.group(1)}{prefix}", text) if prefix else text


# an id, or a reference to one: id="x", href="#x", xlink:href="#x", url(#x)
_IDS = re.compile(r'(\bid="|href="#|url\(#)')


def _span(view: PartitionView, start_ns: int, end_ns: int) -> tuple[float, float]:
    """The x range drawn: the partition's own events, with a margin (the whole capture may be
    hours, a partition's incident a few seconds of it)."""
    times = [s.time_ns for s in view.sightings] + [m.frame.time_ns for m in view.markers]
    times += [r.time_ns for r in view.rules]
    known = [(t - start_ns) / 1e9 for t in times if t is not None]
    low, high = (min(known), max(known)) if known else (0.0, (end_ns - start_ns) / 1e9)
    margin = max(high - low, 1e-3) * 0.06
    return low - margin, high + margin


def _seconds(time_ns: int | None, start_ns: int) -> float | None:
    return None if time_ns is None else (time_ns - start_ns) / 1e9


def _draw(axes: Any, view: PartitionView, start_ns: int, end_ns: int) -> None:
    left, right = _span(view, start_ns, end_ns)
    steps_x: list[float] = []
    steps_y: list[int] = []
    behind_x: list[float] = []
    behind_y: list[int] = []
    highest: int | None = None
    for sighting in sorted(view.sightings, key=lambda s: (s.time_ns is None, s.time_ns or 0)):
        x = _seconds(sighting.time_ns, start_ns)
        if x is None:
            continue
        if highest is None or sighting.epoch > highest:
            highest = sighting.epoch
            steps_x.append(x)
            steps_y.append(sighting.epoch)
        elif sighting.epoch < highest:
            behind_x.append(x)
            behind_y.append(sighting.epoch)
    if steps_x:
        axes.step([*steps_x, right], [*steps_y, steps_y[-1]], where="post", color="#1565c0", linewidth=1.8)
        axes.plot([], [], color="#1565c0", linewidth=1.8, label="leader epoch")
    if behind_x:
        axes.scatter(behind_x, behind_y, marker="x", color="#78909c", s=30, zorder=3, label="older epoch reported")
    for verdict in VERDICTS:
        points = [
            (x, m.epoch)
            for m in view.markers
            if m.verdict == verdict and (x := _seconds(m.frame.time_ns, start_ns)) is not None
        ]
        if points:
            marker, colour, size, order = STYLES[verdict]
            xs, ys = zip(*points, strict=True)
            axes.scatter(xs, ys, marker=marker, color=colour, s=size, zorder=order, label=verdict)
    for rule in view.rules:
        x = _seconds(rule.time_ns, start_ns)
        if x is not None:
            axes.axvline(x, color="#616161", linestyle="--", linewidth=0.9, zorder=1)
            axes.annotate(
                literal(rule.label),
                (x, 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize=7,
                color="#424242",
                parse_math=False,
            )
    axes.set_xlim(left=left, right=right)
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.set_xlabel("seconds since the capture's first event")
    axes.set_ylabel("leader epoch")
    title = literal(view.name) + (f"  (cluster {literal(view.cluster)})" if view.cluster else "")
    axes.set_title(title, loc="left", parse_math=False)  # names are text, never math
    axes.grid(True, axis="y", color="#eeeeee")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
