export { startSimUpstream } from './server';
export type { RunningSimUpstream, SimUpstreamOptions } from './server';
export type { RecordedRequest, RequestOutcome } from './request-log';
export { echoChunks } from './echo';
export { estimateInputTokens } from './anthropic/request';
export { estimateChatInputTokens } from './openai/request';
export { redactedThinkingData } from './anthropic/messages';
export { thinkingSignature } from './anthropic/signatures';
export { knownBetas } from './anthropic/common';
