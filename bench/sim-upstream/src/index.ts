export { defaultSimAws, startSimUpstream } from './server';
export type { SimAwsOptions } from './bedrock/sigv4';
export type { RunningSimUpstream, SimUpstreamOptions } from './server';
export type { RecordedRequest, RequestOutcome } from './request-log';
export { echoChunks } from './echo';
export { estimateInputTokens } from './anthropic/request';
export { estimateChatInputTokens } from './openai/request';
export { redactedThinkingData, thinkingSignature } from './anthropic/messages';
export { knownBetas } from './anthropic/common';
