import fc from 'fast-check';
import { estimateInputTokens as simEstimate } from '../../../bench/sim-upstream/src';
import { estimateInputTokens } from '../src/estimate';

describe('estimateInputTokens', () => {
  it('is a quarter of the characters of system, message text and tools, rounded up', () => {
    // 8 + 4 ("user") + 12 = 24 characters → 6.
    expect(
      estimateInputTokens({ system: 'Be brief', messages: [{ role: 'user', content: 'Hello world!' }], model: 'm' }),
    ).toBe(6);
    // One more character rounds up.
    expect(estimateInputTokens({ system: 'Be brief.', messages: [{ role: 'user', content: 'Hello world!' }] })).toBe(7);
  });

  it('counts every string value at any depth: blocks, tool use input, tool results, tool definitions', () => {
    const body = {
      system: [{ type: 'text', text: 'abcd' }], // 4 + 4
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 'tu', name: 'nm', input: { city: 'Oslo' } }] }, // 9 + 8 + 2 + 2 + 4
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu', content: 'Sunny' }] }, // 4 + 11 + 2 + 5
      ],
      tools: [{ name: 'weather', input_schema: { type: 'object' } }], // 7 + 6
    };
    expect(estimateInputTokens(body)).toBe(Math.ceil((8 + 25 + 22 + 13) / 4));
  });

  it('ignores object keys, numbers, booleans and every other field', () => {
    const base = { messages: [{ role: 'user', content: 'abcdefgh' }] };
    const withExtras = {
      ...base,
      model: 'a-very-long-model-name',
      max_tokens: 4096,
      tool_choice: { type: 'auto' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      metadata: { user_id: 'someone' },
    };
    expect(estimateInputTokens(withExtras)).toBe(estimateInputTokens(base));
    expect(
      estimateInputTokens({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x', a: 1, b: true }] }] }),
    ).toBe(estimateInputTokens({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }));
  });

  it('is at least 1, even for an empty or missing prompt', () => {
    expect(estimateInputTokens({})).toBe(1);
    expect(estimateInputTokens({ messages: [] })).toBe(1);
    expect(estimateInputTokens({ messages: 42, system: null, tools: [true] })).toBe(1);
  });

  it('agrees with the simulated upstream on any body, so that sim counts and router estimates compare', () => {
    fc.assert(
      fc.property(
        fc.record(
          { system: fc.jsonValue(), messages: fc.jsonValue(), tools: fc.jsonValue(), model: fc.string() },
          {
            requiredKeys: [],
          },
        ),
        (body) => {
          const estimate = estimateInputTokens(body);
          expect(estimate).toBe(simEstimate(body));
          expect(Number.isInteger(estimate) && estimate >= 1).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});
