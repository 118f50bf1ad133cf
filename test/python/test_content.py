"""Content users of the upstream API send every day, through both adapters, as the Python SDK sees it: extended
thinking (thinking, signature and redacted blocks), prompt-cache counts, images and documents, the model alias in
answers, the input count of a stream's first event, and anthropic-beta headers.

The simulated upstream thinks when asked (thinking on: the echo again as a thinking block signed with base64 of
its SHA-256; sim:redacted-thinking adds a redacted block first), reports cache counts on request
(sim:cache-write=<n>, sim:cache-read=<n>), sends vLLM's reasoning_content with sim:reasoning, and refuses
anthropic-beta names it does not know as the real API does. Its request log shows what the gateway sent on.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import anthropic
import pytest
from conftest import (
    LIVE_KEY,
    MODEL,
    SIM_ANTHROPIC_EU,
    SIM_MODEL_EU,
    SIM_OPENAI_EU,
    async_client,
    create_account,
    create_key,
    sync_client,
    upstream_request,
)

THINKING = {"type": "enabled", "budget_tokens": 1024}
# The simulated upstream's fixed redacted_thinking data.
REDACTED_DATA = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URjIBAg=="
OPENAI_MODEL = "llama-4-maverick"
# A model whose upstream id (dated) is not its alias.
DATED_MODEL = "claude-haiku-4-5"
# A 1×1 PNG and a one-page PDF, as base64.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PDF = base64.b64encode(
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj "
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 3 3]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
).decode()


def signature(thinking: str) -> str:
    """The simulated upstream's signature of a thinking text: HMAC-SHA256 under its fixed, public key."""
    digest = hmac.new(b"sim-upstream: thinking signatures", thinking.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def blocks(message: Any) -> list[dict[str, Any]]:
    """The content blocks with the fields the wire carries for each type."""
    fields = {"thinking": ("thinking", "signature"), "redacted_thinking": ("data",), "text": ("text",)}
    return [
        {"type": block.type, **{name: getattr(block, name) for name in fields[block.type]}} for block in message.content
    ]


def ask(text: str, model: str = MODEL, max_tokens: int = 2048, **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": max_tokens, "messages": [{"role": "user", "content": text}], **extra}


def delta_types(events: list[Any]) -> list[str]:
    return [event.delta.type for event in events if event.type == "content_block_delta"]


@pytest.mark.parametrize("redacted", [False, True], ids=["thinking", "redacted and thinking"])
def test_thinking_blocks_are_relayed_exactly_streamed_and_not(redacted: bool) -> None:
    text = "think it over twice" + (" sim:redacted-thinking" if redacted else "")
    words = len(text.split())
    expected = [
        *([{"type": "redacted_thinking", "data": REDACTED_DATA}] if redacted else []),
        {"type": "thinking", "thinking": text, "signature": signature(text)},
        {"type": "text", "text": text},
    ]
    client, _ = sync_client(LIVE_KEY)
    with client:
        created = client.messages.create(**ask(text, thinking=THINKING))
        with client.messages.stream(**ask(text, thinking=THINKING)) as stream:
            events = list(stream)
            streamed = stream.get_final_message()
    assert blocks(created) == expected
    assert blocks(streamed) == expected
    # Thinking is output: one token per word of it, and one for a redacted block.
    assert created.usage.output_tokens == streamed.usage.output_tokens == 2 * words + (1 if redacted else 0)
    wire = [event for event in events if event.type not in ("text", "thinking", "signature")]
    starts = [event.content_block.type for event in wire if event.type == "content_block_start"]
    assert starts == [block["type"] for block in expected]
    assert delta_types(wire) == ["thinking_delta"] * words + ["signature_delta"] + ["text_delta"] * words
    # The SDK's helper events see the same.
    assert "".join(event.thinking for event in events if event.type == "thinking") == text
    assert [event.signature for event in events if event.type == "signature"] == [signature(text)]


async def test_async_thinking_stream() -> None:
    text = "async thinking sim:redacted-thinking"
    client, _ = async_client(LIVE_KEY)
    async with client, client.messages.stream(**ask(text, thinking=THINKING)) as stream:
        streamed = await stream.get_final_message()
    assert blocks(streamed) == [
        {"type": "redacted_thinking", "data": REDACTED_DATA},
        {"type": "thinking", "thinking": text, "signature": signature(text)},
        {"type": "text", "text": text},
    ]


def test_thinking_is_sent_back_in_the_next_turn_untouched() -> None:
    text = "remember what you thought"
    client, _ = sync_client(LIVE_KEY)
    with client:
        first = client.messages.create(**ask(text, thinking=THINKING))
        marker = "thinking-follow-up-marker"
        second = client.messages.create(
            model=MODEL,
            max_tokens=2048,
            thinking=THINKING,
            messages=[
                {"role": "user", "content": text},
                {"role": "assistant", "content": first.content},
                {"role": "user", "content": marker},
            ],
        )
    assert blocks(second)[-1] == {"type": "text", "text": marker}
    sent = upstream_request(SIM_MODEL_EU, marker)["body"]["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": text, "signature": signature(text)}


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking on", "thinking off"])
def test_openai_reasoning_becomes_thinking_only_when_asked(thinking: bool) -> None:
    text = "sim:reasoning reason it out"
    words = len(text.split())
    extra = {"thinking": THINKING} if thinking else {}
    client, _ = sync_client(LIVE_KEY)
    with client:
        created = client.messages.create(**ask(text, OPENAI_MODEL, **extra))
        with client.messages.stream(**ask(text, OPENAI_MODEL, **extra)) as stream:
            events = list(stream)
            streamed = stream.get_final_message()
    # The upstream signs nothing: the signature is empty.
    expected = [
        *([{"type": "thinking", "thinking": text, "signature": ""}] if thinking else []),
        {"type": "text", "text": text},
    ]
    assert blocks(created) == expected
    assert blocks(streamed) == expected
    # Reasoning is output whether it is shown or not.
    assert created.usage.output_tokens == streamed.usage.output_tokens == 2 * words
    assert ("thinking_delta" in delta_types(events)) is thinking


def test_cache_counts_and_cache_control_pass_through() -> None:
    marker = "cache-marker sim:cache-write=5 sim:cache-read=7"
    system = [{"type": "text", "text": "A long system prompt worth caching.", "cache_control": {"type": "ephemeral"}}]
    client, _ = sync_client(LIVE_KEY)
    with client:
        created = client.messages.create(**ask(marker, system=system))
        with client.messages.stream(**ask(marker, system=system)) as stream:
            streamed = stream.get_final_message()
    for message in (created, streamed):
        assert message.usage.cache_creation_input_tokens == 5
        assert message.usage.cache_read_input_tokens == 7
        assert message.usage.input_tokens == created.usage.input_tokens > 0
    assert upstream_request(SIM_MODEL_EU, marker)["body"]["system"] == system


def test_images_and_documents_reach_the_anthropic_upstream_untouched() -> None:
    marker = "anthropic-media-marker"
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
        {"type": "document", "source": {"type": "url", "url": "https://example.com/paper.pdf"}},
        {"type": "text", "text": marker},
    ]
    client, _ = sync_client(LIVE_KEY)
    with client:
        message = client.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": content}])
    assert blocks(message) == [{"type": "text", "text": marker}]
    assert upstream_request(SIM_MODEL_EU, marker)["body"]["messages"] == [{"role": "user", "content": content}]


def test_the_openai_adapter_translates_images_and_refuses_a_pdf() -> None:
    marker = "openai-media-marker"
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    client, _ = sync_client(LIVE_KEY)
    with client:
        message = client.messages.create(
            model=OPENAI_MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": [image, {"type": "text", "text": marker}]}],
        )
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.create(
                model=OPENAI_MODEL,
                max_tokens=64,
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "document",
                                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                            },
                            {"type": "text", "text": "pdf-refusal-marker"},
                        ],
                    }
                ],
            )
    assert blocks(message) == [{"type": "text", "text": marker}]
    sent = upstream_request(SIM_OPENAI_EU, marker)["body"]["messages"][-1]["content"]
    assert {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}} in sent
    assert refused.value.type == "invalid_request_error"
    assert "document" in (refused.value.api_message or "")


