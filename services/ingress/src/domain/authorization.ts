import type { Result } from '@gw/errors';
import type { policyv1 } from '@gw/proto';
import type { VerifiedKey } from './key';
import type { RequestScope } from './request-scope';

/** The policy decision a request needs: candidate pools and, where a privacy mode applied, the body to send. */
export interface Authorization {
  /** Passed on to the router as policy gave them. */
  pools: policyv1.CandidatePool[];
  /** The body after the privacy mode; undefined when unchanged. */
  body: Uint8Array | undefined;
  /** Mode `flag`: entities found, by type (never the values). */
  privacyFlags: Record<string, number>;
  /** Mode `tokenise`: what each placeholder stands for, for this request only. */
  placeholders: { placeholder: string; original: string }[];
  placeholderNonce: string;
}

/** Decides model, plan, key permissions and residency, and applies the key's privacy mode. */
export type Authorize = (
  key: VerifiedKey,
  model: string,
  body: Buffer,
  scope: RequestScope,
) => Promise<Result<Authorization>>;

/**
 * How long policy may take to decide on a request with a body of `bodyBytes`: the deadline of every control
 * call, and `msPerMiB` more for each MiB, since the privacy modes read the whole text (about 0.1 s of a
 * thread per MiB of dense text on a quiet machine). Without it a body of 25 MiB in redact mode could never
 * be decided in time, and its caller would be told to retry a request that must fail again.
 */
export function policyDeadline(controlCallMs: number, msPerMiB: number): (bodyBytes: number) => number {
  return (bodyBytes) => controlCallMs + Math.ceil((bodyBytes / (1024 * 1024)) * msPerMiB);
}

/** Decides without policy when it can: undefined when policy must decide. */
export type LocalAuthorize = (key: VerifiedKey, model: string) => Result<Authorization> | undefined;

/** Policy's decision, with the body, within a deadline. */
export type PolicyAuthorize = (
  key: VerifiedKey,
  model: string,
  body: Uint8Array,
  scope: RequestScope,
  timeoutMs: number,
) => Promise<Result<Authorization>>;

/**
 * A key in privacy mode `off` needs the decision inputs, not the text: decided locally from the catalogue
 * policy pushed (no call, no copy of the body); any other mode, or no catalogue yet, asks policy.
 */
export function authorizeLocallyOrWithPolicy(
  local: LocalAuthorize,
  policy: PolicyAuthorize,
  deadlineMs: (bodyBytes: number) => number,
): Authorize {
  const withPolicy = authorizeWithPolicy(policy, deadlineMs);
  return async (key, model, body, scope) => local(key, model) ?? withPolicy(key, model, body, scope);
}

/** Policy decides, with the body when the key's privacy mode needs the text, within a deadline for its size. */
export function authorizeWithPolicy(policy: PolicyAuthorize, deadlineMs: (bodyBytes: number) => number): Authorize {
  return (key, model, body, scope) => policy(key, model, body, scope, deadlineMs(body.byteLength));
}
