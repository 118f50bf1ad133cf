import { editTopLevel, layoutFits } from '@gw/json-layout';
import type { TopLevelLayout } from '@gw/json-layout';
import type { AdapterCall } from './types';

/** Top-level members the provider body must not carry as the caller sent them. */
const replacedMembers = ['model', 'stream', 'anthropic_version', 'anthropic_beta'];

/** Every top-level member an adapter edits: the Anthropic protocol's `model` and `stream`, and the providers'. */
const editedMembers: ReadonlySet<string> = new Set(replacedMembers);

/**
 * The layout ingress sent, when it fits the bytes (`layoutFits`, the members the adapters edit checked by name);
 * undefined otherwise, and the router reads the body itself as it did before ingress sent layouts.
 */
export function fittingLayout(raw: Uint8Array, layout: TopLevelLayout | undefined): TopLevelLayout | undefined {
  return layout && layoutFits(raw, layout, editedMembers) ? layout : undefined;
}

/**
 * The caller's body without `model` and `stream`, with the provider's members: edited at its top level
 * (`editTopLevel`), every value kept byte for byte, so numbers beyond 2^53 and any field the gateway does not
 * know reach the upstream as the caller wrote them; with the layout ingress found, the body is not read again.
 * Ingress has checked the body as a JSON object, so the edit cannot fail; if it ever did (or in adapter tests
 * without the bytes), the parsed body is written out.
 */
export function providerBody(
  call: Pick<AdapterCall, 'rawBody' | 'layout' | 'body'>,
  add: readonly [string, string][],
): Buffer {
  const set = Object.fromEntries(add);
  const remove = replacedMembers.filter((name) => !(name in set));
  const edited = call.rawBody && editTopLevel(call.rawBody, { remove, set }, call.layout);
  if (edited) return edited;
  const rest = Object.fromEntries(Object.entries(call.body).filter(([name]) => !replacedMembers.includes(name)));
  for (const [name, json] of add) rest[name] = JSON.parse(json) as unknown;
  return Buffer.from(JSON.stringify(rest));
}
