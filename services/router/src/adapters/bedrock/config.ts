/** How the router speaks Bedrock's InvokeModel / InvokeModelWithResponseStream for Anthropic models. */
export interface BedrockAdapterConfig {
  /** The body's `anthropic_version`, which Bedrock requires instead of the header. */
  anthropicVersion: string;
  /**
   * Betas passed on as the body's `anthropic_beta`; any other the caller names is dropped and reported.
   * Bedrock refuses a beta it does not know with a 400, so unknown ones must not reach it.
   */
  supportedBetas: readonly string[];
  /** Largest event-stream frame accepted; a longer prelude is a broken stream, not a reason to buffer. */
  maxFrameBytes: number;
}

export const bedrockAdapterConfig: BedrockAdapterConfig = {
  anthropicVersion: 'bedrock-2023-05-31',
  supportedBetas: [
    'computer-use-2024-10-22',
    'computer-use-2025-01-24',
    'context-1m-2025-08-07',
    'context-management-2025-06-27',
    'effort-2025-11-24',
    'fine-grained-tool-streaming-2025-05-14',
    'interleaved-thinking-2025-05-14',
    'output-128k-2025-02-19',
    'token-efficient-tools-2025-02-19',
    'tool-examples-2025-10-29',
    'tool-search-tool-2025-10-19',
  ],
  maxFrameBytes: 16 * 1024 * 1024,
};
