import type { Result } from '@gw/errors';
import type { VerifiedKey } from '../domain/key';
import type { CallerRequest, KeyVerifier } from './types';

/**
 * Stage 1: the presented key and the source address (401/403). Nothing about the body is looked at
 * before this, and a refusal here consumes nothing.
 */
export function authenticate(keys: KeyVerifier, request: CallerRequest): Promise<Result<VerifiedKey>> {
  return keys.verify(request.presentedKey, request.sourceAddress, request);
}
