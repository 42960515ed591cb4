"""The report as one HTML file: inline CSS, inline SVG, no script and nothing fetched."""

from __future__ import annotations

import datetime
import html
from collections.abc import Iterable

from kafka_epochs.report.explain import decode_command, explain
from kafka_epochs.report.literal import literal
from kafka_epochs.report.model import Frame, Incident, PartitionView, ReportData, Summary
from kafka_epochs.report.plots import timeline_svg

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1.5em; max-width: 80em; color: #212121; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f5f5f5; } td.n { text-align: right; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
.note { color: #616161; } .frame { color: #616161; font-size: 0.9em; margin: 0.2em 0 0.8em; }
li.incident p { margin: 0.2em 0; } code { background: #f5f5f5; padding: 0 0.2em; }
.warning { color: #bf360c; }
"""


def render(data: ReportData) -> str:
    """The whole page."""
    summary = data.summary
    start = summary.first_ns or 0
    end = summary.last_ns if summary.last_ns is not None else start
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(data.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(data.title)}</h1>",
        _sources(data.sources),
        _summary(summary),
        _partitions(data, start, end),
        _other_incidents(data.other_incidents, len(data.partitions)),
        _control_requests(data),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def time_text(time_ns: int | None) -> str:
    if time_ns is None:
        return "time unknown"
    moment = datetime.datetime.fromtimestamp(time_ns // 1000 / 1e6, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _e(text: object) -> str:
    return html.escape(literal(text), quote=True)


def _sources(sources: list[str]) -> str:
    if not sources:
        return ""
    return f'<p class="note">Audited: {", ".join(f"<code>{_e(s)}</code>" for s in sources)}</p>'


def _summary(summary: Summary) -> str:
    span = "unknown (the frames carry no times)"
    if summary.first_ns is not None and summary.last_ns is not None:
        seconds = (summary.last_ns - summary.first_ns) / 1e9
        span = f"{_e(time_text(summary.first_ns))} to {_e(time_text(summary.last_ns))} ({seconds:,.3f} s)"
    rows = [
        ("Capture span", span),
        ("Frames with epoch events", f"{summary.frames:,}"),
        ("Clusters", _listed(summary.clusters)),
        ("Clients", _listed(summary.clients)),
        ("Brokers", _listed(summary.brokers)),
        ("Partitions seen", f"{summary.partitions:,}"),
        ("Verdicts the brokers contradict", f"{summary.disagreements:,}"),
    ]
    if summary.split_ids:
        told = "; ".join(
            f"{_e(cluster_id)}: {len(names):,} clusters ({', '.join(_e(n) for n in names)})"
            for cluster_id, names in summary.split_ids.items()
        )
        rows.insert(
            1,
            (
                "Cluster ids shared by separate clusters",
                f"{told}. Judged apart: they give one topic name different topic ids (random per "
                "cluster), as set-ups that fix the cluster id do (--cluster-by cluster-id judges each id as one).",
            ),
        )
    if summary.unreadable:
        reasons = "; ".join(f"{_e(reason)} ({count:,})" for reason, count in summary.unreadable_reasons)
        rows.insert(
            2,
            (
                "Frames that could not be read",
                f'<span class="warning">{summary.unreadable:,}: {_e(summary.coverage)}.</span> {reasons}',
            ),
        )
    if summary.capture_problems:
        problems = "; ".join(
            f"{_e(capture)}: {_e(problem)}" + (f" (and {count - 1:,} more)" if count > 1 else "")
            for capture, problem, count in summary.capture_problems
        )
        rows.insert(
            2,
            (
                "Captures not read whole",
                f'<span class="warning">{len(summary.capture_problems):,}: frames may be missing from them.</span> '
                f"{problems}",
            ),
        )
    out = ['<h2 id="summary">Summary</h2>', "<table>"]
    out += [f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows]
    out.append("</table>")
    if summary.counts:
        out.append('<table id="counts"><tr><th>incident</th><th>rule</th><th>error</th><th>count</th></tr>')
        for (kind, rule, error), count in sorted(summary.counts.items()):
            label = kind.replace("_", " ")
            out.append(
                f"<tr><td>{_e(label)}</td><td>{_e(rule)}</td><td>{_e(error)}</td><td class=n>{count:,}</td></tr>"
            )
        out.append("</table>")
    elif not summary.disagreements:
        said = "No fenced, stale or unknown-epoch requests and no epoch errors in responses"
        if not summary.complete:  # an all-clear is only as good as the frames it read
            said += " among the frames read, not among all the captures held"
        out.append(f'<p id="counts">{_e(said)}.</p>')
    return "\n".join(out)


def _listed(values: list[str], limit: int = 12) -> str:
    if not values:
        return "none seen"
    shown = ", ".join(_e(v) for v in values[:limit])
    more = f" and {len(values) - limit:,} more" if len(values) > limit else ""
    return f"{len(values):,}: {shown}{more}"


def _partitions(data: ReportData, start: int, end: int) -> str:
    out = ['<h2 id="partitions">Partitions with incidents</h2>']
    if not data.partitions:
        out.append("<p>No partition had an incident.</p>")
        return "\n".join(out)
    drawn = len(data.partitions)
    note = f"The {drawn:,} partition{'s' if drawn != 1 else ''} with the most incidents"
    if data.partitions_left_out:
        note += (
            f"; {data.partitions_left_out:,} more with incidents are not drawn "
            f"({data.incidents_left_out:,} incidents, counted in the summary)"
        )
    out.append(f'<p class="note">{note}.</p>')
    number = 0
    for drawn_number, view in enumerate(data.partitions):
        out.append(f'<section class="partition" id="{_e(_anchor(view))}">')
        out.append(f"<h3>{_e(view.name)}</h3>")
        out.append(f"<figure>{timeline_svg(view, start, end, prefix=f'plot{drawn_number}-')}</figure>")
        thinned = view.requests_seen - len(view.markers)
        if thinned > 0:
            out.append(
                f'<p class="note">{len(view.markers):,} of {view.requests_seen:,} requests drawn, '
                "thinned evenly over time within each verdict.</p>"
            )
        out.append("<ol class=incidents>" if view.incidents else "")
        for incident in view.incidents:
            number += 1
            out.append(_incident(incident, number))
        out.append("</ol>" if view.incidents else "")
        unlisted = view.incidents_seen - len(view.incidents)
        if unlisted > 0:
            out.append(f'<p class="note">and {unlisted:,} more incidents of {_e(view.name)}, not listed.</p>')
        out.append("</section>")
    return "\n".join(p for p in out if p)


def _anchor(view: PartitionView) -> str:
    cluster = f"{view.cluster}-" if view.cluster else ""
    return f"partition-{cluster}{view.name}"


def _incident(incident: Incident, number: int) -> str:
    warnings = "".join(f'<p class="warning">read with a warning: {_e(w)}</p>' for w in incident.warnings)
    return (
        f'<li class="incident {_e(incident.kind)}" id="incident-{number}">'
        f'<p class="explanation">{_e(explain(incident))}</p>{warnings}'
        f'<p class="frame">{_frame(incident.frame)}</p></li>'
    )


def _frame(frame: Frame) -> str:
    flow = f"{frame.client or '?'} → {frame.broker or '?'}"
    bits = [_e(time_text(frame.time_ns)), _e(flow)]
    if frame.correlation_id is not None:
        bits.append(f"correlation id {frame.correlation_id}")
    if frame.capture:
        bits.append(f"<code>{_e(frame.capture)}</code>")
    command = decode_command(frame)
    if command:
        bits.append(f"see it: <code>{_e(command)}</code>")
    return " · ".join(bits)


def _other_incidents(incidents: list[Incident], numbered: int) -> str:
    if not incidents:
        return ""
    out = ['<h2 id="other-incidents">Incidents about no one partition</h2><ol class=incidents>']
    out += [_incident(incident, numbered + 1000 + i) for i, incident in enumerate(incidents)]
    out.append("</ol>")
    return "\n".join(out)


def _control_requests(data: ReportData) -> str:
    out = ['<h2 id="stray-partitions">LeaderAndIsr requests and stray partitions (KIP-516, KIP-550)</h2>']
    requests = data.control_requests
    if not requests:
        out.append("<p>No LeaderAndIsr request was captured: the stray-partition view needs one.</p>")
        return "\n".join(out)
    out.append(
        '<p class="note">From LeaderAndIsr v5 (KIP-516) a controller says whether a request is FULL '
        "(every partition the broker should host) or INCREMENTAL. A partition that earlier requests "
        "gave a broker and a later FULL request leaves out is a stray on that broker, which KIP-550 "
        "has the broker delete.</p>"
    )
    out.append(
        "<table><tr><th>time</th><th>controller → broker</th><th>version</th><th>type</th>"
        "<th>partitions</th><th>strays</th></tr>"
    )
    for request in requests:
        out.append(
            f"<tr><td>{_e(time_text(request.frame.time_ns))}</td>"
            f"<td>{_e(request.frame.client or '?')} → {_e(request.frame.broker or '?')}</td>"
            f"<td class=n>{request.api_version}</td><td>{_e(request.kind or '(no type before v5)')}</td>"
            f"<td>{_names(request.partitions)}</td><td>{_names(request.strays) or 'none'}</td></tr>"
        )
    out.append("</table>")
    if data.control_requests_left_out:
        out.append(f'<p class="note">{data.control_requests_left_out:,} more LeaderAndIsr requests not listed.</p>')
    return "\n".join(out)


def _names(names: Iterable[str], limit: int = 20) -> str:
    names = list(names)
    shown = ", ".join(_e(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")


__all__ = ["render", "time_text"]
