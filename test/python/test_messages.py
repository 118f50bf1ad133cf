"""Successful calls through the gateway with the official Python SDK, sync and async: Messages created and
streamed, a tool round trip, token counts, the model list and its pages, request ids and both key headers.

Live keys reach the simulated upstream, which echoes the last user message word by word (one output token
per word) and calls the first tool when the text contains sim:tool-call.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic
import pytest
from conftest import LIVE_KEY, MODEL, TEST_KEY, async_client, sync_client, sync_client_sending_x_api_key

REQUEST_ID = re.compile(r"^req_[A-Za-z0-9]{24}$")
WEATHER_TOOL: dict[str, Any] = {
    "name": "get_weather",
    "description": "The weather in a city now",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def content(message: Any) -> list[dict[str, Any]]:
    """The content blocks as the wire had them (the stream helper's blocks add a parsed_output of their own)."""
    return [
        {name: value for name, value in block.model_dump().items() if name != "parsed_output"}
        for block in message.content
    ]


def ask(text: str, max_tokens: int = 256, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": max_tokens, "messages": [{"role": "user", "content": text}], **extra}


def test_create_returns_the_echoed_message_with_usage_and_request_id() -> None:
    client, wire = sync_client(LIVE_KEY)
    with client:
        message = client.messages.create(**ask("Hello from the Python SDK"))
    assert message.type == "message"
    assert message.role == "assistant"
    assert message.model == MODEL
    assert [(block.type, getattr(block, "text", None)) for block in message.content] == [
        ("text", "Hello from the Python SDK")
    ]
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens == 5
    assert message.usage.input_tokens > 0
    assert REQUEST_ID.match(message._request_id or "")
    (response,) = wire.responses
    assert response.headers["x-request-id"] == message._request_id
    assert response.headers["request-id"] == message._request_id
    assert response.headers["content-type"].startswith("application/json")


def test_max_tokens_cuts_the_answer() -> None:
    client, _ = sync_client(LIVE_KEY)
    with client:
        message = client.messages.create(**ask("one two three four five", max_tokens=2))
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 2
    assert message.content[0].type == "text" and message.content[0].text == "one two"


@pytest.mark.parametrize(
    "form, sent",
    [
        # This SDK sends api_key as a bearer token, like auth_token.
        ("api_key", "authorization"),
        ("auth_token", "authorization"),
        ("x-api-key header", "x-api-key"),
    ],
)
def test_the_key_works_in_either_header(form: str, sent: str) -> None:
    if form == "api_key":
        client, wire = sync_client(LIVE_KEY)
    elif form == "auth_token":
        client, wire = sync_client(auth_token=LIVE_KEY)
    else:
        client, wire = sync_client_sending_x_api_key(LIVE_KEY)
    with client:
        message = client.messages.create(**ask(f"sent as {form}"))
    assert message.content[0].type == "text" and message.content[0].text == f"sent as {form}"
    (request,) = wire.requests
    if sent == "x-api-key":
        assert request.headers["x-api-key"] == LIVE_KEY
        assert "authorization" not in request.headers
    else:
        assert request.headers["authorization"] == f"Bearer {LIVE_KEY}"
        assert "x-api-key" not in request.headers


def test_stream_gives_the_same_text_as_create_in_the_upstream_order() -> None:
    client, wire = sync_client(LIVE_KEY)
    params = ask("one two three four five six")
    with client:
        created = client.messages.create(**params)
        with client.messages.stream(**params) as stream:
            pieces = list(stream.text_stream)
            final = stream.get_final_message()
            request_id = stream.request_id
        events: list[str] = []
        with client.messages.stream(**params) as stream:
            for event in stream:
                events.append(event.type)
    assert len(pieces) == 6
    assert "".join(pieces) == "one two three four five six"
    assert content(final) == content(created)
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == created.usage.output_tokens == 6
    assert final.usage.input_tokens == created.usage.input_tokens
    assert REQUEST_ID.match(request_id or "")
    assert wire.responses[1].headers["x-request-id"] == request_id
    assert wire.responses[1].headers["content-type"].startswith("text/event-stream")
    # The helper adds a "text" event after each delta; the wire's events keep their order around it.
    wire_events = [event for event in events if event != "text"]
    assert wire_events == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 6,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_a_test_key_gets_the_same_stub_answer_streamed_and_not() -> None:
    client, _ = sync_client(TEST_KEY)
    params = ask("stub please", max_tokens=64)
    with client:
        first = client.messages.create(**params)
        second = client.messages.create(**params)
        with client.messages.stream(**params) as stream:
            streamed = stream.get_final_message()
    assert first.content == second.content
    assert first.content[0].type == "text" and first.content[0].text
    assert content(streamed) == content(first)


def test_a_tool_call_and_its_result_make_a_round_trip() -> None:
    client, _ = sync_client(LIVE_KEY)
    question = "sim:tool-call what is the weather in Paris"
    with client:
        call = client.messages.create(**ask(question, tools=[WEATHER_TOOL]))
        assert call.stop_reason == "tool_use"
        (tool_use,) = call.content
        assert tool_use.type == "tool_use"
        assert tool_use.name == "get_weather"
        assert tool_use.id.startswith("toolu_")
        assert tool_use.input == {"echo": question}

        with client.messages.stream(**ask(question, tools=[WEATHER_TOOL])) as stream:
            streamed = stream.get_final_message()
        (streamed_use,) = streamed.content
        assert streamed_use.type == "tool_use" and streamed_use.input == {"echo": question}
        assert streamed.stop_reason == "tool_use"

        answer = client.messages.create(
            model=MODEL,
            max_tokens=64,
            tools=[WEATHER_TOOL],
            messages=[
                {"role": "user", "content": question},
                {"role": "assistant", "content": call.content},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "Sunny and 21 degrees"}],
                },
            ],
        )
    assert answer.stop_reason == "end_turn"
    assert answer.content[0].type == "text" and answer.content[0].text == "Sunny and 21 degrees"


