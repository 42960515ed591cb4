"""Raw SASL tokens after a SaslHandshake v0: recognised, paired, counted as decoded, and hidden."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from sasl_sessions import PLAIN_TOKEN, P, capture, handshake, metadata, raw, v0_session

from kafka_epochs import Protocol
from kafka_epochs.cli import main
from kafka_epochs.framing import Connection, RequestEvent, ResponseEvent, SaslToken
from kafka_epochs.traffic import Kind, decode_capture


def feed(conn: Connection, chunks: list[tuple[str, bytes]]) -> list[object]:
    events: list[object] = []
    for side, data in chunks:
        events += conn.client_bytes(data) if side == "client" else conn.broker_bytes(data)
    return events


def test_tokens_after_a_v0_handshake_are_recognised_and_paired() -> None:
    events = feed(Connection(P), v0_session())
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["RequestEvent", "ResponseEvent", "SaslToken", "SaslToken", "RequestEvent", "ResponseEvent"]
    client, broker = events[2], events[3]
    assert isinstance(client, SaslToken) and isinstance(broker, SaslToken)
    assert client.from_client and client.mechanism == "PLAIN" and client.frame[4:] == PLAIN_TOKEN
    assert not broker.from_client and broker.request is client and broker.length == 0
    after = events[4]
    assert isinstance(after, RequestEvent) and after.error is None and after.correlation_id == 2
    assert all(e.error is None for e in events if isinstance(e, (RequestEvent, ResponseEvent)))


def test_no_tokens_after_a_v1_handshake_or_a_failed_one() -> None:
    for chunks in (handshake(1), handshake(0, error_code=33)):  # 33: UNSUPPORTED_SASL_MECHANISM
        events = feed(Connection(P), [*chunks, *metadata(2)])
        assert [type(e).__name__ for e in events] == ["RequestEvent", "ResponseEvent"] * 2
        assert all(e.error is None for e in events)  # type: ignore[attr-defined]


def run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue()


def test_a_sasl_v0_capture_decodes_whole_and_hides_the_password(tmp_path: Path) -> None:
    path = capture(tmp_path, v0_session())
    exchanges = list(decode_capture(path, Protocol.auto()))
    assert [x.kind for x in exchanges] == [Kind.PAIR, Kind.SASL_TOKEN, Kind.PAIR]
    assert all(x.ok for x in exchanges)
    code, out = run("decode", str(path))
    assert code == 0  # every exchange decoded: nothing is "unknown api key 0"
    rows = [json.loads(line) for line in out.splitlines()]
    token = rows[1]
    assert token["kind"] == "sasl_token" and token["api"] == "SaslTokens" and token["mechanism"] == "PLAIN"
    assert "s3cret" not in out and "hidden" in token["client_token"]
    code, shown = run("decode", str(path), "--sasl-secrets")
    assert code == 0 and json.loads(shown.splitlines()[1])["client_token"] == "AGFsaWNlAHMzY3JldC1wdw=="


def test_sasl_authenticate_auth_bytes_are_hidden_too(tmp_path: Path) -> None:
    request = P.message("SaslAuthenticateRequest")(auth_bytes=PLAIN_TOKEN)
    response = P.message("SaslAuthenticateResponse")(error_code=0, auth_bytes=b"")
    chunks = [
        *handshake(1),
        ("client", P.encode_request(request, 1, correlation_id=2)),
        ("broker", P.encode_response(response, 1, correlation_id=2)),
    ]
    code, out = run("decode", str(capture(tmp_path, chunks)))
    assert code == 0 and "AGFsaWNl" not in out
    authenticate = json.loads(out.splitlines()[1])
    assert authenticate["request"]["auth_bytes"].startswith(f"<{len(PLAIN_TOKEN)} bytes, hidden")


def test_an_unanswered_token_is_reported(tmp_path: Path) -> None:
    path = capture(tmp_path, [*handshake(0), ("client", raw(PLAIN_TOKEN))])
    exchanges = list(decode_capture(path, Protocol.auto()))
    assert exchanges[-1].kind is Kind.SASL_TOKEN and not exchanges[-1].ok
    assert run("decode", str(path))[0] == 1
