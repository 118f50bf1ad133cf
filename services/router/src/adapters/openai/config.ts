/** How the pool's credential travels to the upstream. */
export type OpenAICredentialStyle =
  /** `Authorization: Bearer <credential>`: OpenAI, vLLM, TGI, Ollama, llama.cpp, Azure's v1 API. */
  | 'bearer'
  /** `api-key: <credential>`: Azure OpenAI's key header. */
  | 'api-key';

/**
 * How the router speaks OpenAI-compatible chat completions to an upstream (vLLM, TGI, Ollama,
 * llama.cpp, Azure OpenAI). Every field is plain data; the transforms read nothing else.
 */
export interface OpenAIAdapterConfig {
  /** Appended to the endpoint's base URL. */
  chatCompletionsPath: string;
  credentialStyle: OpenAICredentialStyle;
  /**
   * Sent as the `api-version` query parameter when set (Azure OpenAI; `preview` or a dated
   * version). Unset for every other server.
   */
  apiVersion?: string;
  /**
   * Whether the upstream model takes images: `image` blocks become `image_url` parts (a data URL for
   * base64 sources, the URL for url sources). When false, a request with an image is refused with
   * `invalid_request_error` naming the block, and nothing is sent.
   */
  images: boolean;
  /**
   * Whether streamed calls ask for the token usage in a final chunk
   * (`stream_options: {include_usage: true}`). Servers that refuse the field need false; the output
   * count is then estimated from the chunks.
   */
  streamUsage: boolean;
}

/** The defaults: a plain OpenAI-compatible server, text only, bearer credential, usage in the stream. */
export const openAIAdapterConfig: OpenAIAdapterConfig = {
  chatCompletionsPath: '/v1/chat/completions',
  credentialStyle: 'bearer',
  images: false,
  streamUsage: true,
};