def test_count_tokens_agrees_with_the_usage_of_the_same_prompt() -> None:
    client, wire = sync_client(LIVE_KEY)
    prompt = {
        "model": MODEL,
        "system": "You answer briefly.",
        "tools": [WEATHER_TOOL],
        "messages": [{"role": "user", "content": "How many tokens is this prompt, roughly?"}],
    }
    with client:
        counted = client.messages.count_tokens(**prompt)
        message = client.messages.create(max_tokens=64, **prompt)
    assert counted.input_tokens > 10
    assert counted.input_tokens == message.usage.input_tokens
    assert str(wire.requests[0].url).endswith("/v1/messages/count_tokens")


def test_models_list_pages_through_every_model() -> None:
    client, wire = sync_client(LIVE_KEY)
    with client:
        whole = client.models.list(limit=100)
        paged = [model.id for model in client.models.list(limit=1)]
        first = client.models.list(limit=1)
        second = first.get_next_page()
        back = client.models.list(limit=1, before_id=second.data[0].id)
        one = client.models.retrieve(MODEL)
    ids = [model.id for model in whole.data]
    assert MODEL in ids and len(ids) >= 2
    assert whole.has_more is False
    assert whole.first_id == ids[0] and whole.last_id == ids[-1]
    assert paged == ids
    # One request per page, each asking for the page after the last one.
    page_requests = [request for request in wire.requests if request.url.params.get("limit") == "1"][: len(ids)]
    assert [request.url.params.get("after_id") for request in page_requests] == [None, *ids[:-1]]
    assert first.has_more is True and [model.id for model in first.data] == ids[:1]
    assert [model.id for model in second.data] == ids[1:2]
    assert [model.id for model in back.data] == ids[:1]
    assert one.id == MODEL and one.display_name == "Claude Sonnet 5"
    assert one.created_at.year >= 2025


async def test_async_create_stream_and_count() -> None:
    client, wire = async_client(LIVE_KEY)
    async with client:
        created = await client.messages.create(**ask("async one two three"))
        async with client.messages.stream(**ask("async one two three")) as stream:
            pieces = [text async for text in stream.text_stream]
            final = await stream.get_final_message()
        counted = await client.messages.count_tokens(
            model=MODEL, messages=[{"role": "user", "content": "async one two three"}]
        )
    assert created.content[0].type == "text" and created.content[0].text == "async one two three"
    assert REQUEST_ID.match(created._request_id or "")
    assert wire.responses[0].headers["x-request-id"] == created._request_id
    assert wire.requests[0].headers["x-stainless-async"].startswith("async:")
    assert "".join(pieces) == "async one two three" and len(pieces) == 4
    assert content(final) == content(created)
    assert final.usage.output_tokens == 4
    assert counted.input_tokens == created.usage.input_tokens


async def test_async_bearer_tool_round_trip() -> None:
    client, wire = async_client(auth_token=LIVE_KEY)
    question = "sim:tool-call weather in Lyon"
    async with client:
        async with client.messages.stream(**ask(question, tools=[WEATHER_TOOL])) as stream:
            call = await stream.get_final_message()
        (tool_use,) = call.content
        assert tool_use.type == "tool_use" and tool_use.input == {"echo": question}
        answer = await client.messages.create(
            model=MODEL,
            max_tokens=64,
            tools=[WEATHER_TOOL],
            messages=[
                {"role": "user", "content": question},
                {"role": "assistant", "content": call.content},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "Rain"}]},
            ],
        )
    assert answer.content[0].type == "text" and answer.content[0].text == "Rain"
    assert all(request.headers["authorization"] == f"Bearer {LIVE_KEY}" for request in wire.requests)
    assert all("x-api-key" not in request.headers for request in wire.requests)


async def test_async_models_list_pages() -> None:
    client, _ = async_client(TEST_KEY)
    async with client:
        whole = await client.models.list(limit=100)
        paged = [model.id async for model in client.models.list(limit=1)]
    assert paged == [model.id for model in whole.data]
    assert len(paged) >= 2


def test_the_raw_response_parses_into_the_message() -> None:
    client, _ = sync_client(LIVE_KEY)
    with client:
        raw = client.messages.with_raw_response.create(**ask("raw body"))
    message = raw.parse()
    assert isinstance(message, anthropic.types.Message)
    assert set(raw.http_response.json()) >= {"id", "type", "role", "model", "content", "stop_reason", "usage"}
    assert raw.request_id == message._request_id
