"""What every Python SDK test shares: the stack's addresses and keys, the admin API, and SDK clients whose
HTTP client counts the attempts they make (the SDK's retries are invisible otherwise).

test/e2e/python-sdk.test.ts runs this suite inside the end-to-end stack and passes, in the environment:
GW_BASE_URL (the public API, without /v1), GW_ADMIN_URL and GW_ADMIN_TOKEN (the admin API), GW_ACCOUNT_ID and
one live and one test key of that account (GW_LIVE_KEY, GW_TEST_KEY; residency eu, privacy mode off), and
GW_SIM_URLS: the simulated upstreams behind the Anthropic EU, Anthropic UK and OpenAI-compatible EU pools, then
Bedrock London, Bedrock Ireland and Vertex AI Netherlands.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import anthropic
import pytest

BASE_URL = os.environ["GW_BASE_URL"]
ADMIN_URL = os.environ["GW_ADMIN_URL"]
ADMIN_TOKEN = os.environ["GW_ADMIN_TOKEN"]
ACCOUNT_ID = os.environ["GW_ACCOUNT_ID"]
LIVE_KEY = os.environ["GW_LIVE_KEY"]
TEST_KEY = os.environ["GW_TEST_KEY"]
SIM_ANTHROPIC_EU, SIM_ANTHROPIC_UK, SIM_OPENAI_EU, SIM_BEDROCK_UK, SIM_BEDROCK_EU, SIM_VERTEX_EU = os.environ[
    "GW_SIM_URLS"
].split(",")

# Served by the upstream pools of the keys' residency (eu); the same model the TypeScript SDK tests use.
MODEL = "claude-sonnet-5"
# Where MODEL's calls for an EU key go first: Bedrock in Ireland (then Vertex AI, then the Anthropic API).
SIM_MODEL_EU = SIM_BEDROCK_EU
# Served by one pool with one endpoint only, so that tests whose upstream fails know which endpoint failed.
SINGLE_ENDPOINT_MODEL = "claude-haiku-4-5"


def admin(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """One call to the admin API as the operator: its status and parsed body."""
    request = urllib.request.Request(
        f"{ADMIN_URL}/admin/v1{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def upstream_request(sim_url: str, marker: str) -> dict[str, Any]:
    """The newest request the simulated upstream received whose body holds the marker text: what the gateway
    sent on (headers without credentials, the parsed body)."""
    with urllib.request.urlopen(f"{sim_url}/_sim/requests", timeout=30) as response:
        log = json.loads(response.read())
    matching = [entry for entry in log if marker in json.dumps(entry["body"])]
    assert matching, f"no request with {marker!r} reached {sim_url}"
    return matching[-1]


def create_account(plan: str = "pro", limits: dict[str, Any] | None = None) -> str:
    status, account = admin("POST", "/accounts", {"name": "python-sdk", "plan": plan})
    assert status == 201, account
    if limits:
        status, body = admin("PATCH", f"/accounts/{account['id']}/limits", limits)
        assert status == 200, body
    return account["id"]


def create_key(account_id: str = ACCOUNT_ID, **attributes: Any) -> dict[str, Any]:
    """A new key (id, key, …): a test key of the account, residency eu, privacy off, unless told otherwise."""
    status, key = admin(
        "POST",
        "/keys",
        {
            "account_id": account_id,
            "name": "python-sdk",
            "environment": "test",
            "residency": "eu",
            "privacy_mode": "off",
            **attributes,
        },
    )
    assert status == 201, key
    return key


def revoke_key(key_id: str) -> None:
    status, body = admin("POST", f"/keys/{key_id}/revoke")
    assert status == 200, body


def sync_client_sending_x_api_key(key: str, max_retries: int = 0) -> tuple[anthropic.Anthropic, Wire]:
    """A client that sends the key in x-api-key, as the TypeScript SDK and older Python SDKs do: this SDK sends
    api_key as Authorization: Bearer, and takes a client with no key when an x-api-key header is set."""
    return sync_client(headers={"x-api-key": key}, max_retries=max_retries)


@dataclass
class Wire:
    """The requests an SDK client sent and the responses it got, one entry per attempt."""

    requests: list[Any] = field(default_factory=list)
    responses: list[Any] = field(default_factory=list)

    @property
    def attempts(self) -> int:
        return len(self.requests)


def sync_client(
    api_key: str | None = None,
    *,
    auth_token: str | None = None,
    headers: dict[str, str] | None = None,
    max_retries: int = 0,
) -> tuple[anthropic.Anthropic, Wire]:
    wire = Wire()
    http_client = anthropic.DefaultHttpxClient(
        event_hooks={"request": [wire.requests.append], "response": [wire.responses.append]}
    )
    client = anthropic.Anthropic(
        base_url=BASE_URL,
        api_key=api_key,
        auth_token=auth_token,
        default_headers=headers,
        max_retries=max_retries,
        http_client=http_client,
    )
    return client, wire


def async_client(
    api_key: str | None = None,
    *,
    auth_token: str | None = None,
    headers: dict[str, str] | None = None,
    max_retries: int = 0,
) -> tuple[anthropic.AsyncAnthropic, Wire]:
    wire = Wire()

    # The async HTTP client awaits its hooks.
    async def on_request(request: Any) -> None:
        wire.requests.append(request)

    async def on_response(response: Any) -> None:
        wire.responses.append(response)

    http_client = anthropic.DefaultAsyncHttpxClient(event_hooks={"request": [on_request], "response": [on_response]})
    client = anthropic.AsyncAnthropic(
        base_url=BASE_URL,
        api_key=api_key,
        auth_token=auth_token,
        default_headers=headers,
        max_retries=max_retries,
        http_client=http_client,
    )
    return client, wire


@pytest.fixture
def live() -> tuple[anthropic.Anthropic, Wire]:
    return sync_client(LIVE_KEY)


@pytest.fixture
def live_async() -> tuple[anthropic.AsyncAnthropic, Wire]:
    return async_client(LIVE_KEY)
