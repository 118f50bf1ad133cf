import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { LargeInputWork, refusalsOfStep } from '@gw/workers';
import type { LargeInputWorkOptions } from '@gw/workers';
import { topLevelLayout } from '@gw/json-layout';
import type { TopLevelLayout } from '@gw/json-layout';
import { boundedCount, estimateInputTokens } from '@gw/usage';
import { parseCountTokensBody, parseMessagesBody } from '../domain/validation';

/** Which endpoint's rules a body is checked against. */
export type BodyKind = 'messages' | 'count_tokens';

/** All a checked body tells the pipeline; the body itself travels on as the caller's bytes. */
export interface BodySummary {
  model: string;
  /** Messages only: the caller asked for a stream. */
  stream: boolean;
  /** The gateway's estimate of the input tokens (@gw/usage): billed when the upstream reports none. */
  inputEstimate: number;
  /** Messages only: the caller's `max_tokens` (bounded), the most output the upstream may produce; 0 for a count. */
  maxTokens: number;
  /** Where the body's top-level members are: sent beside it, so that the router edits it without parsing it. */
  layout: TopLevelLayout | undefined;
}

/** Longest member name a layout carries; longer ones go nameless (the router edits no member so named). */
export const maxLayoutKeyChars = 64;

/**
 * Most top-level members a layout is sent for. A Messages body has a dozen or two; a body of millions of tiny members
 * would make a layout larger than the body, past the router's message limit, so it goes without one (the router
 * then reads the body itself).
 */
export const maxLayoutMembers = 4096;

/** The body's layout (`topLevelLayout`), caller-supplied member names bounded before they cross a hop. */
export function layoutOf(bytes: Uint8Array): TopLevelLayout | undefined {
  const layout = topLevelLayout(bytes);
  if (layout === undefined || layout.members.length > maxLayoutMembers) return undefined;
  for (const member of layout.members) if (member.key.length > maxLayoutKeyChars) member.key = '';
  return layout;
}

/** The thread's task: the bytes are a copy of the caller's that moved to the thread. */
export interface BodyCheckTask {
  kind: BodyKind;
  body: Uint8Array;
}

/** Parses and validates a body: the same answer inline or on a thread. */
export function summariseBody({ kind, body: raw }: BodyCheckTask): Result<BodySummary> {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (kind === 'count_tokens') {
    const body = parseCountTokensBody(bytes);
    return body.ok
      ? ok({ model: body.value.model, stream: false, inputEstimate: 0, maxTokens: 0, layout: layoutOf(bytes) })
      : body;
  }
  const body = parseMessagesBody(bytes);
  if (!body.ok) return body;
  return ok({
    model: body.value.model,
    stream: body.value.stream === true,
    inputEstimate: estimateInputTokens(body.value as Record<string, unknown>),
    maxTokens: boundedCount(body.value.max_tokens),
    layout: layoutOf(bytes),
  });
}

/**
 * Checks request bodies: small ones inline, large ones on worker threads shared fairly between accounts, so
 * that parsing one caller's megabytes of JSON never holds up every other caller's requests on the event loop.
 */
export class BodyChecks {
  private constructor(private readonly work: LargeInputWork<BodyCheckTask, Result<BodySummary>>) {}

  /** `script`: dist/body-check-thread.js as built by tsc. */
  static async start(options: Omit<LargeInputWorkOptions, 'refusals'>): Promise<BodyChecks> {
    const refusals = refusalsOfStep('the body check', 'The gateway');
    return new BodyChecks(await LargeInputWork.start({ ...options, refusals }, summariseBody));
  }

  async check(kind: BodyKind, raw: Uint8Array, account: string): Promise<Result<BodySummary>> {
    const checked = await this.work.run(account, raw, (body) => ({ kind, body }));
    return checked.ok ? checked.value : checked;
  }

  close(): Promise<void> {
    return this.work.close();
  }
}
