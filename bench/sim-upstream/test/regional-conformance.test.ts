import AnthropicBedrock from '@anthropic-ai/bedrock-sdk';
import AnthropicVertex from '@anthropic-ai/vertex-sdk';
import {
  BedrockRuntimeClient,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
} from '@aws-sdk/client-bedrock-runtime';
import { fromTokenFile } from '@aws-sdk/credential-providers';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import aws4 from 'aws4';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultSimAws, SimAwsIdentities, startSimUpstream } from '../src';
import type { RunningSimUpstream } from '../src';

/**
 * The official clients of each regional provider against the simulator: what they send is accepted,
 * and what the simulator answers is what they expect, so the simulator speaks the real formats.
 */
let sim: RunningSimUpstream;
beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0 });
});
afterAll(() => sim.close());

const modelId = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const credentials = { accessKeyId: defaultSimAws.accessKeyId, secretAccessKey: defaultSimAws.secretAccessKey };

function bedrockSdk(region = 'eu-west-2', secret = credentials.secretAccessKey) {
  return new AnthropicBedrock({
    baseURL: sim.url,
    awsRegion: region,
    awsAccessKey: credentials.accessKeyId,
    awsSecretKey: secret,
    maxRetries: 0,
  });
}

describe('@anthropic-ai/bedrock-sdk against the simulated Bedrock', () => {
  it('creates a message', async () => {
    const message = await bedrockSdk().messages.create({
      model: modelId,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello from London' }],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello from London' }]);
    expect(message.model).toBe(modelId);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('streams a message through the event stream, event by event', async () => {
    const stream = bedrockSdk().messages.stream({
      model: modelId,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Streamed from London' }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const message = await stream.finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'Streamed from London' }]);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(types.filter((type) => type === 'content_block_delta').length).toBeGreaterThan(1);
  });

  it('is refused for a signature scoped to another region or made with the wrong secret', async () => {
    const request = { model: modelId, max_tokens: 8, messages: [{ role: 'user' as const, content: 'x' }] };
    await expect(bedrockSdk('eu-west-1').messages.create(request)).rejects.toMatchObject({ status: 403 });
    await expect(bedrockSdk('eu-west-2', 'wrong-secret').messages.create(request)).rejects.toMatchObject({
      status: 403,
    });
  });
});

describe('@aws-sdk/client-bedrock-runtime against the simulated Bedrock', () => {
  const client = (region = 'eu-west-2') =>
    // HTTP/1.1, as the simulator serves (the client's default handler speaks HTTP/2 to AWS).
    new BedrockRuntimeClient({
      region,
      endpoint: sim.url,
      credentials,
      maxAttempts: 1,
      requestHandler: new NodeHttpHandler(),
    });
  const body = (text: string) =>
    JSON.stringify({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 64,
      messages: [{ role: 'user', content: text }],
    });

  it('invokes the model', async () => {
    const answer = await client().send(
      new InvokeModelCommand({ modelId, body: body('Invoked'), contentType: 'application/json' }),
    );
    const message = JSON.parse(Buffer.from(answer.body).toString('utf8')) as { content: unknown };
    expect(message.content).toEqual([{ type: 'text', text: 'Invoked' }]);
  });

  it('decodes the response stream into chunks of Messages events, and an exception frame into its error', async () => {
    const answer = await client().send(
      new InvokeModelWithResponseStreamCommand({
        modelId,
        body: body('One two three'),
        contentType: 'application/json',
      }),
    );
    const events: { type: string; [field: string]: unknown }[] = [];
    for await (const part of answer.body!) {
      if (part.chunk?.bytes) events.push(JSON.parse(Buffer.from(part.chunk.bytes).toString('utf8')));
    }
    expect(events[0]?.type).toBe('message_start');
    const stop = events.at(-1)!;
    expect(stop.type).toBe('message_stop');
    expect(stop['amazon-bedrock-invocationMetrics']).toMatchObject({ outputTokenCount: 3 });

    const failing = await client().send(
      new InvokeModelWithResponseStreamCommand({
        modelId,
        body: body('One two three sim:stream-error-after=1'),
        contentType: 'application/json',
      }),
    );
    const read = async () => {
      for await (const part of failing.body!) void part;
    };
    await expect(read()).rejects.toMatchObject({ name: 'ServiceUnavailableException' });
  });

  it('gets ValidationException for a body Bedrock refuses', async () => {
    const withModel = JSON.stringify({ ...JSON.parse(body('x')), model: 'claude' });
    await expect(
      client().send(new InvokeModelCommand({ modelId, body: withModel, contentType: 'application/json' })),
    ).rejects.toMatchObject({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
  });
});

describe("the AWS SDK's web identity credentials (EKS service accounts) from the simulated STS", () => {
  let dir: string;
  let tokenFile: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sim-sts-'));
    tokenFile = join(dir, 'token');
    // The shape of a projected service-account token: a JWT (the simulator does not check its signature).
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    await writeFile(tokenFile, `${part({ alg: 'RS256' })}.${part({ sub: 'system:serviceaccount:gw:router' })}.c2ln`);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const webIdentity = (roleArn = 'arn:aws:iam::123456789012:role/gateway-router') =>
    fromTokenFile({
      webIdentityTokenFile: tokenFile,
      roleArn,
      roleSessionName: 'gateway-router',
      clientConfig: { endpoint: sim.url, region: 'eu-west-2', requestHandler: new NodeHttpHandler() },
    });

  it('gets temporary credentials that sign InvokeModel, and are refused without their session token', async () => {
    const issued = await webIdentity()();
    expect(issued).toMatchObject({
      accessKeyId: expect.stringMatching(/^ASIA/),
      sessionToken: expect.any(String),
      expiration: expect.any(Date),
    });
    expect(issued.expiration!.getTime() - Date.now()).toBeGreaterThan(50 * 60 * 1000);
    const runtime = (credentials: typeof issued) =>
      new BedrockRuntimeClient({
        region: 'eu-west-2',
        endpoint: sim.url,
        credentials,
        maxAttempts: 1,
        requestHandler: new NodeHttpHandler(),
      });
    const invoke = new InvokeModelCommand({
      modelId,
      contentType: 'application/json',
      body: JSON.stringify({
        anthropic_version: 'bedrock-2023-05-31',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'Signed with IRSA' }],
      }),
    });
    const answer = await runtime(issued).send(invoke);
    expect(JSON.parse(Buffer.from(answer.body).toString('utf8'))).toMatchObject({
      content: [{ type: 'text', text: 'Signed with IRSA' }],
    });
    const { sessionToken: _token, ...withoutToken } = issued;
    await expect(runtime(withoutToken).send(invoke)).rejects.toMatchObject({
      name: 'UnrecognizedClientException',
      $metadata: { httpStatusCode: 403 },
    });
  });

  it('refuses temporary credentials once they expire', async () => {
    const expiring = await startSimUpstream({ host: '127.0.0.1', port: 0, awsIdentities: new SimAwsIdentities(0) });
    try {
      const credentials = await fromTokenFile({
        webIdentityTokenFile: tokenFile,
        roleArn: 'arn:aws:iam::123456789012:role/gateway-router',
        clientConfig: { endpoint: expiring.url, region: 'eu-west-2', requestHandler: new NodeHttpHandler() },
      })();
      const runtime = new BedrockRuntimeClient({
        region: 'eu-west-2',
        endpoint: expiring.url,
        credentials,
        maxAttempts: 1,
        requestHandler: new NodeHttpHandler(),
      });
      const body = JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 8, messages: [] });
      await expect(
        runtime.send(new InvokeModelCommand({ modelId, contentType: 'application/json', body })),
      ).rejects.toMatchObject({ name: 'ExpiredTokenException' });
    } finally {
      await expiring.close();
    }
  });

  it('is refused a role that is not an IAM role ARN, as STS refuses it', async () => {
    await expect(webIdentity('not-a-role')()).rejects.toMatchObject({ name: 'ValidationError' });
  });
});

describe('the simulated Bedrock checks SigV4 as the real service', () => {
  const path = `/model/${encodeURIComponent(modelId)}/invoke`;
  const host = new URL(sim?.url ?? 'http://127.0.0.1').host;
  const payload = JSON.stringify({
    anthropic_version: 'bedrock-2023-05-31',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'x' }],
  });

  function signed(options: { service?: string; date?: Date } = {}) {
    const request = aws4.sign(
      {
        host: new URL(sim.url).host,
        path,
        method: 'POST',
        service: options.service ?? 'bedrock',
        region: 'eu-west-2',
        headers: {
          'content-type': 'application/json',
          ...(options.date ? { 'X-Amz-Date': options.date.toISOString().replace(/[:-]|\.\d{3}/g, '') } : {}),
        },
        body: payload,
      },
      credentials,
    );
    return request.headers as Record<string, string>;
  }
  const send = (headers: Record<string, string>, body = payload) =>
    fetch(`${sim.url}${path}`, { method: 'POST', headers, body });

  it('accepts a request signed by another implementation, and refuses it once its body is altered', async () => {
    void host;
    const headers = signed();
    expect((await send(headers)).status).toBe(200);
    const altered = await send(headers, payload.replace('"x"', '"y"'));
    expect(altered.status).toBe(403);
    expect(altered.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException/);
  });

  it('refuses a wrong service name and a clock skew over five minutes', async () => {
    const wrongService = await send(signed({ service: 'bedrock-runtime' }));
    expect(wrongService.status).toBe(403);
    expect(((await wrongService.json()) as { message: string }).message).toMatch(/correct service/);
    const skewed = await send(signed({ date: new Date(Date.now() - 6 * 60 * 1000) }));
    expect(skewed.status).toBe(403);
    expect(((await skewed.json()) as { message: string }).message).toMatch(/Signature expired/);
    expect((await send(signed({ date: new Date(Date.now() - 4 * 60 * 1000) }))).status).toBe(200);
  });
});

