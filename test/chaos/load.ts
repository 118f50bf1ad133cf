import Anthropic from '@anthropic-ai/sdk';
import { pace, waitUntil } from '@gw/testing';

export const model = 'claude-sonnet-5';

/** A request that returned 200: its id (the usage event's id) and its billable tokens as the client saw them. */
export interface CompletedRequest {
  requestId: string;
  billableTokens: number;
}

export interface LoadResult {
  issued: number;
  completed: CompletedRequest[];
  /** Requests that did not return 200, by kind ("503 overloaded_error", "APIConnectionError"…). */
  failures: Record<string, number>;
  durationMs: number;
}

export interface LoadOptions {
  baseUrl: string;
  apiKey: string;
  requests: number;
  concurrency: number;
  /** Requests started per second at most. */
  ratePerSecond: number;
}

const randomInt = (below: number) => Math.floor(Math.random() * below);

function failureKind(error: unknown): string {
  if (error instanceof Anthropic.APIError && error.status !== undefined) {
    return `${error.status} ${error.type ?? error.constructor.name}`;
  }
  return error instanceof Error ? error.constructor.name : String(error);
}

/**
 * A bounded load of live requests through the official SDK (no retries), paced and with at most
 * `concurrency` in flight. Short messages of random length; the simulated upstream answers after a
 * random latency of up to 200 ms, so that requests are in flight whenever a fault strikes.
 */
export class Load {
  issued = 0;
  private readonly completed: CompletedRequest[] = [];
  private readonly failures: Record<string, number> = {};
  private readonly sdk: Anthropic;

  constructor(private readonly options: LoadOptions) {
    this.sdk = new Anthropic({ baseURL: options.baseUrl, apiKey: options.apiKey, maxRetries: 0, timeout: 30_000 });
  }

  async run(): Promise<LoadResult> {
    const started = Date.now();
    const interval = 1_000 / this.options.ratePerSecond;
    const worker = async () => {
      for (;;) {
        const index = this.issued;
        if (index >= this.options.requests) return;
        this.issued += 1;
        const due = started + index * interval;
        if (due > Date.now()) await pace(due - Date.now());
        await this.one();
      }
    };
    await Promise.all(Array.from({ length: this.options.concurrency }, worker));
    return {
      issued: this.issued,
      completed: [...this.completed],
      failures: { ...this.failures },
      durationMs: Date.now() - started,
    };
  }

  /** Resolves once this many requests have been issued (bounded by timeoutMs). */
  async whenIssued(count: number, timeoutMs = 60_000): Promise<void> {
    await waitUntil(() => this.issued >= count, { what: `${count} requests issued`, timeoutMs }).catch(() => {
      throw new Error(`load: only ${this.issued} of ${count} requests issued`);
    });
  }

  private async one(): Promise<void> {
    const words = Array.from({ length: 1 + randomInt(40) }, (_, index) => `word${index}`).join(' ');
    try {
      const { data: message, request_id: requestId } = await this.sdk.messages
        .create({
          model,
          max_tokens: 8 + randomInt(120),
          messages: [{ role: 'user', content: `${words} sim:latency=${randomInt(200)}` }],
        })
        .withResponse();
      if (!requestId) throw new Error('a 200 response without a request id');
      const { usage } = message;
      if (usage.cache_read_input_tokens || usage.cache_creation_input_tokens) {
        throw new Error(`unexpected cache tokens from the simulator: ${JSON.stringify(usage)}`);
      }
      this.completed.push({ requestId, billableTokens: usage.input_tokens + usage.output_tokens });
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('unexpected cache tokens')) throw error;
      const kind = failureKind(error);
      this.failures[kind] = (this.failures[kind] ?? 0) + 1;
    }
  }
}

export function sumBillable(completed: readonly CompletedRequest[]): number {
  return completed.reduce((sum, request) => sum + request.billableTokens, 0);
}
