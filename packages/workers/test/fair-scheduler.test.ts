import { FairScheduler, runningShareOf } from '../src/fair-scheduler';
import type { FairnessLimits } from '../src/fair-scheduler';

/** A scheduler whose started jobs are recorded in order; a job is its name. */
function schedulerWith(limits: Partial<FairnessLimits> = {}) {
  const started: string[] = [];
  const scheduler = new FairScheduler<string>(
    { slots: 2, runningPerAccount: 1, queuedPerAccount: 2, queuedTotal: 4, ...limits },
    (job) => started.push(job),
  );
  return { scheduler, started };
}

describe('runningShareOf', () => {
  it('is half the slots rounded up, so that two busy accounts always each get one', () => {
    expect([2, 3, 4, 5, 8].map(runningShareOf)).toEqual([1, 2, 2, 3, 4]);
  });
});

describe('FairScheduler', () => {
  it('never lets one account take every slot: its next job waits while another account starts at once', () => {
    const { scheduler, started } = schedulerWith();
    expect(scheduler.submit('a', 'a1')).toBe('started');
    expect(scheduler.submit('a', 'a2')).toBe('queued');
    expect(scheduler.submit('b', 'b1')).toBe('started');
    expect(started).toEqual(['a1', 'b1']);
  });

  it('refuses an account beyond its own queue while other accounts are still admitted', () => {
    const { scheduler } = schedulerWith();
    expect(['a1', 'a2', 'a3', 'a4'].map((job) => scheduler.submit('a', job))).toEqual([
      'started',
      'queued',
      'queued',
      'refused',
    ]);
    expect(scheduler.submit('b', 'b1')).toBe('started');
    expect(scheduler.submit('b', 'b2')).toBe('queued');
  });

  it('refuses anyone once the whole queue is full', () => {
    const { scheduler } = schedulerWith({ queuedTotal: 3 });
    for (const job of ['a1', 'a2', 'a3']) scheduler.submit('a', job);
    for (const job of ['b1', 'b2']) scheduler.submit('b', job);
    expect(scheduler.submit('c', 'c1')).toBe('refused');
    scheduler.finished('b');
    expect(scheduler.submit('c', 'c1')).toBe('queued');
  });

  it('gives freed slots to the waiting accounts in turn, not in order of arrival', () => {
    const { scheduler, started } = schedulerWith({ slots: 1, queuedPerAccount: 4, queuedTotal: 8 });
    scheduler.submit('a', 'a1');
    for (const job of ['a2', 'a3', 'a4']) scheduler.submit('a', job);
    scheduler.submit('b', 'b1');
    scheduler.submit('b', 'b2');
    scheduler.submit('c', 'c1');
    const accountOf = (job: string) => job[0]!;
    for (let finishedCount = 0; finishedCount < 6; finishedCount += 1) {
      scheduler.finished(accountOf(started.at(-1)!));
    }
    expect(started).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4']);
  });

  it('skips an account at its share when a slot frees, and starts its job when its own slot frees', () => {
    const { scheduler, started } = schedulerWith({ slots: 3, runningPerAccount: 2 });
    scheduler.submit('a', 'a1');
    scheduler.submit('a', 'a2');
    scheduler.submit('b', 'b1');
    scheduler.submit('a', 'a3');
    scheduler.submit('b', 'b2');
    expect(started).toEqual(['a1', 'a2', 'b1']);
    // b's slot frees while a is at its share: b's own next job takes it.
    scheduler.finished('b');
    expect(started).toEqual(['a1', 'a2', 'b1', 'b2']);
    scheduler.finished('a');
    expect(started).toEqual(['a1', 'a2', 'b1', 'b2', 'a3']);
  });

  it('takes back a waiting job whose caller gave up, so it never starts, and frees its queue place', () => {
    const { scheduler, started } = schedulerWith();
    scheduler.submit('a', 'a1');
    scheduler.submit('a', 'a2');
    scheduler.submit('a', 'a3');
    expect(scheduler.withdraw('a', 'a2')).toBe(true);
    expect(scheduler.withdraw('a', 'a1')).toBe(false);
    expect(scheduler.submit('a', 'a4')).toBe('queued');
    scheduler.finished('a');
    scheduler.finished('a');
    expect(started).toEqual(['a1', 'a3', 'a4']);
  });

  it('starts nothing more once every waiting job was taken back, and forgets idle accounts', () => {
    const { scheduler, started } = schedulerWith({ slots: 1 });
    scheduler.submit('a', 'a1');
    scheduler.submit('b', 'b1');
    scheduler.withdraw('b', 'b1');
    scheduler.finished('a');
    expect(started).toEqual(['a1']);
    expect(() => scheduler.finished('a')).toThrow('no running job of a');
    expect(scheduler.submit('b', 'b2')).toBe('started');
  });
});
