"""Failures as the official Python SDK sees them: the exception class of every status the gateway answers
with, how many attempts the SDK makes for each (its own retry rules, steered by the gateway's
x-should-retry and retry-after headers), the request id on every error, and errors inside a stream that
already began (a key revoked mid-stream, an upstream failing mid-stream), which the SDK never retries.

Test keys answer from the gateway's stub: gw-test:error:<type> fails with that error type (retryable ones
with retry-after 1 s), gw-test:slow streams for ten seconds, gw-test:stream-error fails after three deltas.
Live keys reach the simulated upstream: sim:error=<status> makes it answer that status.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import pytest
from conftest import (
    LIVE_KEY,
    MODEL,
    SINGLE_ENDPOINT_MODEL,
    TEST_KEY,
    Wire,
    async_client,
    create_account,
    create_key,
    revoke_key,
    sync_client,
)

REQUEST_ID = re.compile(r"^req_[A-Za-z0-9]{24}$")
# The SDK's default: two retries after the first attempt.
DEFAULT_RETRIES = 2


def ask(text: str = "hello", model: str = MODEL, **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": 32, "messages": [{"role": "user", "content": text}], **extra}


def raised(call: Callable[[], Any]) -> anthropic.APIStatusError:
    with pytest.raises(anthropic.APIStatusError) as caught:
        call()
    return caught.value


def check_envelope(error: anthropic.APIStatusError, status: int, error_type: str, wire: Wire) -> None:
    """The status, the error envelope and its request id, the same in the body, the header and the SDK."""
    assert error.status_code == status
    assert error.type == error_type
    assert isinstance(error.body, dict)
    assert error.body["type"] == "error"
    assert error.body["error"]["type"] == error_type
    assert isinstance(error.body["error"]["message"], str) and error.body["error"]["message"]
    assert REQUEST_ID.match(error.request_id or "")
    assert error.body["request_id"] == error.request_id
    assert wire.responses[-1].headers["x-request-id"] == error.request_id


def refused_key() -> str:
    return "gw_live_" + "N" * 32


def key_fenced_to_other_addresses() -> str:
    return create_key(allowed_ips=["198.51.100.0/24"])["key"]


def starter_key() -> str:
    """The starter plan takes bodies up to 1 MiB (deploy/local/gateway.yaml)."""
    return create_key(create_account(plan="starter"))["key"]


# Refusals the SDK must not retry: each a single attempt though the client allows two retries.
NOT_RETRIED = [
    pytest.param(
        lambda: TEST_KEY,
        # The model is one of the few fields the gateway reads, so it judges it itself.
        {"model": "", "max_tokens": 32, "messages": [{"role": "user", "content": "hi"}]},
        anthropic.BadRequestError,
        400,
        "invalid_request_error",
        id="400 invalid body",
    ),
    pytest.param(
        lambda: LIVE_KEY,
        ask("sim:error=400"),
        anthropic.BadRequestError,
        400,
        "invalid_request_error",
        id="400 from the upstream",
    ),
    pytest.param(refused_key, ask(), anthropic.AuthenticationError, 401, "authentication_error", id="401 unknown key"),
    pytest.param(
        key_fenced_to_other_addresses,
        ask(),
        anthropic.PermissionDeniedError,
        403,
        "permission_error",
        id="403 address outside the key's list",
    ),
    pytest.param(
        lambda: TEST_KEY, ask(model="no-such-model"), anthropic.NotFoundError, 404, "not_found_error", id="404 model"
    ),
    pytest.param(
        starter_key,
        ask("x" * (1024 * 1024 + 1)),
        anthropic.ContentTooLargeError,
        413,
        "request_too_large",
        id="413 body over the plan's limit",
    ),
    pytest.param(
        lambda: TEST_KEY,
        ask(model="claude-opus-5"),
        anthropic.UnprocessableEntityError,
        422,
        "residency_unavailable",
        id="422 model outside the key's residency",
    ),
]


@pytest.mark.parametrize("key, params, error_class, status, error_type", NOT_RETRIED)
def test_a_refusal_raises_its_class_after_one_attempt(
    key: Callable[[], str], params: dict[str, Any], error_class: type, status: int, error_type: str
) -> None:
    client, wire = sync_client(key(), max_retries=DEFAULT_RETRIES)
    with client:
        error = raised(lambda: client.messages.create(**params))
    assert type(error) is error_class
    check_envelope(error, status, error_type, wire)
    assert wire.responses[-1].headers["x-should-retry"] == "false"
    assert wire.attempts == 1


def away_from_a_minute_boundary(margin_s: float = 3.0) -> None:
    """The per-minute window is the clock's minute: two requests meant for one window must not straddle two."""
    until_next = 60.0 - time.time() % 60.0
    if until_next < margin_s:
        time.sleep(until_next + 0.05)


