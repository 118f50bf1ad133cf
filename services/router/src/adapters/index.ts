import type { PoolConfig } from '@gw/config';
import { createAnthropicAdapter } from './anthropic';
import { createBedrockAdapter } from './bedrock';
import { createOpenAIAdapter } from './openai';
import { createVertexAdapter, vertexAdapterConfig } from './vertex';
import type { UpstreamAdapter } from './types';

export type {
  AdapterCall,
  CountTokensCall,
  CountTokensCapability,
  RelayCall,
  RequestSigner,
  UpstreamAdapter,
  UpstreamErrorBody,
} from './types';

/** Adapters by the pool config's `adapter` field; a new protocol in the config schema must be added here. */
export type AdapterRegistry = Record<PoolConfig['adapter'], UpstreamAdapter>;

export function createAdapterRegistry(): AdapterRegistry {
  // A Vertex pool always has its own adapter (its project and location are in its paths); the
  // registry's serves only a pool configured without them, which the config schema refuses.
  return {
    anthropic: createAnthropicAdapter(),
    openai: createOpenAIAdapter(),
    bedrock: createBedrockAdapter(),
    vertex: createVertexAdapter(vertexAdapterConfig),
  };
}
