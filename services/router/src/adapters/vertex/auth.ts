import type { RequestSigner } from '../types';

/** Adds `authorization: Bearer <access token>`; the token source caches and refreshes before expiry. */
export function bearerSigner(accessToken: () => Promise<string>): RequestSigner {
  return {
    async sign(request) {
      return { ...request, headers: { ...request.headers, authorization: `Bearer ${await accessToken()}` } };
    },
  };
}
