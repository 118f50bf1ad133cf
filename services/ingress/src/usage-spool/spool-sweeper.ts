/**
 * Which retained spool volumes need a drain. A StatefulSet keeps the claim of every pod it scaled away
 * (usage-spool-<set>-<ordinal>); a pod that stopped while Kafka was away left usage on it, which nothing
 * reads until a pod of that ordinal returns. The sweeper starts a drain Job for each such claim.
 */
export interface SweepState {
  statefulSet: string;
  /** The StatefulSet's spec.replicas: ordinals from it up have no pod coming. */
  replicas: number;
  /** Names of the spool claims of the StatefulSet's pods. */
  claims: string[];
  /** Names of the StatefulSet's pods that exist (running or terminating). */
  pods: string[];
  /** Names of the drain Jobs that exist, whatever their state. */
  jobs: string[];
}

export const claimPrefix = 'usage-spool-';

/** The drain Job of an ordinal: one at a time per volume, named so. */
export const drainJobName = (statefulSet: string, ordinal: number): string => `${statefulSet}-spool-drain-${ordinal}`;

/** The ordinal of one of the StatefulSet's spool claims, or undefined for another claim. */
export function claimOrdinal(statefulSet: string, claim: string): number | undefined {
  const prefix = `${claimPrefix}${statefulSet}-`;
  if (!claim.startsWith(prefix)) return undefined;
  const ordinal = claim.slice(prefix.length);
  return /^(0|[1-9][0-9]*)$/.test(ordinal) ? Number(ordinal) : undefined;
}

/** Claims no pod serves or will serve, with no drain Job yet, and their ordinals. */
export function claimsToDrain(state: SweepState): { claim: string; ordinal: number; job: string }[] {
  const pods = new Set(state.pods);
  const jobs = new Set(state.jobs);
  return state.claims.flatMap((claim) => {
    const ordinal = claimOrdinal(state.statefulSet, claim);
    if (ordinal === undefined || ordinal < state.replicas) return [];
    if (pods.has(`${state.statefulSet}-${ordinal}`)) return [];
    const job = drainJobName(state.statefulSet, ordinal);
    return jobs.has(job) ? [] : [{ claim, ordinal, job }];
  });
}
