import { createHmac } from 'node:crypto';

/**
 * Thinking signatures as the real API has them: the simulator signs the thinking it emits, and refuses a request
 * that sends a thinking block back whose signature does not match its text (a gateway that changed the text, to
 * redact or restore it, is caught here). The key is fixed and public, so that tests can compute a signature; the
 * gateway's code never does.
 */
const signingKey = 'sim-upstream: thinking signatures';

/** The signature of a thinking text: base64 of its HMAC-SHA256 under the simulator's key. */
export function thinkingSignature(thinking: string): string {
  return createHmac('sha256', signingKey).update(thinking, 'utf8').digest('base64');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The message for the first thinking block of `messages` whose signature does not match its text, if any. */
export function invalidThinkingSignature(messages: readonly unknown[]): string | undefined {
  for (const [index, message] of messages.entries()) {
    if (!isRecord(message) || !Array.isArray(message.content)) continue;
    for (const [blockIndex, block] of message.content.entries()) {
      if (!isRecord(block) || block.type !== 'thinking') continue;
      const valid =
        typeof block.thinking === 'string' &&
        typeof block.signature === 'string' &&
        block.signature === thinkingSignature(block.thinking);
      if (!valid) return `messages.${index}.content.${blockIndex}: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  return undefined;
}
