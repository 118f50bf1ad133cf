import { create } from '@bufbuild/protobuf';
import { commonv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import type { VerifiedKey } from '../../src/domain/key';

/** A verified key as the auth client decodes it, from the fields of auth's record. */
export function verifiedKey(fields: MessageInitShape<typeof commonv1.KeyContextSchema> = {}): VerifiedKey {
  const record = create(commonv1.KeyContextSchema, fields);
  return {
    keyId: record.keyId,
    accountId: record.accountId,
    plan: record.plan,
    environment: record.environment,
    residency: record.residency,
    privacyMode: record.privacyMode,
    expiresAtUnixMs: record.expiresAtUnixMs === undefined ? undefined : Number(record.expiresAtUnixMs),
    record,
  };
}
