import { err, gatewayError, malformedReplyError, ok } from '@gw/errors';
import { commonv1, eventsv1 } from '@gw/proto';
import type { UpstreamEvent } from '../../src/clients/router';
import type { Admission } from '../../src/pipeline/admit';
import { handleMessages } from '../../src/pipeline/messages';
import { newRelayState, observeUsage, relayEvent } from '../../src/pipeline/relay';
import type { RelayContext, RelayState } from '../../src/pipeline/relay';
import { usageEventOf } from '../../src/pipeline/settle';
import type { Settlement } from '../../src/pipeline/settle';
import { verifiedKey } from '../support/keys';
import { callerRequest, fakes, FakeSink, messagesBody } from './fakes';

const plain: RelayContext = { streamed: true, streamRestoration: undefined, restoration: undefined };

/** Folds events through the reducer, as the relay does, collecting what the client would be sent. */
function fold(events: UpstreamEvent[], context = plain) {
  let state = newRelayState();
  const outputs: unknown[] = [];
  for (const event of events) {
    const step = relayEvent(state, event, context);
    state = step.state;
    outputs.push(...step.outputs);
  }
  return { state, outputs };
}

const sse = (event: string, data: unknown): UpstreamEvent => ({ kind: 'sse', event, data: JSON.stringify(data) });

