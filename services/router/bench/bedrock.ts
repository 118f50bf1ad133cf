import { performance } from 'node:perf_hooks';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { ok } from '@gw/errors';
import { createAnthropicAdapter } from '../src/adapters/anthropic';
import { createBedrockAdapter, toInvokeRequest } from '../src/adapters/bedrock';
import { bedrockAdapterConfig } from '../src/adapters/bedrock/config';
import { sigV4Signer } from '../src/adapters/bedrock/sign';
import type { UpstreamBody } from '../src/upstream-http';

/**
 * What a Bedrock pool costs the router per request beyond an Anthropic pool, in process: building the
 * InvokeModel request (the top-level body edit), signing it (SigV4), and relaying a streamed answer
 * decoded from the AWS event stream, against relaying the same answer as Anthropic SSE. Not a test:
 * `make bench-bedrock` prints the figures (docs/performance.md records them).
 */

const print = (line = '') => process.stdout.write(`${line}\n`);
const rounds = Number(process.env.BENCH_BEDROCK_ROUNDS ?? 2_000);
const deltas = 64;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function events(): object[] {
  const text = (index: number) => ({
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text: ` word${index}` },
  });
  return [
    {
      type: 'message_start',
      message: {
        id: 'msg_bench',
        type: 'message',
        role: 'assistant',
        model: 'm',
        content: [],
        usage: { input_tokens: 20, output_tokens: 1 },
      },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ...Array.from({ length: deltas }, (_, index) => text(index)),
    { type: 'content_block_stop', index: 0 },
    {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: deltas },
    },
    { type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 20, outputTokenCount: deltas } },
  ];
}

/** The answer as Bedrock frames it (one frame per event) and as the Anthropic API writes it, one chunk per event. */
const eventStream = events().map((event) =>
  codec.encode({
    headers: {
      ':event-type': { type: 'string', value: 'chunk' },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: Buffer.from(JSON.stringify({ bytes: Buffer.from(JSON.stringify(event)).toString('base64') })),
  }),
);
const sse = events().map((event) =>
  Buffer.from(`event: ${(event as { type: string }).type}\ndata: ${JSON.stringify(event)}\n\n`),
);

async function* bodyOf(chunks: Uint8Array[]): UpstreamBody {
  for (const chunk of chunks) yield ok(chunk);
}

async function relayAll(adapter: ReturnType<typeof createBedrockAdapter>, chunks: Uint8Array[]): Promise<number> {
  let relayed = 0;
  for await (const item of adapter.relay(bodyOf(chunks), { stream: true, model: 'alias', body: {} })) {
    if (!item.ok) throw new Error(item.error.message);
    relayed += 1;
  }
  return relayed;
}

/** Mean microseconds per call of `step`, after a tenth of the rounds unmeasured. */
async function microseconds(step: () => Promise<unknown> | unknown): Promise<number> {
  for (let round = 0; round < rounds / 10; round += 1) await step();
  const began = performance.now();
  for (let round = 0; round < rounds; round += 1) await step();
  return ((performance.now() - began) * 1000) / rounds;
}

async function main(): Promise<void> {
  const rawBody = Buffer.from(
    JSON.stringify({
      model: 'claude-sonnet-regional',
      max_tokens: 1024,
      stream: true,
      system: 'You are terse.'.repeat(20),
      messages: [{ role: 'user', content: 'Summarise the following. '.repeat(40) }],
    }),
  );
  const call = {
    endpointUrl: 'https://bedrock-runtime.eu-west-2.amazonaws.com',
    upstreamModel: 'anthropic.claude-sonnet-4-5-20250929-v1:0',
    body: JSON.parse(rawBody.toString()) as Record<string, unknown>,
    rawBody,
    stream: true,
    headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' },
    credential: undefined,
    requestId: 'req_bench',
  };
  const signer = sigV4Signer('eu-west-2', async () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }));
  const request = toInvokeRequest(bedrockAdapterConfig, call);
  const bedrock = createBedrockAdapter();
  const anthropic = createAnthropicAdapter();
  const frameBytes = eventStream.reduce((sum, frame) => sum + frame.length, 0);

  const build = await microseconds(() => toInvokeRequest(bedrockAdapterConfig, call));
  const sign = await microseconds(() => signer.sign(request));
  const decode = await microseconds(() => relayAll(bedrock, eventStream));
  const sseRelay = await microseconds(() => relayAll(anthropic as ReturnType<typeof createBedrockAdapter>, sse));

  print(
    `Bedrock pool cost per request, in process (${rounds} rounds; body ${rawBody.length} B; answer ${deltas} deltas, ${eventStream.length} frames, ${frameBytes} B)`,
  );
  print();
  print('| step                                                   | µs per request |');
  print('| ------------------------------------------------------ | -------------- |');
  print(`| build the InvokeModel request (top-level body edit)    | ${build.toFixed(1).padStart(14)} |`);
  print(`| SigV4 signature (Smithy, Node's SHA-256)               | ${sign.toFixed(1).padStart(14)} |`);
  print(`| relay the streamed answer from the event stream        | ${decode.toFixed(1).padStart(14)} |`);
  print(`| relay the same answer from Anthropic SSE (baseline)    | ${sseRelay.toFixed(1).padStart(14)} |`);
  print(
    `| Bedrock over Anthropic, per streamed request           | ${(build + sign + decode - sseRelay).toFixed(1).padStart(14)} |`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).message}\n`);
  process.exit(1);
});
