import type { Logger } from '@gw/telemetry';
import type { Clients } from '../clients';
import type { Principal } from './principal';
import type { AuditNote } from './route-kit';

/** Records admin changes and refused credentials in auth's audit log, and logs each change. */
export function auditTrail(adminAccess: Clients['adminAccess'], logger: Logger) {
  const record = async (principal: Principal | undefined, address: string, note: AuditNote) => {
    const appended = await adminAccess.appendAudit({
      actorKind: principal?.kind === 'account' ? 'admin_key' : (principal?.kind ?? 'unknown'),
      actorId: principal?.kind === 'account' ? principal.adminKeyId : '',
      accountId: note.accountId,
      sourceAddress: address,
      action: note.action,
      targetKind: note.target.kind,
      targetId: note.target.id,
      beforeJson: note.before === undefined ? '' : JSON.stringify(note.before),
      afterJson: note.after === undefined ? '' : JSON.stringify(note.after),
    });
    const actor = principal?.kind === 'account' ? principal.adminKeyId : (principal?.kind ?? 'unknown');
    if (principal) {
      logger.info(
        { action: note.action, actor, account_id: note.accountId, target_id: note.target.id, source_address: address },
        'admin change',
      );
    }
    // The change is made and its answer may carry a secret shown once: it is given, and the log keeps what happened.
    if (!appended.ok) {
      logger.error(
        { action: note.action, account_id: note.accountId, target_id: note.target.id, err: appended.error.message },
        'admin change made but not recorded in the audit log',
      );
    }
  };
  const refusedCredential = (address: string) =>
    record(undefined, address, {
      action: 'admin_credential.refused',
      accountId: undefined,
      target: { kind: '', id: '' },
      before: undefined,
      after: undefined,
    });
  return { record, refusedCredential };
}

export type AuditTrail = ReturnType<typeof auditTrail>;