describe('relayEvent (the relay reducer)', () => {
  it('opens the stream at the start, passes events on, and holds message_stop for settling', () => {
    const { state, outputs } = fold([
      { kind: 'started', poolId: 'eu-a', region: 'eu-west', droppedBetas: ['b1'] },
      sse('message_start', { message: { usage: { input_tokens: 12, output_tokens: 1 } } }),
      sse('message_delta', { usage: { output_tokens: 5 } }),
      sse('message_stop', { type: 'message_stop' }),
    ]);
    expect(outputs).toEqual([
      { kind: 'dropped_betas', names: ['b1'] },
      { kind: 'start_stream', region: 'eu-west' },
      { kind: 'event', event: 'message_start', data: expect.any(String) },
      { kind: 'event', event: 'message_delta', data: expect.any(String) },
    ]);
    expect(state).toMatchObject({
      started: { poolId: 'eu-a', region: 'eu-west' },
      streamOpened: true,
      startUsage: { inputTokens: 12, outputTokens: 1 },
      reportedOutputTokens: 5,
      heldStop: JSON.stringify({ type: 'message_stop' }),
    });
  });

  it('opens no stream for a whole answer, and holds the message', () => {
    const json = Buffer.from('{"type":"message"}');
    const { state, outputs } = fold(
      [
        { kind: 'started', poolId: 'eu-a', region: 'eu-west', droppedBetas: [] },
        { kind: 'message', json },
      ],
      { ...plain, streamed: false },
    );
    expect(outputs).toEqual([]);
    expect(state.streamOpened).toBe(false);
    expect(state.heldMessage).toBe(json);
  });

  it('leaves the state it was given untouched', () => {
    const before = newRelayState();
    const frozen = JSON.stringify(before);
    relayEvent(
      before,
      {
        kind: 'finished',
        usage: { inputTokens: 1, outputTokens: 2, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      },
      plain,
    );
    expect(JSON.stringify(before)).toBe(frozen);
  });

  it('caps an implausible final count and notes it', () => {
    const { state } = fold([
      {
        kind: 'finished',
        usage: { inputTokens: 1e15, outputTokens: 2, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      },
    ]);
    expect(state.usageCapped).toBe(true);
    expect(state.finalUsage!.inputTokens).toBeLessThan(1e15);
  });

  it('keeps what it knew when a usage payload is not JSON, and never lowers the reported output', () => {
    const state: RelayState = { ...newRelayState(), reportedOutputTokens: 9 };
    expect(observeUsage(state, 'message_delta', '{not json')).toBe(state);
    expect(
      observeUsage(state, 'message_delta', JSON.stringify({ usage: { output_tokens: 3 } })).reportedOutputTokens,
    ).toBe(9);
  });

  it('restores the originals through the stream restorer', () => {
    const streamRestoration = {
      transform: (name: string, data: string) => [[name, data.replace('P1', 'Ada')] as [string, string]],
    };
    const { outputs } = fold([sse('content_block_delta', { text: 'P1' })], { ...plain, streamRestoration });
    expect(outputs).toEqual([{ kind: 'event', event: 'content_block_delta', data: '{"text":"Ada"}' }]);
  });
});

describe('usageEventOf', () => {
  const key = verifiedKey({ keyId: 'key_1', accountId: 'acct_1', plan: 'pro', environment: commonv1.Environment.LIVE });
  const admission = {
    key,
    model: 'claude-test',
    streamed: true,
    limits: { requestsPerMinute: 1, concurrency: 1, monthlyTokens: 5_000, overage: true },
  } as Admission;
  const settled: Settlement = {
    end: 'ok',
    failure: undefined,
    tokens: { inputTokens: 10, outputTokens: 20, cacheReadInputTokens: 3, cacheCreationInputTokens: 4 },
    billable: 31,
    gatewayFailed: false,
    startedAt: 1_000,
    endedAt: 2_000,
  };
  const state = { ...newRelayState(), started: { poolId: 'eu-a', region: 'eu-west' } };

  it('is the whole event of a settled request', () => {
    expect(usageEventOf('req_1', admission, state, settled)).toEqual({
      eventId: 'req_1',
      accountId: 'acct_1',
      keyId: 'key_1',
      environment: commonv1.Environment.LIVE,
      model: 'claude-test',
      poolId: 'eu-a',
      region: 'eu-west',
      inputTokens: 10n,
      outputTokens: 20n,
      cacheReadInputTokens: 3n,
      cacheCreationInputTokens: 4n,
      billableTokens: 31n,
      outcome: eventsv1.Outcome.SUCCESS,
      errorType: '',
      plan: 'pro',
      allowanceTokens: 5_000n,
      overageEnabled: true,
      startedAtUnixMs: 1_000n,
      endedAtUnixMs: 2_000n,
      streamed: true,
    });
  });

  it('names how it ended: a gateway failure over any other end, and the error type', () => {
    const failure = gatewayError('overloaded_error', 'gone');
    expect(usageEventOf('r', admission, newRelayState(), { ...settled, end: 'failed', failure })).toMatchObject({
      outcome: eventsv1.Outcome.UPSTREAM_ERROR,
      errorType: 'overloaded_error',
      poolId: '',
    });
    expect(usageEventOf('r', admission, state, { ...settled, end: 'cancelled', gatewayFailed: true }).outcome).toBe(
      eventsv1.Outcome.GATEWAY_ERROR,
    );
    expect(usageEventOf('r', { ...admission, limits: undefined }, state, settled)).toMatchObject({
      allowanceTokens: 0n,
      overageEnabled: false,
    });
  });
});

describe('a malformed reply on the request path', () => {
  it('refuses the request with the catalogued error instead of throwing, and frees the reserved slot', async () => {
    const sink = new FakeSink();
    const world = fakes({ sink, acquire: ok({ leaseId: 'lease_1', leaseTtlMs: 30_000n }) });
    await handleMessages(world.deps, callerRequest(messagesBody(true)), sink);
    expect(sink.failure).toEqual(malformedReplyError());
    expect(world.malformed).toEqual(['quota: window']);
    expect(world.released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
    expect(world.router.requests).toEqual([]);
  });

  it('passes a refusal of the service through as it came', async () => {
    const refusal = gatewayError('rate_limit_error', 'slow down');
    const sink = new FakeSink();
    await handleMessages(fakes({ sink, acquire: err(refusal) }).deps, callerRequest(messagesBody(true)), sink);
    expect(sink.failure).toEqual(refusal);
  });
});