def test_the_requests_per_minute_limit_raises_rate_limit_error_with_its_wait() -> None:
    key = create_key(create_account(limits={"requests_per_minute": 1}))["key"]
    away_from_a_minute_boundary()
    # The wait is the rest of the minute, which the SDK would sleep through: one attempt only here (the retries
    # of a 429 are counted below, with the stub's one-second wait).
    client, wire = sync_client(key, max_retries=0)
    with client:
        client.messages.create(**ask())
        error = raised(lambda: client.messages.create(**ask()))
    assert type(error) is anthropic.RateLimitError
    check_envelope(error, 429, "rate_limit_error", wire)
    headers = error.response.headers
    assert headers["x-should-retry"] == "true"
    assert 0 < int(headers["retry-after"]) <= 60
    assert headers["anthropic-ratelimit-requests-limit"] == "1"
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"


def test_an_exhausted_allowance_raises_rate_limit_error_that_is_not_retried() -> None:
    account = create_account(limits={"monthly_tokens": 1, "hard_ceiling_tokens": 1, "overage": False})
    client, wire = sync_client(create_key(account, environment="live")["key"], max_retries=DEFAULT_RETRIES)
    with client:
        client.messages.create(**ask("spend the allowance"))
        # The first request's tokens are charged as it ends, just after its answer: asked again until then.
        refusal: anthropic.RateLimitError | None = None
        deadline = time.monotonic() + 10
        while refusal is None and time.monotonic() < deadline:
            wire.requests.clear()
            try:
                client.messages.create(**ask("and more"))
            except anthropic.RateLimitError as error:
                refusal = error
            else:
                time.sleep(0.05)
    assert refusal is not None, "the allowance was never exhausted"
    check_envelope(refusal, 429, "quota_exceeded", wire)
    assert refusal.response.headers["x-should-retry"] == "false"
    assert wire.attempts == 1


@pytest.fixture
def single_endpoint_recovers() -> Iterator[None]:
    """The upstream endpoint a test failed on answers again afterwards: its circuit breaker counts consecutive
    failures, and the tests that follow must find it admitted."""
    yield
    client, _ = sync_client(LIVE_KEY)
    with client:
        assert client.messages.create(**ask("recovered", model=SINGLE_ENDPOINT_MODEL)).stop_reason == "end_turn"


@pytest.mark.parametrize(
    "upstream_status, error_class, status, error_type",
    [
        pytest.param(529, anthropic.ServiceUnavailableError, 503, "overloaded_error", id="529 becomes 503"),
        pytest.param(503, anthropic.ServiceUnavailableError, 503, "overloaded_error", id="503"),
        pytest.param(500, anthropic.InternalServerError, 500, "api_error", id="500"),
    ],
)
def test_an_upstream_failure_is_retried_by_the_sdk(
    single_endpoint_recovers: None, upstream_status: int, error_class: type, status: int, error_type: str
) -> None:
    client, wire = sync_client(LIVE_KEY, max_retries=DEFAULT_RETRIES)
    with client:
        error = raised(lambda: client.messages.create(**ask(f"sim:error={upstream_status}", SINGLE_ENDPOINT_MODEL)))
    assert type(error) is error_class
    check_envelope(error, status, error_type, wire)
    assert wire.attempts == 1 + DEFAULT_RETRIES
    assert [response.status_code for response in wire.responses] == [status] * 3
    assert all(response.headers["x-should-retry"] == "true" for response in wire.responses)
    # Each attempt is a new request with its own id, numbered by the SDK.
    assert len({response.headers["x-request-id"] for response in wire.responses}) == 3
    assert [request.headers["x-stainless-retry-count"] for request in wire.requests] == ["0", "1", "2"]


RETRIED = [
    ("rate_limit_error", anthropic.RateLimitError, 429),
    ("api_error", anthropic.InternalServerError, 500),
    ("overloaded_error", anthropic.ServiceUnavailableError, 503),
]


