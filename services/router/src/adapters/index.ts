import type { PoolConfig } from '@gw/config';
import { createAnthropicAdapter } from './anthropic';
import { createOpenAIAdapter } from './openai';
import type { UpstreamAdapter } from './types';

export type {
  AdapterCall,
  CountTokensCall,
  CountTokensCapability,
  RelayCall,
  UpstreamAdapter,
  UpstreamErrorBody,
} from './types';

/** Adapters by the pool config's `adapter` field; a new protocol in the config schema must be added here. */
export type AdapterRegistry = Record<PoolConfig['adapter'], UpstreamAdapter>;

export function createAdapterRegistry(): AdapterRegistry {
  return { anthropic: createAnthropicAdapter(), openai: createOpenAIAdapter() };
}