@pytest.mark.parametrize(
    "model, upstream_model, sim",
    [
        (DATED_MODEL, "claude-haiku-4-5-20251001", "anthropic"),
        (OPENAI_MODEL, "meta-llama/Llama-4-Maverick", "openai"),
    ],
)
def test_answers_name_the_alias_the_caller_asked_for(model: str, upstream_model: str, sim: str) -> None:
    marker = f"alias-marker-{sim}"
    client, _ = sync_client(LIVE_KEY)
    with client:
        created = client.messages.create(**ask(marker, model))
        with client.messages.stream(**ask(marker, model)) as stream:
            first_event = next(iter(stream))
            streamed = stream.get_final_message()
    assert created.model == model
    assert streamed.model == model
    assert first_event.type == "message_start" and first_event.message.model == model
    # The stream's first event already counts the input (the OpenAI adapter estimates it).
    assert first_event.message.usage.input_tokens > 0
    sim_url = SIM_ANTHROPIC_EU if sim == "anthropic" else SIM_OPENAI_EU
    assert upstream_request(sim_url, marker)["body"]["model"] == upstream_model


def test_anthropic_beta_reaches_the_upstream_and_an_unknown_one_fails_as_there() -> None:
    # On the Anthropic API (Bedrock and Vertex take only the betas they support, test_regional.py).
    marker = "beta-marker"
    client, _ = sync_client(LIVE_KEY)
    with client:
        message = client.beta.messages.create(
            **ask(marker, DATED_MODEL, max_tokens=64),
            betas=["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"],
        )
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.beta.messages.create(
                **ask("unknown beta", DATED_MODEL, max_tokens=64), betas=["no-such-beta-2099-01-01"]
            )
    assert message.content[0].type == "text" and message.content[0].text == marker
    headers = upstream_request(SIM_ANTHROPIC_EU, marker)["headers"]
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14,context-1m-2025-08-07"
    assert refused.value.type == "invalid_request_error"
    assert "`no-such-beta-2099-01-01`" in (refused.value.api_message or "")
    assert "anthropic-beta" in (refused.value.api_message or "")


