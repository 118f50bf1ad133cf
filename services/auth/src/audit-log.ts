import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { canonicalJson, checkAgainstPublished, checkEntries, genesisHash, isFailure } from './audit-chain';
import type { ChainFailure, ChainHead, StoredEntry } from './audit-chain';
import type { AuditStore } from './audit-store';

export interface AuditRecordRequest {
  actorKind: string;
  actorId: string;
  accountId: string | undefined;
  sourceAddress: string;
  action: string;
  targetKind: string;
  targetId: string;
  beforeJson: string;
  afterJson: string;
}

/** Where the chain's head is published outside PostgreSQL (the log, a metric, Redis). */
export interface HeadPublisher {
  publish(head: ChainHead): Promise<void>;
  /** The highest head published for this database; undefined when none is known. */
  read(): Promise<ChainHead | undefined>;
}

export interface Verification {
  valid: boolean;
  entriesChecked: number;
  head: ChainHead;
  published: ChainHead | undefined;
  failure: ChainFailure | undefined;
}

const actorKinds = new Set(['operator', 'admin_key', 'unknown']);
const actionPattern = /^[a-z_]{1,32}(\.[a-z_]{1,32}){0,3}$/;
/** A resource as the admin API shows it; a key's lists make the largest. */
const maxResourceJsonChars = 1024 * 1024;
const verifyBatch = 1_000;

const invalid = (message: string) => err(gatewayError('invalid_request_error', message));

function parseResource(field: string, json: string): Result<unknown> {
  if (json === '') return ok(null);
  if (json.length > maxResourceJsonChars)
    return invalid(`${field}: expected at most ${maxResourceJsonChars} characters.`);
  try {
    return ok(JSON.parse(json));
  } catch {
    return invalid(`${field}: expected JSON.`);
  }
}

/** The tamper-evident log of admin changes and refused admin credentials. Never holds a secret. */
export class AuditLog {
  constructor(
    private readonly store: AuditStore,
    private readonly publisher: HeadPublisher,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async record(request: AuditRecordRequest): Promise<Result<StoredEntry>> {
    if (!actorKinds.has(request.actorKind)) return invalid('actor_kind: expected operator, admin_key or unknown.');
    if (!actionPattern.test(request.action)) return invalid('action: expected dotted lower-case words.');
    if (request.sourceAddress.length > 64) return invalid('source_address: expected an address.');
    if (request.targetKind.length > 32 || request.targetId.length > 64 || request.actorId.length > 64) {
      return invalid('target or actor: expected an id.');
    }
    const before = parseResource('before_json', request.beforeJson);
    if (!before.ok) return before;
    const after = parseResource('after_json', request.afterJson);
    if (!after.ok) return after;
    // Milliseconds: the column keeps microseconds, so the stored time reads back exactly as hashed.
    const at = this.now();
    const accountId = request.accountId ?? null;
    const entryJson = canonicalJson({
      at: at.toISOString(),
      actor: { kind: request.actorKind, id: request.actorId === '' ? null : request.actorId },
      account_id: accountId,
      source_address: request.sourceAddress,
      action: request.action,
      target: request.targetKind === '' ? null : { kind: request.targetKind, id: request.targetId },
      before: before.value,
      after: after.value,
    });
    const entry = await this.store.append(at, accountId, entryJson);
    await this.publisher.publish({ seq: entry.seq, hash: entry.hash });
    return ok(entry);
  }

  /**
   * Checks every link from the first entry, then the stored end against the published head: a removed
   * last entry, or a chain rewritten with fresh hashes, shows there.
   */
  async verify(): Promise<Verification> {
    const published = await this.publisher.read();
    let head: ChainHead = { seq: 0, hash: genesisHash };
    let publishedHash: Buffer | undefined;
    let entriesChecked = 0;
    for (;;) {
      const batch = await this.store.batchAfter(head.seq, verifyBatch);
      if (batch.length === 0) break;
      const checked = checkEntries(batch, head);
      if (isFailure(checked)) {
        return { valid: false, entriesChecked, head, published, failure: checked };
      }
      if (published) publishedHash ??= batch.find((entry) => entry.seq === published.seq)?.hash;
      entriesChecked += batch.length;
      head = checked;
    }
    const failure = published && checkAgainstPublished(head, published, () => publishedHash);
    return { valid: failure === undefined, entriesChecked, head, published, failure };
  }

  list(filter: Parameters<AuditStore['list']>[0]): Promise<StoredEntry[]> {
    return this.store.list(filter);
  }
}
