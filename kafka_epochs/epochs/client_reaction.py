"""What a client does with a partition error (KIP-359), and its jittered metadata refresh.

KIP-359 gives the producer two different answers to an epoch mismatch:

- ``FENCED_LEADER_EPOCH``: the client's metadata is older than the leader's, so it refreshes
  metadata and then retries.
- ``UNKNOWN_LEADER_EPOCH``: the client is ahead of the broker (it heard of an election the
  broker has not applied yet), so a refresh would tell it nothing new; it backs off and
  retries with the metadata it has.

The KIP also suggests randomising the periodic metadata refresh, so that a client stuck on
stale metadata does not stay in step with everyone else; :func:`jittered_interval_ms` does that
with a caller-supplied ``random.Random`` so tests can fix the outcome.
"""

from __future__ import annotations

import random
from enum import Enum

from kafka_epochs.epochs.errors import Errors

#: Kafka clients' ``metadata.max.age.ms`` default: refresh metadata at least every 5 minutes.
METADATA_MAX_AGE_MS_DEFAULT = 300_000
#: Kafka clients' ``retry.backoff.ms`` default.
RETRY_BACKOFF_MS_DEFAULT = 100
#: The jitter Kafka's clients apply to their exponential backoffs (KIP-580's 20%); reused here
#: because KIP-359 names no figure for the metadata refresh.
DEFAULT_JITTER = 0.2


class ClientAction(Enum):
    """The client's next step for one partition after a response."""

    PROCEED = "proceed"
    REFRESH_METADATA_AND_RETRY = "refresh metadata, then retry"
    BACKOFF_AND_RETRY = "back off, then retry without refreshing"
    FAIL = "fail"


# Errors that mean "your view of the cluster is out of date". In Kafka's Java client these are
# the subclasses of InvalidMetadataException, which make the producer and consumer request a
# metadata update before retrying. FENCED_LEADER_EPOCH is one of them; UNKNOWN_LEADER_EPOCH is
# deliberately not (KIP-359).
STALE_METADATA_ERRORS = frozenset(
    {
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.NETWORK_EXCEPTION,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.LISTENER_NOT_FOUND,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.INCONSISTENT_TOPIC_ID,
    }
)


def client_action(error: int) -> ClientAction:
    """The step a client takes for ``error`` (a member of :class:`Errors` or a raw code).

    ``NONE`` proceeds; stale-metadata errors refresh then retry; other retriable errors (with
    ``UNKNOWN_LEADER_EPOCH`` among them) back off and retry; everything else, codes unknown to
    the table included, fails.
    """
    err = Errors.for_code(int(error))
    if err is Errors.NONE:
        return ClientAction.PROCEED
    if err in STALE_METADATA_ERRORS:
        return ClientAction.REFRESH_METADATA_AND_RETRY
    if err.retriable:
        return ClientAction.BACKOFF_AND_RETRY
    return ClientAction.FAIL


def jittered_interval_ms(base_ms: int, rng: random.Random, jitter: float = DEFAULT_JITTER) -> int:
    """``base_ms`` moved up or down by at most ``jitter`` of itself, uniformly at random.

    With the defaults a 300,000 ms refresh lands anywhere in [240,000, 360,000] ms. ``jitter``
    must be in [0, 1): a jitter of 1 or more could schedule a refresh at or before now.
    """
    if base_ms < 0:
        raise ValueError(f"base_ms must not be negative, got {base_ms}")
    if not 0.0 <= jitter < 1.0:
        raise ValueError(f"jitter must be in [0, 1), got {jitter}")
    return round(base_ms * (1.0 + rng.uniform(-jitter, jitter)))


def next_metadata_refresh_ms(
    now_ms: int,
    rng: random.Random,
    max_age_ms: int = METADATA_MAX_AGE_MS_DEFAULT,
    jitter: float = DEFAULT_JITTER,
) -> int:
    """When the next periodic metadata refresh is due, given the time of the last one."""
    return now_ms + jittered_interval_ms(max_age_ms, rng, jitter)
