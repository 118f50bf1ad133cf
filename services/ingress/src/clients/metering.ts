import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { meteringv1, MessageInitShape } from '@gw/proto';
import type { VerifiedKey } from '../domain/key';
import type { ModelUsage, PeriodUsage } from '../domain/period-usage';
import { callScope } from '../domain/request-scope';
import type { RequestScope } from '../domain/request-scope';
import type { Clients } from './connections';
import { ReplyDecoder } from './reply';
import type { MalformedReplies } from './reply';

export type RefusalLine = MessageInitShape<typeof meteringv1.KeyRefusalsSchema>;

/** What ingress itself (not its admin API) asks metering. */
export interface MeteringClient {
  /** The key's account's use in the period starting `periodStart` (YYYY-MM-DD), in the key's environment. */
  usage(key: VerifiedKey, periodStart: string, scope: RequestScope): Promise<Result<PeriodUsage>>;
  recordRefusals(lines: RefusalLine[]): Promise<Result<unknown>>;
}

export function decodePeriodUsage(decode: ReplyDecoder, reply: meteringv1.GetUsageResponse): Result<PeriodUsage> {
  const billableTokens = decode.count(reply.billableTokens, 'billable_tokens');
  if (!billableTokens.ok) return billableTokens;
  const byModel: ModelUsage[] = [];
  for (const line of reply.byModel) {
    const requests = decode.count(line.requests, 'by_model.requests');
    if (!requests.ok) return requests;
    const tokens = decode.count(line.billableTokens, 'by_model.billable_tokens');
    if (!tokens.ok) return tokens;
    byModel.push({ model: line.model, requests: requests.value, billableTokens: tokens.value, costGbp: line.costGbp });
  }
  return ok({ billableTokens: billableTokens.value, byModel });
}

export function meteringClient(
  metering: Pick<Clients['metering'], 'getUsage' | 'recordRefusals'>,
  malformed: MalformedReplies,
): MeteringClient {
  const decode = new ReplyDecoder('metering', malformed);
  return {
    usage: async (key, periodStart, scope) => {
      const usage = await metering.getUsage(
        { accountId: key.accountId, periodStart, environment: key.environment },
        callScope(scope),
      );
      return usage.ok ? decodePeriodUsage(decode, usage.value) : usage;
    },
    recordRefusals: (counts) => metering.recordRefusals({ counts }),
  };
}
