import type { Result } from '@gw/errors';
import type { commonv1 } from '@gw/proto';
import type { CallerRequest, KeyVerifier } from './types';

/**
 * Stage 1: the presented key and the source address (401/403). Nothing about the body is looked at
 * before this, and a refusal here consumes nothing.
 */
export function authenticate(keys: KeyVerifier, request: CallerRequest): Promise<Result<commonv1.KeyContext>> {
  return keys.verify(request.presentedKey, request.sourceAddress, request);
}
