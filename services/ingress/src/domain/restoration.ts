// The restorer alone: ingress never detects, so it does not load the detectors and their phone-number tables.
import { createRestorer, restoreAll } from '@gw/pii/restore';
/** Puts tokenised originals back into a completion; built by the PII library for one request. */
export interface Restorer {
  /** Returns what can be released now, holding back only a suffix that may still become a placeholder. */
  push(chunk: string): string;
  /** Releases what was held back, at the end of a block. */
  flush(): string;
}

export interface Restoration {
  /** For text deltas. */
  textRestorer(): Restorer;
  /** For `input_json_delta` partial JSON: restored values are JSON-string-escaped. */
  jsonRestorer(): Restorer;
  /** For whole texts of a non-streamed completion. */
  restoreAll(text: string): string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function restoreStrings(value: Json, restoration: Restoration): Json {
  if (typeof value === 'string') return restoration.restoreAll(value);
  if (Array.isArray(value)) return value.map((item) => restoreStrings(item, restoration));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, restoreStrings(item, restoration)]));
  }
  return value;
}

/**
 * Blocks whose content is signed or encrypted by the upstream: relayed as sent, placeholders included, so that
 * the client can send them back in the next turn and the upstream accepts their signature.
 */
const signedBlocks = new Set(['thinking', 'redacted_thinking']);

/** A non-streamed Message with the originals back in every string of its blocks, except signed thinking. */
export function restoreMessage(json: Uint8Array, restoration: Restoration): Buffer {
  const message = JSON.parse(Buffer.from(json).toString('utf8')) as { content?: Json[] };
  if (!Array.isArray(message.content)) return Buffer.from(json);
  message.content = message.content.map((block) =>
    block !== null && typeof block === 'object' && !Array.isArray(block) && signedBlocks.has(String(block.type))
      ? block
      : restoreStrings(block, restoration),
  );
  return Buffer.from(JSON.stringify(message));
}

interface Delta {
  type: string;
  text?: string;
  partial_json?: string;
}

/** The deltas whose text is restored; `thinking_delta` and `signature_delta` pass as sent (see signedBlocks). */
const deltaField: Record<string, 'text' | 'partial_json'> = {
  text_delta: 'text',
  input_json_delta: 'partial_json',
};

/**
 * Restores originals in a stream, event by event, with one restorer per content block: a placeholder
 * split across deltas is held back until it is whole, and what is held at the block's end is released
 * as one more delta just before its `content_block_stop`. Events without text pass through verbatim.
 */
export class StreamRestoration {
  private readonly blocks = new Map<number, { restorer: Restorer; deltaType: string }>();

  constructor(private readonly restoration: Restoration) {}

  transform(event: string, data: string): [string, string][] {
    if (event === 'content_block_delta') {
      const parsed = JSON.parse(data) as { index: number; delta: Delta };
      const field = deltaField[parsed.delta.type];
      if (!field) return [[event, data]];
      const block = this.blockFor(parsed.index, parsed.delta.type);
      const released = block.restorer.push(parsed.delta[field] ?? '');
      if (released === '') return [];
      return [[event, JSON.stringify({ ...parsed, delta: { ...parsed.delta, [field]: released } })]];
    }
    if (event === 'content_block_stop') {
      const index = (JSON.parse(data) as { index: number }).index;
      const block = this.blocks.get(index);
      this.blocks.delete(index);
      const rest = block?.restorer.flush() ?? '';
      if (!block || rest === '') return [[event, data]];
      const field = deltaField[block.deltaType]!;
      const delta = JSON.stringify({
        type: 'content_block_delta',
        index,
        delta: { type: block.deltaType, [field]: rest },
      });
      return [
        ['content_block_delta', delta],
        [event, data],
      ];
    }
    return [[event, data]];
  }

  private blockFor(index: number, deltaType: string) {
    let block = this.blocks.get(index);
    if (!block) {
      const restorer =
        deltaType === 'input_json_delta' ? this.restoration.jsonRestorer() : this.restoration.textRestorer();
      block = { restorer, deltaType };
      this.blocks.set(index, block);
    }
    return block;
  }
}

/** Mode `tokenise`: the restoration of one request's originals, from policy's placeholders and nonce. */
export function restorationFor(placeholders: { placeholder: string; original: string }[], nonce: string): Restoration {
  const map = Object.fromEntries(placeholders.map((entry) => [entry.placeholder, entry.original]));
  return {
    textRestorer: () => createRestorer(map, nonce),
    jsonRestorer: () => createRestorer(map, nonce, { json: true }),
    restoreAll: (text) => restoreAll(text, map, nonce),
  };
}
