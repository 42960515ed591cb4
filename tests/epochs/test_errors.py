"""The error table: Kafka's names and numbers, the retriable flag, unknown codes."""

from __future__ import annotations

import pytest

from kafka_epochs.epochs import Errors

# The codes the epoch rules answer with, as the issue lists them (name, number, which KIP uses it).
EPOCH_RULE_CODES = [
    pytest.param("NONE", 0, False, id="NONE 0"),
    pytest.param("UNKNOWN_TOPIC_OR_PARTITION", 3, True, id="UNKNOWN_TOPIC_OR_PARTITION 3 (produce, LeaderAndIsr)"),
    pytest.param("NOT_LEADER_OR_FOLLOWER", 6, True, id="NOT_LEADER_OR_FOLLOWER 6 (KIP-359 produce)"),
    pytest.param("STALE_CONTROLLER_EPOCH", 11, False, id="STALE_CONTROLLER_EPOCH 11 (controller epoch)"),
    pytest.param("KAFKA_STORAGE_ERROR", 56, True, id="KAFKA_STORAGE_ERROR 56 (offline log dir)"),
    pytest.param("FENCED_LEADER_EPOCH", 74, True, id="FENCED_LEADER_EPOCH 74 (KIP-320/359/570)"),
    pytest.param("UNKNOWN_LEADER_EPOCH", 75, True, id="UNKNOWN_LEADER_EPOCH 75 (KIP-320/359)"),
    pytest.param("STALE_BROKER_EPOCH", 77, False, id="STALE_BROKER_EPOCH 77 (KIP-380)"),
    pytest.param("UNKNOWN_TOPIC_ID", 100, True, id="UNKNOWN_TOPIC_ID 100 (KIP-516)"),
    pytest.param("INCONSISTENT_TOPIC_ID", 103, True, id="INCONSISTENT_TOPIC_ID 103 (KIP-516)"),
]


@pytest.mark.parametrize(("name", "code", "retriable"), EPOCH_RULE_CODES)
def test_epoch_rule_codes_have_kafkas_names_and_numbers(name: str, code: int, retriable: bool) -> None:
    error = Errors[name]
    assert error == code
    assert Errors(code) is error
    assert Errors.for_code(code) is error
    assert error.retriable is retriable
    assert error.is_known


def test_the_table_is_kafkas_whole_table() -> None:
    # -1 and 0 to 133 with no gaps: Apache Kafka's table up to 4.1.
    assert sorted(int(e) for e in Errors) == list(range(-1, 134))
    assert Errors.UNKNOWN_SERVER_ERROR == -1
    assert Errors.SHARE_SESSION_LIMIT_REACHED == 133


@pytest.mark.parametrize("code", [134, 999, -2, 32767, -32768])
def test_unknown_codes_get_a_placeholder_instead_of_an_exception(code: int) -> None:
    error = Errors.for_code(code)
    assert isinstance(error, Errors)
    assert int(error) == code
    assert error.name == f"UNKNOWN_CODE_{code}"
    assert not error.is_known
    assert not error.retriable
    assert Errors(code) is error  # the same placeholder every time
    assert error not in list(Errors)  # and it does not join the table


@pytest.mark.parametrize("value", [1 << 15, -(1 << 15) - 1, "74"])
def test_values_that_cannot_be_an_error_code_are_still_rejected(value: object) -> None:
    with pytest.raises(ValueError, match="is not a valid Errors"):
        Errors(value)  # type: ignore[arg-type]
