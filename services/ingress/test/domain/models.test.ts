import { pageQuery, paginate } from '../../src/domain/models';
import type { ModelObject } from '../../src/domain/models';

const models: ModelObject[] = ['m5', 'm4', 'm3', 'm2', 'm1'].map((id) => ({
  type: 'model',
  id,
  display_name: id,
  created_at: '2025-01-01T00:00:00Z',
}));
const page = (query: Parameters<typeof paginate>[1]) => {
  const result = paginate(models, query);
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
};

describe('paginate', () => {
  it('walks forwards with after_id until has_more is false', () => {
    const ids: string[] = [];
    let after: string | undefined;
    for (;;) {
      const current = page({ limit: 2, afterId: after });
      ids.push(...current.data.map((model) => model.id));
      if (!current.has_more) break;
      after = current.last_id!;
    }
    expect(ids).toEqual(['m5', 'm4', 'm3', 'm2', 'm1']);
  });

  it('walks backwards with before_id', () => {
    expect(page({ limit: 2, beforeId: 'm2' })).toEqual(
      expect.objectContaining({ first_id: 'm4', last_id: 'm3', has_more: true }),
    );
    expect(page({ limit: 2, beforeId: 'm4' })).toEqual(
      expect.objectContaining({ first_id: 'm5', last_id: 'm5', has_more: false }),
    );
  });

  it('gives first_id and last_id null on an empty page, and has_more false', () => {
    expect(page({ limit: 2, afterId: 'm1' })).toEqual({ data: [], has_more: false, first_id: null, last_id: null });
  });

  it('refuses a cursor that is not in the list', () => {
    expect(paginate(models, { limit: 2, afterId: 'nope' })).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'invalid_request_error', message: expect.stringMatching(/^after_id/) }),
    });
  });

  it('repeats a long or unprintable cursor cut and escaped', () => {
    expect(paginate(models, { limit: 2, beforeId: `\u001b[2J${'m'.repeat(10_000)}` })).toEqual({
      ok: false,
      error: {
        type: 'invalid_request_error',
        message: `before_id: "\\u001b[2J${'m'.repeat(60)}…" is not in your model list.`,
      },
    });
  });
});

describe('pageQuery', () => {
  it('defaults to 20 and checks the range', () => {
    expect(pageQuery({})).toEqual({ ok: true, value: { limit: 20, afterId: undefined, beforeId: undefined } });
    for (const limit of ['0', '1001', 'ten', '1.5']) {
      expect(pageQuery({ limit })).toEqual({
        ok: false,
        error: expect.objectContaining({ type: 'invalid_request_error' }),
      });
    }
    expect(pageQuery({ after_id: 'a', before_id: 'b' }).ok).toBe(false);
  });
});
