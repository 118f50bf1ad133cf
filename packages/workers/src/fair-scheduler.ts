/** How a fixed number of slots (worker threads) is shared between accounts. */
export interface FairnessLimits {
  /** Jobs that may run at once, all accounts together. */
  slots: number;
  /** Jobs of one account that may run at once; below `slots`, so that one account never holds them all. */
  runningPerAccount: number;
  /** Jobs of one account that may wait. */
  queuedPerAccount: number;
  /** Jobs that may wait, all accounts together. */
  queuedTotal: number;
}

/** Half the slots, rounded up: at least one for each of two busy accounts. */
export const runningShareOf = (slots: number): number => Math.ceil(slots / 2);

export type Admission = 'started' | 'queued' | 'refused';

interface AccountJobs<Job> {
  running: number;
  waiting: Job[];
}

/**
 * Decides which job runs next. A job starts at once when a slot is free and its account is under its share;
 * otherwise it waits in its account's queue, or is refused when that queue or the whole queue is full. A freed
 * slot goes to the accounts that wait in turn (round robin), skipping those already at their share, so that a
 * heavy account waits behind itself, never in front of others.
 */
export class FairScheduler<Job> {
  private readonly accounts = new Map<string, AccountJobs<Job>>();
  /** Accounts with waiting jobs, in the order of their next turn. */
  private readonly turns: string[] = [];
  private running = 0;
  private waiting = 0;

  /** `start` is told of every job that may run now, from `submit` or when a slot frees. */
  constructor(
    private readonly limits: FairnessLimits,
    private readonly start: (job: Job, account: string) => void,
  ) {}

  submit(account: string, job: Job): Admission {
    const jobs = this.accounts.get(account) ?? { running: 0, waiting: [] };
    if (this.running < this.limits.slots && jobs.running < this.limits.runningPerAccount) {
      this.accounts.set(account, jobs);
      this.begin(account, jobs, job);
      return 'started';
    }
    if (jobs.waiting.length >= this.limits.queuedPerAccount || this.waiting >= this.limits.queuedTotal) {
      return 'refused';
    }
    this.accounts.set(account, jobs);
    if (jobs.waiting.length === 0) this.turns.push(account);
    jobs.waiting.push(job);
    this.waiting += 1;
    return 'queued';
  }

  /** A started job of the account ended (done, failed or cancelled): its slot goes to the next in turn. */
  finished(account: string): void {
    const jobs = this.accounts.get(account);
    if (!jobs || jobs.running === 0) throw new Error(`no running job of ${account} to finish`);
    jobs.running -= 1;
    this.running -= 1;
    this.forgetIfIdle(account, jobs);
    this.startWaiting();
  }

  /** Takes back a waiting job whose caller gave up; false when it is not waiting (it started already). */
  withdraw(account: string, job: Job): boolean {
    const jobs = this.accounts.get(account);
    const index = jobs ? jobs.waiting.indexOf(job) : -1;
    if (!jobs || index < 0) return false;
    jobs.waiting.splice(index, 1);
    this.waiting -= 1;
    if (jobs.waiting.length === 0) this.turns.splice(this.turns.indexOf(account), 1);
    this.forgetIfIdle(account, jobs);
    return true;
  }

  private begin(account: string, jobs: AccountJobs<Job>, job: Job): void {
    jobs.running += 1;
    this.running += 1;
    this.start(job, account);
  }

  private startWaiting(): void {
    // Starting a job changes no other account's share, so a full round of accounts at their share ends it.
    let skipped = 0;
    while (this.running < this.limits.slots && skipped < this.turns.length) {
      const account = this.turns.shift()!;
      const jobs = this.accounts.get(account)!;
      if (jobs.running >= this.limits.runningPerAccount) {
        this.turns.push(account);
        skipped += 1;
        continue;
      }
      const job = jobs.waiting.shift()!;
      this.waiting -= 1;
      if (jobs.waiting.length > 0) this.turns.push(account);
      skipped = 0;
      this.begin(account, jobs, job);
    }
  }

  private forgetIfIdle(account: string, jobs: AccountJobs<Job>): void {
    if (jobs.running === 0 && jobs.waiting.length === 0) this.accounts.delete(account);
  }
}