describe('@anthropic-ai/vertex-sdk against the simulated Vertex AI', () => {
  let accessToken = '';
  beforeAll(async () => {
    // A token from the simulated metadata server, as GKE workload identity hands one out (the router's
    // end-to-end tests let google-auth-library fetch it; under Jest its HTTP client cannot load).
    const answer = await fetch(`${sim.url}/computeMetadata/v1/instance/service-accounts/default/token`, {
      headers: { 'metadata-flavor': 'Google' },
    });
    accessToken = ((await answer.json()) as { access_token: string }).access_token;
  });
  /** The SDK asks an auth client for its headers; this one hands out the metadata server's token. */
  const authClientWith = (token: string) =>
    ({ getRequestHeaders: async () => new Headers({ authorization: `Bearer ${token}` }) }) as never;
  const vertex = (token = accessToken) =>
    new AnthropicVertex({
      baseURL: `${sim.url}/v1`,
      region: 'europe-west4',
      projectId: 'demo-project',
      authClient: authClientWith(token),
      maxRetries: 0,
    });

  it('creates and streams a message with a token from the metadata server', async () => {
    const message = await vertex().messages.create({
      model: 'claude-sonnet-4-5@20250929',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello from Eemshaven' }],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello from Eemshaven' }]);
    const streamed = await vertex()
      .messages.stream({
        model: 'claude-sonnet-4-5@20250929',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Streamed' }],
      })
      .finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text: 'Streamed' }]);
  });

  it('counts tokens', async () => {
    const count = await vertex().messages.countTokens({
      model: 'claude-sonnet-4-5@20250929',
      messages: [{ role: 'user', content: 'Count these words please' }],
    });
    expect(count.input_tokens).toBeGreaterThan(0);
  });

  it('is refused without a token the metadata server issued', async () => {
    const client = vertex('ya29.not-issued');
    await expect(
      client.messages.create({
        model: 'claude-sonnet-4-5@20250929',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toMatchObject({ status: 401 });
  });
});
