/** How the router speaks the Anthropic Messages protocol to an upstream. */
export interface AnthropicAdapterConfig {
  /** Appended to the endpoint's base URL. */
  messagesPath: string;
  /** Appended to the endpoint's base URL for counting input tokens. */
  countTokensPath: string;
  /** Sent when the caller gave no `anthropic-version`; what both official SDKs send. */
  defaultVersion: string;
  /** Caller headers passed through unchanged when present. */
  forwardedHeaders: readonly string[];
  /** Header that carries the pool's credential. */
  credentialHeader: string;
}

export const anthropicAdapterConfig: AnthropicAdapterConfig = {
  messagesPath: '/v1/messages',
  countTokensPath: '/v1/messages/count_tokens',
  defaultVersion: '2023-06-01',
  forwardedHeaders: ['anthropic-version', 'anthropic-beta'],
  credentialHeader: 'x-api-key',
};
