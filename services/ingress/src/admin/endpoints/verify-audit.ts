import { adminApi } from '@gw/admin-api';
import { json, serve } from '../route-kit';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

export const verifyAudit = serve(adminApi.verifyAudit, async (_input, { clients }) => {
  const verified = await clients.adminAccess.verifyAudit({});
  if (!verified.ok) return verified;
  const result = verified.value;
  return json({
    valid: result.valid,
    entries_checked: Number(result.entriesChecked),
    head: { seq: Number(result.headSeq), hash: hex(result.headHash) },
    published_head:
      result.publishedSeq > 0n ? { seq: Number(result.publishedSeq), hash: hex(result.publishedHash) } : null,
    failure: result.valid ? null : { seq: Number(result.failedAtSeq), reason: result.failure },
  });
});
