/** How the router speaks Vertex AI's rawPredict / streamRawPredict for Anthropic models. */
export interface VertexAdapterConfig {
  /** The Google Cloud project and location in every path. */
  project: string;
  location: string;
  /** The body's `anthropic_version`, which Vertex requires instead of the header. */
  anthropicVersion: string;
  /** Betas passed on as `anthropic_beta`; any other the caller names is dropped and reported. */
  supportedBetas: readonly string[];
}

export const vertexAdapterConfig: VertexAdapterConfig = {
  project: '',
  location: '',
  anthropicVersion: 'vertex-2023-10-16',
  supportedBetas: [
    'computer-use-2024-10-22',
    'computer-use-2025-01-24',
    'context-1m-2025-08-07',
    'context-management-2025-06-27',
    'fine-grained-tool-streaming-2025-05-14',
    'interleaved-thinking-2025-05-14',
    'output-128k-2025-02-19',
    'token-efficient-tools-2025-02-19',
    'tool-search-tool-2025-10-19',
  ],
};
