import { joinRefusals } from '../src/key-usage';
import type { KeyUsageLine } from '../src/key-usage';

const totals = (requests: bigint) => ({
  requests,
  inputTokens: 0n,
  outputTokens: 0n,
  cacheReadInputTokens: 0n,
  cacheCreationInputTokens: 0n,
  billableTokens: 0n,
  costGbp: '0',
});

describe('joinRefusals', () => {
  it("puts each key's refusals on its line, adds a line for a key with refusals only, and sorts", () => {
    const usage: KeyUsageLine[] = [
      { keyId: 'key_b', totals: totals(2n), refusals: [] },
      { keyId: 'key_a', totals: totals(1n), refusals: [] },
    ];
    const joined = joinRefusals(
      usage,
      [
        { day: '2026-11-02', key_id: 'key_b', reason: 'rate_limit_error', refusals: '3' },
        { day: '2026-11-01', key_id: 'key_b', reason: 'invalid_request_error', refusals: '1' },
        { day: '2026-11-01', key_id: 'key_b', reason: 'rate_limit_error', refusals: '2' },
        { day: '2026-11-01', key_id: 'key_c', reason: 'permission_error', refusals: '4' },
      ],
      (line) => line.keyId,
      (row) => ({ keyId: row.key_id, totals: totals(0n), refusals: [] }),
    );
    expect(joined).toEqual([
      { keyId: 'key_a', totals: totals(1n), refusals: [] },
      {
        keyId: 'key_b',
        totals: totals(2n),
        refusals: [
          { reason: 'invalid_request_error', refusals: 1n },
          { reason: 'rate_limit_error', refusals: 5n },
        ],
      },
      { keyId: 'key_c', totals: totals(0n), refusals: [{ reason: 'permission_error', refusals: 4n }] },
    ]);
  });
});
