import { editTopLevel } from '../raw-json';
import type { AdapterCall } from './types';

/** Top-level members the provider body must not carry as the caller sent them. */
const replacedMembers = ['model', 'stream', 'anthropic_version', 'anthropic_beta'];

/**
 * The caller's body without `model` and `stream`, with the provider's members: edited at its top level
 * (`editTopLevel`), every value kept byte for byte, so numbers beyond 2^53 and any field the gateway does not
 * know reach the upstream as the caller wrote them. The router has already read the body as a JSON object, so
 * the edit cannot fail; if it ever did (or in adapter tests without the bytes), the parsed body is written out.
 */
export function providerBody(call: Pick<AdapterCall, 'rawBody' | 'body'>, add: readonly [string, string][]): string {
  const set = Object.fromEntries(add);
  const remove = replacedMembers.filter((name) => !(name in set));
  const edited = call.rawBody && editTopLevel(call.rawBody, { remove, set });
  if (edited) return edited.toString('utf8');
  const rest = Object.fromEntries(Object.entries(call.body).filter(([name]) => !replacedMembers.includes(name)));
  for (const [name, json] of add) rest[name] = JSON.parse(json) as unknown;
  return JSON.stringify(rest);
}
