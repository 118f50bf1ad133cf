import { CircuitBreaker } from '../src/breaker';
import type { BreakerSettings } from '../src/breaker';

const settings: BreakerSettings = { failureThreshold: 3, baseEjectionMs: 5_000, maxEjectionMs: 60_000 };

function fakeClock() {
  let now = 1_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

function breaker() {
  const clock = fakeClock();
  return { clock, subject: new CircuitBreaker(settings, clock.now) };
}

/** Fails ordinary requests until the breaker ejects; the transition. */
function failUntilEjected(subject: CircuitBreaker) {
  for (let i = 1; i < settings.failureThreshold; i += 1) expect(subject.failed(subject.admit())).toBeUndefined();
  return subject.failed(subject.admit());
}

describe('circuit breaker', () => {
  it('ejects after N consecutive failures, not before', () => {
    const { subject } = breaker();
    expect(subject.state()).toBe('closed');
    expect(subject.failed(subject.admit())).toBeUndefined();
    expect(subject.failed(subject.admit())).toBeUndefined();
    expect(subject.available()).toBe(true);
    expect(subject.failed(subject.admit())).toEqual({
      kind: 'ejected',
      cause: 'failures',
      ejectionMs: 5_000,
      streak: 1,
    });
    expect(subject.state()).toBe('open');
    expect(subject.available()).toBe(false);
  });

  it('counts only consecutive failures: a success in between starts again', () => {
    const { subject } = breaker();
    subject.failed(subject.admit());
    subject.failed(subject.admit());
    expect(subject.succeeded(subject.admit())).toBeUndefined();
    subject.failed(subject.admit());
    expect(subject.failed(subject.admit())).toBeUndefined();
    expect(subject.state()).toBe('closed');
  });

  it('goes half-open after the ejection time, and lets exactly one trial through', () => {
    const { subject, clock } = breaker();
    failUntilEjected(subject);
    clock.advance(4_999);
    expect(subject.state()).toBe('open');
    clock.advance(1);
    expect(subject.state()).toBe('half_open');
    expect(subject.available()).toBe(true);
    const trial = subject.admit();
    expect(trial).toEqual({ trial: true });
    expect(subject.available()).toBe(false);
    expect(subject.succeeded(trial)).toEqual({ kind: 'closed' });
    expect(subject.state()).toBe('closed');
    expect(subject.available()).toBe(true);
  });

  it('ejects again on a failed trial, doubling the time up to the maximum', () => {
    const { subject, clock } = breaker();
    const ejections: number[] = [];
    const first = failUntilEjected(subject);
    ejections.push(first?.kind === 'ejected' ? first.ejectionMs : 0);
    for (let i = 0; i < 6; i += 1) {
      clock.advance(ejections.at(-1)!);
      const transition = subject.failed(subject.admit());
      expect(transition).toMatchObject({ kind: 'ejected', cause: 'trial' });
      ejections.push(transition?.kind === 'ejected' ? transition.ejectionMs : 0);
    }
    expect(ejections).toEqual([5_000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
  });

  it('keeps the streak when ejected again soon after closing, and ends it after a long healthy spell', () => {
    const { subject, clock } = breaker();
    failUntilEjected(subject);
    clock.advance(5_000);
    subject.succeeded(subject.admit());
    clock.advance(10_000);
    expect(failUntilEjected(subject)).toMatchObject({ ejectionMs: 10_000, streak: 2 });
    clock.advance(10_000);
    subject.succeeded(subject.admit());
    clock.advance(60_000);
    expect(failUntilEjected(subject)).toMatchObject({ ejectionMs: 5_000, streak: 1 });
  });

  it('frees the trial slot when the trial is abandoned', () => {
    const { subject, clock } = breaker();
    failUntilEjected(subject);
    clock.advance(5_000);
    const trial = subject.admit();
    expect(subject.available()).toBe(false);
    subject.abandoned(trial);
    expect(subject.state()).toBe('half_open');
    expect(subject.available()).toBe(true);
  });

  it('ignores results of ordinary requests that were in flight when it opened', () => {
    const { subject, clock } = breaker();
    const late = subject.admit();
    failUntilEjected(subject);
    expect(subject.succeeded(late)).toBeUndefined();
    expect(subject.state()).toBe('open');
    clock.advance(5_000);
    expect(subject.failed({ trial: false })).toBeUndefined();
    expect(subject.state()).toBe('half_open');
  });

  it('lets a last-resort request through while open: its failure changes nothing, its success re-admits', () => {
    const { subject } = breaker();
    failUntilEjected(subject);
    const failing = subject.admitAnyway();
    expect(failing).toEqual({ trial: false, lastResort: true });
    expect(subject.failed(failing)).toBeUndefined();
    expect(subject.state()).toBe('open');
    expect(subject.succeeded(subject.admitAnyway())).toEqual({ kind: 'closed' });
    expect(subject.state()).toBe('closed');
    // Admitted anyway: an ordinary request.
    expect(subject.admitAnyway()).toEqual({ trial: false });
  });

  it('ignores the result of a trial that a last resort overtook', () => {
    const { subject, clock } = breaker();
    failUntilEjected(subject);
    clock.advance(5_000);
    const trial = subject.admit();
    expect(subject.succeeded(subject.admitAnyway())).toEqual({ kind: 'closed' });
    expect(subject.succeeded(trial)).toBeUndefined();
    expect(subject.state()).toBe('closed');
  });

  it('closes on a successful probe, from open or half-open', () => {
    const { subject, clock } = breaker();
    failUntilEjected(subject);
    expect(subject.probeSucceeded()).toEqual({ kind: 'closed' });
    expect(subject.state()).toBe('closed');
    failUntilEjected(subject);
    clock.advance(20_000);
    subject.admit();
    expect(subject.probeSucceeded()).toEqual({ kind: 'closed' });
    expect(subject.available()).toBe(true);
    expect(subject.probeSucceeded()).toBeUndefined();
  });

  it('counts a failed probe as a failure when closed, fails the trial slot when half-open, ignores it when open', () => {
    const { subject, clock } = breaker();
    expect(subject.probeFailed()).toBeUndefined();
    expect(subject.probeFailed()).toBeUndefined();
    expect(subject.probeFailed()).toMatchObject({ kind: 'ejected', cause: 'failures', ejectionMs: 5_000 });
    expect(subject.probeFailed()).toBeUndefined();
    clock.advance(5_000);
    expect(subject.probeFailed()).toMatchObject({ kind: 'ejected', cause: 'probe', ejectionMs: 10_000 });
    clock.advance(10_000);
    subject.admit();
    // A trial is running: its own result decides.
    expect(subject.probeFailed()).toBeUndefined();
  });

  it('resets the failure count on a successful probe', () => {
    const { subject } = breaker();
    subject.failed(subject.admit());
    subject.failed(subject.admit());
    subject.probeSucceeded();
    expect(subject.failed(subject.admit())).toBeUndefined();
    expect(subject.state()).toBe('closed');
  });
});
