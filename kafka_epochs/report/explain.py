"""One or two sentences per incident: what was sent, which rule judged it, what should follow."""

from __future__ import annotations

import shlex

from kafka_epochs.report.model import (
    DISAGREEMENT,
    FENCED,
    FENCED_RESPONSE,
    STALE_CONTROL,
    STALE_REQUEST,
    STOP_REPLICA_FENCED,
    UNKNOWN,
    Frame,
    Incident,
)

#: The KIP whose rule fences a request's leader epoch, by api.
_CLIENT_RULES = {
    "Produce": "KIP-359",
    "Fetch": "KIP-320",
    "ListOffsets": "KIP-320",
    "OffsetForLeaderEpoch": "KIP-320",
}
CONTROLLER_EPOCH_RULE = "controller epoch"


def rule_of(incident: Incident) -> str:
    """The rule (a KIP, or the controller-epoch check) behind an incident."""
    if incident.error == STALE_CONTROL:
        return CONTROLLER_EPOCH_RULE
    if incident.api == "StopReplica":
        return "KIP-570"
    return _CLIENT_RULES.get(incident.api or "", "leader epoch")


def partition_name(incident: Incident) -> str:
    if incident.partition is None:
        return incident.topic or "the request"
    return f"{incident.topic if incident.topic is not None else '?'}-{incident.partition}"


def decode_command(frame: Frame) -> str | None:
    """The ``kafka-epochs decode`` call that prints the frame's exchange, when the frame can be named."""
    if not frame.decodable or not frame.capture or frame.correlation_id is None or not frame.client:
        return None
    args = ["kafka-epochs", "decode", frame.capture, "--client", frame.client]
    args += ["--correlation-id", str(frame.correlation_id)]
    return shlex.join(args)


def explain(incident: Incident) -> str:
    """The incident in words, naming the rule and the KIP."""
    return _EXPLAINERS[incident.kind](incident)


def _request(incident: Incident) -> str:
    version = f" v{incident.api_version}" if incident.api_version is not None else ""
    client = f" from {incident.frame.client}" if incident.frame.client else ""
    return f"{incident.api or 'A request'}{version}{client}"


def _stale_request(incident: Incident) -> str:
    rule, where = rule_of(incident), partition_name(incident)
    sent = f"{_request(incident)} carried leader epoch {incident.requested_epoch} for {where}"
    if incident.error == UNKNOWN:
        text = (
            f"{sent}, newer than the leader's {incident.leader_epoch} as far as the capture shows "
            f"→ {UNKNOWN} ({rule}): the broker has not caught up with the client's metadata; "
            "the client retries after a backoff."
        )
    else:
        text = (
            f"{sent} while the leader was at {incident.leader_epoch} → {incident.error} ({rule}): "
            "the client's metadata is stale; it should refresh its metadata and retry."
        )
    return text + _answer(incident)


def _stop_replica(incident: Incident) -> str:
    deletes = " and deleted the partition" if incident.delete else ""
    return (
        f"{_request(incident)} (the controller) carried leader epoch {incident.requested_epoch} "
        f"for {partition_name(incident)} while the replica was at {incident.leader_epoch} "
        f"→ {incident.error} (KIP-570): the broker ignores a StopReplica from an older leadership "
        f"instead of stopping the replica{deletes}." + _answer(incident)
    )


def _answer(incident: Incident) -> str:
    if incident.broker_error == incident.error:
        return f" The broker answered {incident.broker_error} too."
    if incident.broker_error:
        return f" The broker answered {incident.broker_error}."
    return ""


def _fenced_response(incident: Incident) -> str:
    frame = incident.frame
    broker = f"The broker {frame.broker}" if frame.broker else "The broker"
    asked = f" (correlation id {frame.correlation_id})" if frame.correlation_id is not None else ""
    client = f" from {frame.client}" if frame.client else ""
    where = f" for {partition_name(incident)}" if incident.partition is not None else ""
    at = f" at {incident.path}" if incident.path else ""
    said = f"{broker} answered {incident.api or 'a request'}{asked}{client} with {incident.error}{where}{at}"
    rule = rule_of(incident)
    if incident.error == STALE_CONTROL:
        return f"{said} ({rule}): the request came from a controller older than the one this broker follows."
    if incident.api == "StopReplica":
        return f"{said} ({rule}): the controller's request came from an older leadership than the replica's."
    if incident.error == FENCED:
        return f"{said} ({rule}): the client's epoch was older than the leader's; it must refresh its metadata."
    return f"{said} ({rule}): the client's epoch was newer than the broker's; the broker is behind."


def _disagreement(incident: Incident) -> str:
    answered = incident.broker_error or "without an epoch error"
    return (
        f"The audit judged {_request(incident)} ({partition_name(incident)}, epoch "
        f"{incident.requested_epoch}, leader's {incident.leader_epoch}) {incident.error} "
        f"({rule_of(incident)}), but the broker answered {answered}: the capture most likely missed "
        "an epoch change (a LeaderAndIsr or Metadata answer outside it), so this verdict is not trusted."
    )


_EXPLAINERS = {
    STALE_REQUEST: _stale_request,
    STOP_REPLICA_FENCED: _stop_replica,
    FENCED_RESPONSE: _fenced_response,
    DISAGREEMENT: _disagreement,
}
