"""How a client reacts to epoch errors, and its jittered metadata refresh (KIP-359)."""

from __future__ import annotations

import random

import pytest

from kafka_epochs.epochs import (
    METADATA_MAX_AGE_MS_DEFAULT,
    ClientAction,
    Errors,
    client_action,
    jittered_interval_ms,
    next_metadata_refresh_ms,
)


@pytest.mark.parametrize(
    ("error", "action"),
    [
        pytest.param(
            Errors.FENCED_LEADER_EPOCH,
            ClientAction.REFRESH_METADATA_AND_RETRY,
            id="KIP-359: FENCED_LEADER_EPOCH -> refresh metadata, then retry",
        ),
        pytest.param(
            Errors.UNKNOWN_LEADER_EPOCH,
            ClientAction.BACKOFF_AND_RETRY,
            id="KIP-359: UNKNOWN_LEADER_EPOCH -> back off and retry, no refresh",
        ),
        pytest.param(Errors.NONE, ClientAction.PROCEED, id="KIP-359: NONE -> proceed"),
        pytest.param(
            Errors.NOT_LEADER_OR_FOLLOWER,
            ClientAction.REFRESH_METADATA_AND_RETRY,
            id="KIP-359 context: NOT_LEADER_OR_FOLLOWER is stale metadata too",
        ),
        pytest.param(
            Errors.INCONSISTENT_TOPIC_ID,
            ClientAction.REFRESH_METADATA_AND_RETRY,
            id="KIP-516: INCONSISTENT_TOPIC_ID -> refresh",
        ),
        pytest.param(Errors.NOT_ENOUGH_REPLICAS, ClientAction.BACKOFF_AND_RETRY, id="other retriable errors back off"),
        pytest.param(Errors.STALE_BROKER_EPOCH, ClientAction.FAIL, id="non-retriable errors fail"),
        pytest.param(999, ClientAction.FAIL, id="an unknown code fails instead of raising"),
        pytest.param(74, ClientAction.REFRESH_METADATA_AND_RETRY, id="KIP-359: raw code 74 works like the member"),
    ],
)
def test_client_action(error: int, action: ClientAction) -> None:
    assert client_action(error) is action


def test_jitter_is_reproducible_with_a_seeded_rng() -> None:
    # KIP-359: "add some randomness to the producer's periodic metadata refreshes".
    first = [jittered_interval_ms(300_000, random.Random(7)) for _ in range(3)]
    second = [jittered_interval_ms(300_000, random.Random(7)) for _ in range(3)]
    assert first == second


def test_jitter_stays_within_its_fraction_and_actually_varies() -> None:
    rng = random.Random(42)
    samples = [jittered_interval_ms(METADATA_MAX_AGE_MS_DEFAULT, rng, jitter=0.2) for _ in range(2000)]
    assert min(samples) >= 240_000
    assert max(samples) <= 360_000
    assert len(set(samples)) > 1000  # not stuck in step with other clients
    assert min(samples) < 250_000 and max(samples) > 350_000  # both ends are reached


def test_zero_jitter_is_the_plain_interval() -> None:
    assert jittered_interval_ms(1000, random.Random(1), jitter=0.0) == 1000


def test_next_refresh_is_after_now() -> None:
    assert 1_000 + 240_000 <= next_metadata_refresh_ms(1_000, random.Random(3)) <= 1_000 + 360_000


@pytest.mark.parametrize(("base", "jitter"), [(-1, 0.2), (1000, -0.1), (1000, 1.0), (1000, 1.5)])
def test_bad_jitter_arguments_are_rejected(base: int, jitter: float) -> None:
    with pytest.raises(ValueError):
        jittered_interval_ms(base, random.Random(0), jitter)
