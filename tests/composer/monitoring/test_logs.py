"""Log lines: JSON with the request id, and no secret in any format."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from composer.monitoring.celery_hooks import request_id_carry
from composer.monitoring.logs import JsonFormatter, PlainFormatter, redact
from composer.monitoring.requestid import (
    HEADER,
    RequestIdFilter,
    request_id_reset,
    request_id_set,
)

SECRETS = {
    "url": "redis://:hunter2-redis-pw@10.0.0.5:6379/0",
    "assignment": "password=Sw0rdfish!99",
    "json": '{"username": "admin", "password": "p4ss-w0rd-json"}',
    "header": "Authorization: Bearer abcdef0123456789token",
    "api_token": "Token 0123456789abcdef0123456789abcdef01234567",
}


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO, io.StringIO]]:
    """A logger writing both formats to strings, with the request id filter."""
    logger = logging.getLogger("composer.test_logs")
    plain_out, json_out = io.StringIO(), io.StringIO()
    handlers = []
    for out, formatter in (
        (plain_out, PlainFormatter("%(levelname)s %(name)s %(request_id)s %(message)s")),
        (json_out, JsonFormatter()),
    ):
        handler = logging.StreamHandler(out)
        handler.setFormatter(formatter)
        handler.addFilter(RequestIdFilter())
        logger.addHandler(handler)
        handlers.append(handler)
    logger.setLevel(logging.INFO)
    yield logger, plain_out, json_out
    for handler in handlers:
        logger.removeHandler(handler)


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_secret_in_a_message_never_reaches_the_log(
    kind: str, captured: tuple[logging.Logger, io.StringIO, io.StringIO]
) -> None:
    logger, plain, as_json = captured
    text = SECRETS[kind]
    logger.info("connecting with %s", text)
    for output in (plain.getvalue(), as_json.getvalue()):
        for secret in (
            "hunter2-redis-pw",
            "Sw0rdfish!99",
            "p4ss-w0rd-json",
            "abcdef0123456789token",
            "0123456789abcdef0123456789abcdef01234567",
        ):
            assert secret not in output
        assert "***" in output


def test_the_deployments_own_secrets_are_blanked_wherever_they_appear(
    settings: Any, captured: tuple[logging.Logger, io.StringIO, io.StringIO]
) -> None:
    settings.COMPOSER_METRICS_TOKEN = "metrics-token-7f3a9c"
    settings.COMPOSER_CREDENTIALS_KEYS = ["QUs3a1RmQ2hvc2VuRm9yVGhlVGVzdHNPbmx5MTIzNDU="]
    logger, plain, as_json = captured
    logger.warning(
        "odd values %s and %s and %s",
        "metrics-token-7f3a9c",
        settings.COMPOSER_CREDENTIALS_KEYS[0],
        settings.SECRET_KEY,
    )
    for output in (plain.getvalue(), as_json.getvalue()):
        assert "metrics-token-7f3a9c" not in output
        assert settings.COMPOSER_CREDENTIALS_KEYS[0] not in output
        assert settings.SECRET_KEY not in output


def test_a_traceback_is_redacted_too(
    captured: tuple[logging.Logger, io.StringIO, io.StringIO],
) -> None:
    logger, plain, as_json = captured
    try:
        raise ConnectionError("cannot reach redis://user:t0p-s3cret@redis:6379")
    except ConnectionError:
        logger.exception("broker away")
    line = json.loads(as_json.getvalue())
    assert "ConnectionError" in line["exception"]
    assert "t0p-s3cret" not in line["exception"] and "t0p-s3cret" not in plain.getvalue()


def test_a_json_line_carries_the_request_id(
    captured: tuple[logging.Logger, io.StringIO, io.StringIO],
) -> None:
    logger, _, as_json = captured
    token = request_id_set("req-123")
    try:
        logger.info("composition %s requested", 7)
    finally:
        request_id_reset(token)
    logger.info("outside any request")
    first, second = (json.loads(line) for line in as_json.getvalue().splitlines())
    assert first["request_id"] == "req-123" and first["message"] == "composition 7 requested"
    assert first["level"] == "INFO" and first["logger"] == "composer.test_logs"
    assert second["request_id"] == "-"


def test_redact_leaves_ordinary_words_alone() -> None:
    text = "job 12 (compose) succeeded: 3 tokens of 4 bound, passwords rotated"
    assert redact(text) == text


@pytest.mark.django_db
def test_each_response_names_its_request_id_and_a_forged_one_is_replaced(client: Client) -> None:
    given = client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a.1")
    assert given["X-Request-ID"] == "lb-7f3a.1"
    fresh = client.get("/healthz")
    assert len(fresh["X-Request-ID"]) == 32
    forged = client.get("/healthz", HTTP_X_REQUEST_ID='x" level=ERROR')
    assert forged["X-Request-ID"] != 'x" level=ERROR' and len(forged["X-Request-ID"]) == 32


def test_a_task_sent_during_a_request_carries_its_id() -> None:
    headers: dict[str, Any] = {}
    token = request_id_set("req-456")
    try:
        request_id_carry(headers=headers)
    finally:
        request_id_reset(token)
    assert headers == {HEADER: "req-456"}
    outside: dict[str, Any] = {}
    request_id_carry(headers=outside)
    assert outside == {}


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password='correct horse, battery' next", "horse, battery"),
        ('{"token": "abc def, ghi jkl", "x": 1}', "def, ghi"),
        ('password="esc\\"aped value" z', "aped value"),
        ("postgres://user:p@ss@db:5432/composer", "p@ss"),
        ("redis://:pa/ss@w0rd@redis:6379/0 away", "pa/ss@w0rd"),
        ("{'password': b'bytes pass phrase'}", "bytes pass"),
        ("passphrase=long-phrase-99", "long-phrase-99"),
        ("pwd=pw-value-77", "pw-value-77"),
        ("private_key='-----BEGIN KEY----- MIIEv'", "MIIEv"),
        ("secret: s3cr3t-value", "s3cr3t-value"),
        ("token=tok-value-55", "tok-value-55"),
        ("api_key=key-value-44", "key-value-44"),
        ("authorization: Digest dig-value-33", "dig-value-33"),
        ("{'X-Auth-Token': 'xat-value-22'}", "xat-value-22"),
    ],
)
def test_redact_masks_each_form_of_secret_to_its_end(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted, redacted
    assert "***" in redacted