def test_cache_tokens_are_weighted_in_v1_usage() -> None:
    """Billable tokens: input + output + ceil(10 % of cache reads) + ceil(125 % of cache writes), per request."""
    key = create_key(create_account(), environment="live")["key"]
    client, _ = sync_client(key)
    with client:
        created = client.messages.create(**ask("weighted sim:cache-read=25 sim:cache-write=7", max_tokens=64))
        with client.messages.stream(**ask("streamed sim:cache-read=11 sim:cache-write=1", max_tokens=64)) as stream:
            streamed = stream.get_final_message()
        assert (created.usage.cache_read_input_tokens, created.usage.cache_creation_input_tokens) == (25, 7)
        assert (streamed.usage.cache_read_input_tokens, streamed.usage.cache_creation_input_tokens) == (11, 1)
        billable = (created.usage.input_tokens + created.usage.output_tokens + 3 + 9) + (
            streamed.usage.input_tokens + streamed.usage.output_tokens + 2 + 2
        )
        # Usage reaches /v1/usage through Kafka and metering: asked again until it is there.
        deadline = time.monotonic() + 10
        report = client.get("/v1/usage", cast_to=object)
        while report["tokens"]["used"] < billable and time.monotonic() < deadline:
            time.sleep(0.1)
            report = client.get("/v1/usage", cast_to=object)
    assert report["tokens"]["used"] == billable
    assert [(line["model"], line["requests"], line["billable_tokens"]) for line in report["by_model"]] == [
        (MODEL, 2, billable)
    ]


@pytest.mark.parametrize("model", [MODEL, OPENAI_MODEL])
def test_tokenise_restores_the_text_and_leaves_thinking_as_signed(model: str) -> None:
    """The upstream sees placeholders; the caller gets the originals back in the text, streamed and not, while
    thinking keeps its placeholders: its signature covers its text, so the gateway never changes it."""
    email = "jane.doe@example.com"
    text = f"{'sim:reasoning ' if model == OPENAI_MODEL else ''}please write to {email} today"
    key = create_key(environment="live", privacy_mode="tokenise")["key"]
    client, _ = sync_client(key)
    with client:
        created = client.messages.create(**ask(text, model, thinking=THINKING))
        with client.messages.stream(**ask(text, model, thinking=THINKING)) as stream:
            streamed = stream.get_final_message()
    for message in (created, streamed):
        thinking, answer = message.content
        assert thinking.type == "thinking" and email not in thinking.thinking
        assert thinking.thinking.startswith(text.split(email)[0]) and "today" in thinking.thinking
        assert answer.type == "text" and answer.text == text
    sim_url = SIM_MODEL_EU if model == MODEL else SIM_OPENAI_EU
    sent = upstream_request(sim_url, "today")
    assert email not in json.dumps(sent["body"])


def test_openai_cached_tokens_are_cache_reads() -> None:
    """A chat completions server reports prefix-cache hits as cached prompt tokens: cache reads, out of the input."""
    marker = "openai-cache-marker"
    system = [{"type": "text", "text": "A system prompt.", "cache_control": {"type": "ephemeral"}}]
    client, _ = sync_client(LIVE_KEY)
    with client:
        plain = client.messages.create(**ask(marker, OPENAI_MODEL, max_tokens=64, system=system))
        cached = client.messages.create(**ask(f"{marker} sim:cache-read=6", OPENAI_MODEL, max_tokens=64, system=system))
    assert plain.usage.cache_read_input_tokens in (0, None)
    assert cached.usage.cache_read_input_tokens == 6
    assert cached.usage.cache_creation_input_tokens in (0, None)
    # The protocol has no cache_control: it is not sent on.
    assert "cache_control" not in json.dumps(upstream_request(SIM_OPENAI_EU, marker)["body"])


def test_privacy_modes_scan_text_and_urls_and_leave_data_alone() -> None:
    email = "jane.doe@example.com"
    marker = "private-media-marker"
    media = [
        # Data sources stay byte for byte; a URL is text the upstream reads, and is scanned.
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
        {"type": "image", "source": {"type": "url", "url": f"https://example.com/{email}/555-0100.png"}},
    ]
    key = create_key(environment="live", privacy_mode="tokenise")["key"]
    client, _ = sync_client(key)
    with client:
        message = client.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": [*media, {"type": "text", "text": f"{marker} mail {email}"}]}],
        )
    assert blocks(message) == [{"type": "text", "text": f"{marker} mail {email}"}]
    sent = upstream_request(SIM_MODEL_EU, marker)["body"]["messages"][0]["content"]
    assert sent[:2] == media[:2]
    assert email not in sent[2]["source"]["url"]
    assert email not in sent[3]["text"] and sent[3]["text"].startswith(f"{marker} mail ")
