import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { CatalogueFollower } from '../catalogue/catalogue-snapshot';
import type { Clients } from '../clients';
import { callScope } from '../pipeline/types';
import type { Authorize, Authorization, RequestScope } from '../pipeline/types';
import type { commonv1 } from '@gw/proto';

/** The key's record from auth, or the refusal; an answer without a key is a failure of auth. */
export function keyFromAuth(auth: Pick<Clients['auth'], 'verifyKey'>) {
  return async (
    presentedKey: string,
    sourceAddress: string,
    scope: RequestScope,
  ): Promise<Result<commonv1.KeyContext>> => {
    const verified = await auth.verifyKey({ key: presentedKey, sourceAddress }, callScope(scope));
    if (!verified.ok) return verified;
    return verified.value.key
      ? ok(verified.value.key)
      : err(gatewayError('api_error', 'The gateway could not verify the API key. Retry once.'));
  };
}

/**
 * How long policy may take to decide on a request with a body of `bodyBytes`: the deadline of every control
 * call, and `msPerMiB` more for each MiB, since the privacy modes read the whole text (about 0.1 s of a
 * thread per MiB of dense text on a quiet machine). Without it a body of 25 MiB in redact mode could never
 * be decided in time, and its caller would be told to retry a request that must fail again.
 */
export function policyDeadline(controlCallMs: number, msPerMiB: number): (bodyBytes: number) => number {
  return (bodyBytes) => controlCallMs + Math.ceil((bodyBytes / (1024 * 1024)) * msPerMiB);
}

/**
 * A key in privacy mode `off` needs the decision inputs, not the text: decided here from the catalogue
 * policy pushed (no call, no copy of the body); any other mode, or no catalogue yet, asks policy.
 */
export function authorizeLocallyOrWithPolicy(
  follower: Pick<CatalogueFollower, 'authorizeWithoutBody'>,
  policy: Pick<Clients['policy'], 'authorize'>,
  deadlineMs: (bodyBytes: number) => number,
): Authorize {
  const withPolicy = authorizeWithPolicy(policy, deadlineMs);
  return async (key, model, body, scope) =>
    follower.authorizeWithoutBody(key, model) ?? withPolicy(key, model, body, scope);
}

/** Policy decides, with the body when the key's privacy mode needs the text, within a deadline for its size. */
export function authorizeWithPolicy(
  policy: Pick<Clients['policy'], 'authorize'>,
  deadlineMs: (bodyBytes: number) => number,
): Authorize {
  return async (key, model, body, scope) => {
    const authorized = await policy.authorize(
      { key, model, bodyJson: body },
      { ...callScope(scope), timeoutMs: deadlineMs(body.byteLength) },
    );
    return authorized.ok ? ok<Authorization>(authorized.value) : authorized;
  };
}
