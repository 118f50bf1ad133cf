"""The regional providers through the gateway, as the Python SDK sees them: claude-sonnet-regional is served by
Bedrock in London for UK keys and by Vertex AI in the Netherlands, then Bedrock in Ireland, for EU keys;
claude-sonnet-5 by Bedrock in Ireland, then Vertex, then the Anthropic API, for EU keys. The simulators check the
router's SigV4 signatures and Google tokens; their request logs show the provider bodies.
"""

from __future__ import annotations

import pytest
from conftest import (
    MODEL,
    SIM_BEDROCK_EU,
    SIM_BEDROCK_UK,
    SIM_VERTEX_EU,
    async_client,
    create_account,
    create_key,
    sync_client,
    upstream_request,
)

# Not a name the SDK knows: it warns of deprecated model names, and the suite fails on warnings.
REGIONAL_MODEL = "claude-sonnet-regional"


def live_key(residency: str) -> str:
    return create_key(create_account(), environment="live", residency=residency)["key"]


def test_uk_key_is_answered_by_bedrock_in_london_whole_and_streamed() -> None:
    client, _ = sync_client(live_key("uk"))
    text = "Python through London"
    response = client.messages.with_raw_response.create(
        model=REGIONAL_MODEL, max_tokens=128, messages=[{"role": "user", "content": text}]
    )
    assert response.headers["x-gateway-region"] == "uk-south"
    message = response.parse()
    assert message.model == REGIONAL_MODEL and message.content[0].text == text
    sent = upstream_request(SIM_BEDROCK_UK, text)
    assert sent["path"] == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
    assert sent["body"]["anthropic_version"] == "bedrock-2023-05-31" and "model" not in sent["body"]

    streamed_text = "Python streamed through London"
    with client.messages.stream(
        model=REGIONAL_MODEL, max_tokens=128, messages=[{"role": "user", "content": streamed_text}]
    ) as stream:
        assert "".join(stream.text_stream) == streamed_text
        assert stream.get_final_message().usage.output_tokens == len(streamed_text.split())
    assert upstream_request(SIM_BEDROCK_UK, streamed_text)["path"].endswith("/invoke-with-response-stream")


def test_bedrock_drops_betas_it_does_not_support_and_names_them() -> None:
    client, _ = sync_client(live_key("uk"))
    text = "Python betas"
    response = client.messages.with_raw_response.create(
        model=REGIONAL_MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": text}],
        extra_headers={"anthropic-beta": "claude-code-20250219,token-efficient-tools-2025-02-19"},
    )
    assert response.headers["x-gateway-dropped-betas"] == "claude-code-20250219"
    assert upstream_request(SIM_BEDROCK_UK, text)["body"]["anthropic_beta"] == ["token-efficient-tools-2025-02-19"]


@pytest.mark.asyncio
async def test_eu_key_fails_over_from_bedrock_to_vertex() -> None:
    client, _ = async_client(live_key("eu"))
    text = "Python fails over sim:bedrock-unavailable"
    async with client.messages.stream(
        model=MODEL, max_tokens=128, messages=[{"role": "user", "content": text}]
    ) as stream:
        message = await stream.get_final_message()
    assert message.content[0].text == text
    assert upstream_request(SIM_BEDROCK_EU, text)["outcome"] == "completed"
    sent = upstream_request(SIM_VERTEX_EU, text)
    assert sent["path"].endswith(":streamRawPredict")
    assert sent["body"]["stream"] is True and sent["body"]["anthropic_version"] == "vertex-2023-10-16"


def test_eu_key_counts_tokens_at_vertex() -> None:
    client, _ = sync_client(live_key("eu"))
    text = "Python counts in Eemshaven"
    count = client.messages.count_tokens(model=REGIONAL_MODEL, messages=[{"role": "user", "content": text}])
    assert count.input_tokens > 0
    sent = upstream_request(SIM_VERTEX_EU, text)
    assert sent["path"].endswith("/publishers/anthropic/models/count-tokens:rawPredict")
    assert sent["body"]["model"] == "claude-sonnet-4-5@20250929"
