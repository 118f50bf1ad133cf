import { createBedrockAdapter, toInvokeRequest } from '../src/adapters/bedrock';
import { bedrockAdapterConfig } from '../src/adapters/bedrock/config';
import { providerBody } from '../src/adapters/raw-body';
import { createVertexAdapter, vertexAdapterConfig } from '../src/adapters/vertex';
import type { AdapterCall } from '../src/adapters';

/** A body with an integer beyond 2^53, an unknown field, odd spacing and escapes in keys and strings. */
const raw =
  '{ "model" : "claude-sonnet-4-5", "max_tokens": 64,\n "stream":true, "metadata": {"user_id": "a\\"b"},' +
  ' "messages": [{"role": "user", "content": "Hi \\u00e9 {\\"x\\": [1]}"}], "x_big": 12345678901234567891, "m\\u006fdel": 1 }';

function call(stream: boolean, headers: Record<string, string> = {}): AdapterCall {
  return {
    endpointUrl: 'https://bedrock-runtime.eu-west-2.amazonaws.com',
    upstreamModel: 'anthropic.claude-sonnet-4-5-20250929-v1:0',
    body: JSON.parse(raw) as Record<string, unknown>,
    rawBody: Buffer.from(raw),
    stream,
    headers,
    credential: undefined,
    query: '',
    requestId: 'req_test',
  };
}

describe('the provider body', () => {
  it('drops model and stream (also written with escapes), adds the provider members, and keeps every other byte', () => {
    const edited = providerBody(call(true), [['anthropic_version', '"v"']]);
    expect(edited.toString()).toBe(
      '{ "max_tokens": 64,\n "metadata": {"user_id": "a\\"b"}, "messages": [{"role": "user", "content": "Hi \\u00e9 {\\"x\\": [1]}"}],' +
        ' "x_big": 12345678901234567891 ,"anthropic_version":"v"}',
    );
  });
});

describe('the Bedrock request', () => {
  it('puts the model id in the path and the version in the body, without model or stream', () => {
    const request = toInvokeRequest(bedrockAdapterConfig, call(true));
    expect(request.url).toBe(
      'https://bedrock-runtime.eu-west-2.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream',
    );
    expect(request.headers.accept).toBe('application/vnd.amazon.eventstream');
    expect(String(request.body)).toContain('"x_big": 12345678901234567891');
    const body = JSON.parse(String(request.body)) as Record<string, unknown>;
    expect(body.model).toBeUndefined();
    expect(body.stream).toBeUndefined();
    expect(body.anthropic_version).toBe('bedrock-2023-05-31');
    expect(toInvokeRequest(bedrockAdapterConfig, call(false)).url).toMatch(/\/invoke$/);
  });

  it('passes the supported betas as anthropic_beta and names the others as dropped', () => {
    const headers = { 'anthropic-beta': 'interleaved-thinking-2025-05-14, claude-code-20250219,files-api-2025-04-14' };
    const body = JSON.parse(String(toInvokeRequest(bedrockAdapterConfig, call(true, headers)).body)) as Record<
      string,
      unknown
    >;
    expect(body.anthropic_beta).toEqual(['interleaved-thinking-2025-05-14']);
    expect(createBedrockAdapter().droppedBetas?.(headers)).toEqual(['claude-code-20250219', 'files-api-2025-04-14']);
  });
});

describe('the Vertex request', () => {
  const adapter = createVertexAdapter({ ...vertexAdapterConfig, project: 'demo-project', location: 'europe-west4' });

  it('calls streamRawPredict with stream in the body and the model in the path', () => {
    const request = adapter.buildRequest({
      ...call(true),
      endpointUrl: 'https://europe-west4-aiplatform.googleapis.com',
      upstreamModel: 'claude-sonnet-4-5@20250929',
    });
    expect(request.url).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/claude-sonnet-4-5%4020250929:streamRawPredict',
    );
    const body = JSON.parse(String(request.body)) as Record<string, unknown>;
    expect(body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', stream: true });
    expect(body.model).toBeUndefined();
    expect(String(request.body)).toContain('12345678901234567891');
  });

  it('counts tokens with the model in the body', () => {
    const request = adapter.countTokens!.buildRequest({
      ...call(false),
      endpointUrl: 'http://sim',
      upstreamModel: 'claude-sonnet-4-5',
    });
    expect(request.url).toBe(
      'http://sim/v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/count-tokens:rawPredict',
    );
    expect(JSON.parse(String(request.body))).toMatchObject({
      model: 'claude-sonnet-4-5',
      anthropic_version: 'vertex-2023-10-16',
    });
  });
});
