import { callerTexts } from '../src/caller-texts';
import type { JsonObject } from '../src/caller-texts';

describe('callerTexts', () => {
  it('finds system, message text, tool results and tool_use input strings, and replaces them in place', () => {
    const body: JsonObject = {
      model: 'm',
      system: [{ type: 'text', text: 'sys' }],
      messages: [
        { role: 'user', content: 'plain' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'said' },
            { type: 'tool_use', id: 't1', name: 'lookup', input: { email: 'in-input', nested: ['deep', 3] } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: 'result' },
            { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'block result' }] },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
      ],
      tools: [{ name: 'lookup', description: 'not personal', input_schema: { type: 'object' } }],
    };
    const slots = callerTexts(body);
    expect(slots.map((found) => found.text)).toEqual([
      'sys',
      'plain',
      'said',
      'in-input',
      'deep',
      'result',
      'block result',
    ]);
    for (const found of slots) found.replace(found.text.toUpperCase());
    expect(JSON.stringify(body)).toContain('"input":{"email":"IN-INPUT","nested":["DEEP",3]}');
    expect(JSON.stringify(body)).toContain('"data":"AAAA"');
    expect(JSON.stringify(body)).toContain('"description":"not personal"');
  });

  it('finds thinking text and plain-text documents, and leaves images, PDFs and redacted thinking alone', () => {
    const pdf = 'JVBERi0xLjQKMDc3MDA5MDAxMjMgMDc3MDA5MDAxMjM=';
    const body: JsonObject = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: '07700900123AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/07700900123.png' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
            { type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain doc' } },
            { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'content doc' }] } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'redacted_thinking', data: 'EmwKAhgB' },
            { type: 'thinking', thinking: 'thought', signature: 'sig' },
          ],
        },
      ],
    };
    const before = JSON.stringify(body);
    const slots = callerTexts(body);
    expect(slots.map((found) => found.text)).toEqual(['plain doc', 'content doc', 'thought']);
    for (const found of slots) found.replace(found.text.toUpperCase());
    const after = JSON.stringify(body);
    expect(after).toBe(
      before.replace('plain doc', 'PLAIN DOC').replace('content doc', 'CONTENT DOC').replace('thought', 'THOUGHT'),
    );
  });

  it('handles a string system and missing messages', () => {
    const body: JsonObject = { system: 'only' };
    expect(callerTexts(body).map((found) => found.text)).toEqual(['only']);
  });
});
