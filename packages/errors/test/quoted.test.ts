import { quoted } from '../src';

describe('quoted', () => {
  it('quotes short text whole', () => {
    expect(quoted('acct_123')).toBe('"acct_123"');
  });

  it('cuts long text to 64 characters and an ellipsis', () => {
    expect(quoted('x'.repeat(300_000))).toBe(`"${'x'.repeat(64)}…"`);
    expect(quoted('x'.repeat(65))).toBe(`"${'x'.repeat(64)}…"`);
    expect(quoted('x'.repeat(64))).toBe(`"${'x'.repeat(64)}"`);
  });

  it('counts characters, never splitting a surrogate pair', () => {
    expect(quoted('😀'.repeat(65))).toBe(`"${'😀'.repeat(64)}…"`);
    expect(quoted('😀'.repeat(100))).toBe(`"${'😀'.repeat(64)}…"`);
  });

  it('escapes control characters, C1 and DEL included', () => {
    expect(quoted('a\u0000b\u001b[2Jc\u007f\u009b"')).toBe('"a\\u0000b\\u001b[2Jc\\u007f\\u009b\\""');
    expect(quoted('\u0000\u007f\u0085"')).toBe('"\\u0000\\u007f\\u0085\\""');
  });
});
