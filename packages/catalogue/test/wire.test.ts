import { parseGatewayConfig } from '@gw/config';
import { commonv1, create, fromBinary, policyv1, toBinary } from '@gw/proto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { authorizeKey, Catalogue, catalogueFromMessage, keyPermissionsOf, snapshotMessage } from '../src';

const config = parseGatewayConfig(readFileSync(join(__dirname, '../../../deploy/local/gateway.yaml'), 'utf8'), {});
const catalogue = Catalogue.fromConfig(config);

/** The snapshot as a follower receives it: encoded by policy, decoded from the wire. */
const received = (sent: policyv1.CatalogueSnapshot) =>
  fromBinary(policyv1.CatalogueSnapshotSchema, toBinary(policyv1.CatalogueSnapshotSchema, sent));
const sent = create(policyv1.CatalogueSnapshotSchema, snapshotMessage(catalogue));

const keyContext = (residency: commonv1.Residency, plan = 'pro', allowedModels?: string[]) =>
  create(commonv1.KeyContextSchema, {
    keyId: 'key_1',
    accountId: 'acct_1',
    plan,
    residency,
    privacyMode: commonv1.PrivacyMode.OFF,
    allowedModels: allowedModels && { values: allowedModels },
  });

describe('catalogueFromMessage', () => {
  it('reads back, from protobuf, the catalogue policy sent: same version, same decisions', () => {
    const followed = catalogueFromMessage(received(sent));
    if (!followed.ok) throw new Error(followed.error.message);
    expect(followed.value.version).toBe(catalogue.version);
    expect(followed.value.snapshot).toEqual(catalogue.snapshot);
    for (const residency of [commonv1.Residency.UK, commonv1.Residency.EU]) {
      for (const plan of ['pro', 'starter']) {
        const key = keyContext(residency, plan);
        for (const model of ['claude-sonnet-5', 'claude-opus-5', 'llama-4-maverick', 'gpt-nothing']) {
          expect(authorizeKey(followed.value, key, model)).toEqual(authorizeKey(catalogue, key, model));
        }
      }
    }
  });

  it('refuses a missing snapshot, a pool without a known jurisdiction and a content that does not match its version', () => {
    expect(catalogueFromMessage(undefined)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'api_error' }),
    });
    const orphan = received(
      create(policyv1.CatalogueSnapshotSchema, {
        ...sent,
        pools: [...sent.pools, create(policyv1.CataloguePoolSchema, { id: 'orphan', region: 'nowhere' })],
      }),
    );
    expect(catalogueFromMessage(orphan)).toEqual({
      ok: false,
      error: expect.objectContaining({ message: expect.stringMatching(/"orphan" without a known jurisdiction/) }),
    });
    const altered = received(
      create(policyv1.CatalogueSnapshotSchema, {
        ...sent,
        plans: [create(policyv1.CataloguePlanSchema, { id: 'pro', allModels: true })],
      }),
    );
    expect(catalogueFromMessage(altered)).toEqual({
      ok: false,
      error: expect.objectContaining({ message: expect.stringMatching(/reads back as version/) }),
    });
  });
});

describe('authorizeKey', () => {
  it('answers with the pools policy.Authorize sends, jurisdiction as the residency enum', () => {
    expect(authorizeKey(catalogue, keyContext(commonv1.Residency.UK), 'claude-sonnet-5')).toEqual({
      ok: true,
      value: [
        create(policyv1.CandidatePoolSchema, {
          poolId: 'bedrock-uk-london',
          jurisdiction: commonv1.Residency.UK,
          region: 'uk-south',
          upstreamModel: 'anthropic.claude-sonnet-5-20250929-v1:0',
        }),
        create(policyv1.CandidatePoolSchema, {
          poolId: 'anthropic-uk-south',
          jurisdiction: commonv1.Residency.UK,
          region: 'uk-south',
          upstreamModel: 'claude-sonnet-5',
        }),
      ],
    });
  });

  it('honours the key allow-list and refuses a key without a residency tier (fail closed)', () => {
    const allowList = keyContext(commonv1.Residency.EU, 'pro', ['claude-haiku-4-5']);
    expect(authorizeKey(catalogue, allowList, 'claude-sonnet-5')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'permission_error' }),
    });
    for (const key of [undefined, keyContext(commonv1.Residency.UNSPECIFIED)]) {
      expect(keyPermissionsOf(key)).toEqual({
        ok: false,
        error: expect.objectContaining({ type: 'residency_unavailable' }),
      });
      expect(authorizeKey(catalogue, key, 'claude-sonnet-5')).toEqual({
        ok: false,
        error: expect.objectContaining({ type: 'residency_unavailable' }),
      });
    }
  });
});