async def test_async_retryable_errors_are_tried_three_times() -> None:
    async def attempt(error_type: str) -> tuple[anthropic.APIStatusError, Wire]:
        client, wire = async_client(TEST_KEY, max_retries=DEFAULT_RETRIES)
        async with client:
            with pytest.raises(anthropic.APIStatusError) as caught:
                await client.messages.create(**ask(f"gw-test:error:{error_type}"))
        return caught.value, wire

    # Concurrently: each waits the one second the gateway asks for twice.
    results = await asyncio.gather(*(attempt(error_type) for error_type, _, _ in RETRIED))
    for (error_type, error_class, status), (error, wire) in zip(RETRIED, results):
        assert type(error) is error_class
        check_envelope(error, status, error_type, wire)
        assert wire.attempts == 1 + DEFAULT_RETRIES
        assert all(response.headers["retry-after"] == "1" for response in wire.responses)


async def test_async_refusals_raise_their_class_once() -> None:
    cases = [
        (refused_key(), ask(), anthropic.AuthenticationError),
        (TEST_KEY, ask(model="no-such-model"), anthropic.NotFoundError),
        (TEST_KEY, ask(model="claude-opus-5"), anthropic.UnprocessableEntityError),
        (TEST_KEY, ask("gw-test:error:permission_error"), anthropic.PermissionDeniedError),
        (TEST_KEY, ask("gw-test:error:request_too_large"), anthropic.ContentTooLargeError),
    ]
    for key, params, error_class in cases:
        client, wire = async_client(key, max_retries=DEFAULT_RETRIES)
        async with client:
            with pytest.raises(anthropic.APIStatusError) as caught:
                await client.messages.create(**params)
        assert type(caught.value) is error_class
        assert REQUEST_ID.match(caught.value.request_id or "")
        assert wire.attempts == 1


def test_a_bearer_token_that_is_no_key_raises_authentication_error() -> None:
    client, wire = sync_client(auth_token=refused_key(), max_retries=DEFAULT_RETRIES)
    with client:
        error = raised(lambda: client.messages.create(**ask()))
    assert type(error) is anthropic.AuthenticationError
    check_envelope(error, 401, "authentication_error", wire)
    assert wire.attempts == 1


def test_a_key_revoked_mid_stream_ends_the_stream_with_an_error_the_sdk_raises() -> None:
    key = create_key()
    client, wire = sync_client(key["key"], max_retries=DEFAULT_RETRIES)
    received: list[str] = []
    with client:
        with client.messages.stream(**ask("gw-test:slow", max_tokens=64)) as stream:
            with pytest.raises(anthropic.APIStatusError) as caught:
                for text in stream.text_stream:
                    if not received:
                        revoke_key(key["id"])
                    received.append(text)
        error = caught.value
        # A revoked key is refused from then on.
        refused = raised(lambda: client.messages.create(**ask()))
    assert received, "the stream began before the revocation"
    # An error event inside a 200 stream: the SDK raises the base class with the stream's status.
    assert type(error) is anthropic.APIStatusError
    assert error.status_code == 200
    assert error.type == "authentication_error"
    assert error.request_id == stream.request_id
    assert REQUEST_ID.match(error.request_id or "")
    assert type(refused) is anthropic.AuthenticationError
    # Neither the broken stream nor the refusal was retried.
    assert wire.attempts == 2


async def test_async_a_key_revoked_mid_stream_raises_in_the_async_stream() -> None:
    key = create_key()
    client, wire = async_client(auth_token=key["key"], max_retries=DEFAULT_RETRIES)
    received: list[str] = []
    async with client, client.messages.stream(**ask("gw-test:slow", max_tokens=64)) as stream:
        with pytest.raises(anthropic.APIStatusError) as caught:
            async for text in stream.text_stream:
                if not received:
                    await asyncio.to_thread(revoke_key, key["id"])
                received.append(text)
    assert received
    assert type(caught.value) is anthropic.APIStatusError
    assert caught.value.status_code == 200
    assert caught.value.type == "authentication_error"
    assert wire.attempts == 1


def test_an_upstream_error_mid_stream_is_raised_and_not_retried() -> None:
    client, wire = sync_client(TEST_KEY, max_retries=DEFAULT_RETRIES)
    received: list[str] = []
    with client, client.messages.stream(**ask("gw-test:stream-error", max_tokens=64)) as stream:
        with pytest.raises(anthropic.APIStatusError) as caught:
            for text in stream.text_stream:
                received.append(text)
    assert len(received) == 3
    assert caught.value.status_code == 200
    assert caught.value.type == "overloaded_error"
    assert wire.attempts == 1
