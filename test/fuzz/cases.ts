import fc from 'fast-check';
import type { Arbitrary, JsonValue } from 'fast-check';
import { errorTypes } from '@gw/errors';
import type { ErrorType } from '@gw/errors';

/**
 * The fuzz's requests as small values that fast-check can print and shrink. Credentials and ids are
 * named, never held: the values are looked up when a request is written, so no key reaches a report;
 * long text is a count of repetitions of the run's marker, so a report stays short and the logs can be
 * searched for it.
 */
export type CredentialName =
  'test-off' | 'test-redact' | 'test-tokenise' | 'test-flag' | 'test-uk' | 'revoked' | 'operator' | 'victim-admin';

/** Keys of the public API that verify (test keys of the fuzz's own account). */
export const publicKeys = ['test-off', 'test-redact', 'test-tokenise', 'test-flag', 'test-uk'] as const;
type PublicKey = (typeof publicKeys)[number];

/** Ids the fuzz's admin requests may name. */
export type IdName = 'victim-account' | 'victim-key';

/** A piece of a request line or header value. */
export type Piece =
  | string
  /** A credential, or with cutTo its first cutTo characters, always at least one fewer than it has. */
  | { credential: CredentialName; cutTo?: number }
  | { marker: number }
  | { id: IdName }
  /** Raw bytes, for values that are not UTF-8. */
  | { bytes: number[] };

/** A JSON document built from parts that need not make valid JSON (duplicate keys, raw text). */
export type JsonNode =
  | { value: JsonValue }
  /** A string of `units` repetitions of the marker between two short texts. */
  | { marker: number; before: string; after: string }
  | { id: IdName }
  | { array: JsonNode[] }
  | { fields: [string, JsonNode][] }
  | { nest: number; open: '[' | '{'; inner: JsonNode }
  | { raw: string };

export interface BodySpec {
  json: JsonNode;
  /** Keep only this fraction of the rendered text (a strict prefix of an object is never valid JSON). */
  truncate?: number;
  /** Raw bytes after the document. */
  trailer?: Piece[];
}

/** What the gateway must answer, beyond the rules every answer follows. */
export type Expectation =
  | { kind: 'any' }
  /** A 200 with the answer the endpoint gives. */
  | { kind: 'success' }
  /** Exactly this error type (the stub's `gw-test:error:<type>`). */
  | { kind: 'error'; type: ErrorType }
  /** Never a 2xx: no valid credential, or no valid body. */
  | { kind: 'refused'; why: string };

export interface FuzzCase {
  /** What kind of case this is, for a report. */
  label: string;
  port: 'public' | 'admin';
  method: string;
  target: Piece[];
  version: string;
  headers: [string, Piece[]][];
  body?: BodySpec;
  chunked: boolean;
  expect: Expectation;
}

export interface RenderContext {
  credentials: Record<CredentialName, string>;
  ids: Record<IdName, string>;
  marker: string;
}

/** A cut credential is never whole, whatever the credential's length: a cut to its length or more drops its last character. */
function credentialText(credential: string, cutTo: number | undefined): string {
  return cutTo === undefined ? credential : credential.slice(0, Math.min(cutTo, credential.length - 1));
}

function renderPiece(piece: Piece, context: RenderContext): Buffer {
  if (typeof piece === 'string') return Buffer.from(piece, 'utf8');
  if ('credential' in piece) return Buffer.from(credentialText(context.credentials[piece.credential], piece.cutTo));
  if ('marker' in piece) return Buffer.from(context.marker.repeat(piece.marker), 'utf8');
  if ('id' in piece) return Buffer.from(context.ids[piece.id], 'utf8');
  return Buffer.from(piece.bytes);
}

export const renderPieces = (pieces: Piece[], context: RenderContext): Buffer =>
  Buffer.concat(pieces.map((piece) => renderPiece(piece, context)));

export function renderJson(node: JsonNode, context: RenderContext): string {
  if ('value' in node) return JSON.stringify(node.value);
  if ('marker' in node) return JSON.stringify(`${node.before}${context.marker.repeat(node.marker)}${node.after}`);
  if ('id' in node) return JSON.stringify(context.ids[node.id]);
  if ('array' in node) return `[${node.array.map((item) => renderJson(item, context)).join(',')}]`;
  if ('fields' in node) {
    return `{${node.fields.map(([name, value]) => `${JSON.stringify(name)}:${renderJson(value, context)}`).join(',')}}`;
  }
  if ('nest' in node) {
    const [open, close] = node.open === '[' ? ['[', ']'] : ['{"n":', '}'];
    return `${open.repeat(node.nest)}${renderJson(node.inner, context)}${close.repeat(node.nest)}`;
  }
  return node.raw;
}

function renderBody(body: BodySpec, context: RenderContext): Buffer {
  let text = renderJson(body.json, context);
  if (body.truncate !== undefined) text = text.slice(0, Math.floor(text.length * body.truncate));
  return Buffer.concat([Buffer.from(text, 'utf8'), renderPieces(body.trailer ?? [], context)]);
}

const crlf = Buffer.from('\r\n');

/** The bytes of a case: request line, headers, framing and body. */
export function renderRequest(fuzzCase: FuzzCase, context: RenderContext): Buffer {
  const body = fuzzCase.body && renderBody(fuzzCase.body, context);
  const parts: Buffer[] = [
    Buffer.from(`${fuzzCase.method} `),
    renderPieces(fuzzCase.target, context),
    Buffer.from(` ${fuzzCase.version}\r\n`),
  ];
  for (const [name, value] of fuzzCase.headers)
    parts.push(Buffer.from(`${name}: `), renderPieces(value, context), crlf);
  if (body && fuzzCase.chunked) {
    const half = Math.floor(body.length / 2);
    const chunks = [body.subarray(0, half), body.subarray(half)].filter((chunk) => chunk.length > 0);
    parts.push(Buffer.from('transfer-encoding: chunked\r\n\r\n'));
    for (const chunk of chunks) parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, crlf);
    parts.push(Buffer.from('0\r\n\r\n'));
  } else if (body) {
    parts.push(Buffer.from(`content-length: ${body.length}\r\n\r\n`), body);
  } else {
    parts.push(crlf);
  }
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------
// Text

const value = (item: JsonValue): JsonNode => ({ value: item });
const fields = (entries: [string, JsonNode][]): JsonNode => ({ fields: entries });

/** Short text that is awkward somewhere: control characters, lone surrogates, bidi marks, quotes. */
const oddText: Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 24 }),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.lorem({ maxCount: 6 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\u001b[31m',
    '\u202e',
    '\ufeff',
    '\ud800',
    '\udfff',
    '😀',
    'e\u0301',
    '\r\n',
    '"',
    '\\',
    '</script>',
    '%00',
    '${x}',
    '{{x}}',
    '\u2028',
    'null',
    'ｇｗ',
  ),
);

/**
 * Odd text for a header value. A line break there would end the header (or the head) early and turn the
 * case into a different request followed by garbage, which is not what a header case is about.
 */
const oddHeaderText: Arbitrary<string> = oddText.map((text) => text.replace(/[\r\n]/g, ''));

/** Caller text long enough that a service must cut it wherever it repeats it. */
const longMarker = (minUnits: number, maxUnits: number): Arbitrary<JsonNode> =>
  fc.record({
    marker: fc.integer({ min: minUnits, max: maxUnits }),
    before: fc.constantFrom('', ' ', 'é', '😀', '\u0000'),
    after: fc.constantFrom('', ' ', 'é', '😀'),
  });

/** Numbers as JSON text, including ones JavaScript cannot hold exactly. */
const numberText: Arbitrary<JsonNode> = fc
  .constantFrom('1e309', '-1e309', '-0', '1.5', '9007199254740993', '-1', '0', '1e-400', '2147483648', '1E2', '0.0')
  .map((raw) => ({ raw }));

const deep: Arbitrary<JsonNode> = fc.record({
  nest: fc.oneof(fc.integer({ min: 100, max: 140 }), fc.integer({ min: 1_000, max: 20_000 })),
  open: fc.constantFrom('[' as const, '{' as const),
  inner: fc.oneof(
    fc.constant(value(1)),
    longMarker(1, 40),
    fc.string().map((text) => value(text)),
  ),
});

/** A value of any shape for a field that expects something else. */
const wrongValue: Arbitrary<JsonNode> = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 2 }).map(value), weight: 5 },
  { arbitrary: oddText.map(value), weight: 3 },
  { arbitrary: numberText, weight: 2 },
  { arbitrary: longMarker(30, 3_000), weight: 2 },
  { arbitrary: deep, weight: 1 },
  { arbitrary: longMarker(20_000, 120_000), weight: 1 },
);

// ---------------------------------------------------------------------------------------------
// Bodies of /v1/messages and /v1/messages/count_tokens

const modelsByResidency = {
  eu: ['claude-sonnet-5', 'claude-haiku-4-5', 'llama-4-maverick'],
  uk: ['claude-sonnet-5', 'claude-opus-5'],
};

const textNode: Arbitrary<JsonNode> = oddText.map(value);
const contentNode: Arbitrary<JsonNode> = fc.oneof(
  textNode,
  fc
    .array(
      textNode.map((text) =>
        fields([
          ['type', value('text')],
          ['text', text],
        ]),
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((blocks) => ({ array: blocks })),
);

const message = (role: 'user' | 'assistant', content: JsonNode): JsonNode =>
  fields([
    ['role', value(role)],
    ['content', content],
  ]);

/** Earlier turns (user, assistant) and a last user message with the given content. */
const conversation = (last: Arbitrary<JsonNode>): Arbitrary<JsonNode> =>
  fc.tuple(fc.array(fc.tuple(contentNode, contentNode), { maxLength: 2 }), last).map(([turns, lastContent]) => ({
    array: [
      ...turns.flatMap(([user, assistant]) => [message('user', user), message('assistant', assistant)]),
      message('user', lastContent),
    ],
  }));

type Endpoint = 'messages' | 'count_tokens';

/** The fields of a body the gateway must take, for a key of this residency. */
function validFields(endpoint: Endpoint, key: PublicKey, last: Arbitrary<JsonNode>): Arbitrary<[string, JsonNode][]> {
  const models = modelsByResidency[key === 'test-uk' ? 'uk' : 'eu'];
  const optional: [string, Arbitrary<JsonNode>][] = [['system', textNode]];
  if (endpoint === 'messages') {
    optional.push(
      ['stream', fc.boolean().map(value)],
      ['temperature', fc.double({ min: 0, max: 1, noNaN: true }).map(value)],
      ['top_p', fc.double({ min: 0, max: 1, noNaN: true }).map(value)],
      ['top_k', fc.nat(500).map(value)],
      ['stop_sequences', fc.array(oddText, { maxLength: 3 }).map(value)],
      ['metadata', fc.option(oddText, { nil: null }).map((userId) => fields([['user_id', value(userId)]]))],
    );
  }
  return fc
    .tuple(fc.constantFrom(...models), fc.integer({ min: 1, max: 64 }), conversation(last), fc.subarray(optional))
    .chain(([model, maxTokens, messages, chosen]) =>
      fc
        .tuple(...chosen.map(([, arbitrary]) => arbitrary))
        .map((values) => [
          ['model', value(model)] as [string, JsonNode],
          ...(endpoint === 'messages' ? [['max_tokens', value(maxTokens)] as [string, JsonNode]] : []),
          ['messages', messages] as [string, JsonNode],
          ...chosen.map(([name], index) => [name, values[index]!] as [string, JsonNode]),
        ]),
    );
}

type Mutation =
  | { drop: number }
  | { replace: number; node: JsonNode }
  | { add: string; node: JsonNode }
  | { repeat: number; node: JsonNode };

const mutation: Arbitrary<Mutation> = fc.oneof(
  fc.record({ drop: fc.nat() }),
  fc.record({ replace: fc.nat(), node: wrongValue }),
  fc.record({
    add: fc.oneof(oddText, fc.constantFrom('__proto__', 'constructor', 'prototype', 'model ', 'MODEL')),
    node: wrongValue,
  }),
  fc.record({ repeat: fc.nat(), node: wrongValue }),
);

function mutate(entries: [string, JsonNode][], mutations: Mutation[]): [string, JsonNode][] {
  const result = [...entries];
  for (const change of mutations) {
    if ('add' in change) result.push([change.add, change.node]);
    else if (result.length === 0) continue;
    else if ('drop' in change) result.splice(change.drop % result.length, 1);
    else if ('replace' in change)
      result[change.replace % result.length] = [result[change.replace % result.length]![0], change.node];
    else result.push([result[change.repeat % result.length]![0], change.node]);
  }
  return result;
}

/** Content whose last user message is the stub's instruction to fail with this type. */
const magicError = (type: ErrorType): Arbitrary<JsonNode> =>
  fc
    .constantFrom(
      value(`gw-test:error:${type}`),
      fields([
        ['type', value('text')],
        ['text', value(`gw-test:error:${type}`)],
      ]),
    )
    .map((block) => ('fields' in block ? { array: [block] } : block));

const jsonHeaders = (key: CredentialName): [string, Piece[]][] => [
  ['host', ['gateway']],
  ['x-api-key', [{ credential: key }]],
  ['content-type', ['application/json']],
];

/** Bodies of the two POST endpoints: valid, the stub's errors, mutated, not an object, not JSON. */
export function bodyCases(): Arbitrary<FuzzCase> {
  const endpoint = fc.constantFrom<Endpoint>('messages', 'count_tokens');
  const key = fc.constantFrom(...publicKeys);
  const post = (
    which: Endpoint,
    credential: PublicKey,
    label: string,
    body: BodySpec,
    expect: Expectation,
  ): FuzzCase => ({
    label,
    port: 'public',
    method: 'POST',
    target: [which === 'messages' ? '/v1/messages' : '/v1/messages/count_tokens'],
    version: 'HTTP/1.1',
    headers: jsonHeaders(credential),
    body,
    chunked: false,
    expect,
  });
  const valid = fc
    .tuple(endpoint, key)
    .chain(([which, credential]) =>
      validFields(which, credential, contentNode).map((entries) =>
        post(which, credential, `valid ${which} body`, { json: fields(entries) }, { kind: 'success' }),
      ),
    );
  const large = fc
    .tuple(endpoint, key)
    .chain(([which, credential]) =>
      validFields(which, credential, longMarker(5_000, 100_000)).map((entries) =>
        post(which, credential, `valid ${which} body with large text`, { json: fields(entries) }, { kind: 'success' }),
      ),
    );
  const stubError = fc
    .tuple(key, fc.constantFrom(...errorTypes))
    .chain(([credential, type]) =>
      validFields('messages', credential, magicError(type)).map((entries) =>
        post('messages', credential, `gw-test:error:${type}`, { json: fields(entries) }, { kind: 'error', type }),
      ),
    );
  const mutated = fc
    .tuple(endpoint, key)
    .chain(([which, credential]) =>
      fc
        .tuple(validFields(which, credential, contentNode), fc.array(mutation, { minLength: 1, maxLength: 3 }))
        .map(([entries, mutations]) =>
          post(
            which,
            credential,
            `mutated ${which} body`,
            { json: fields(mutate(entries, mutations)) },
            { kind: 'any' },
          ),
        ),
    );
  const notAnObject = fc
    .tuple(
      endpoint,
      key,
      fc.oneof(
        fc
          .jsonValue({ maxDepth: 2 })
          .filter((item) => typeof item !== 'object' || item === null || Array.isArray(item))
          .map(value),
        deep.filter((node) => 'nest' in node && node.open === '['),
        longMarker(10, 50_000),
        fc.constant<JsonNode>({ raw: '' }),
      ),
    )
    .map(([which, credential, json]) =>
      post(
        which,
        credential,
        `${which} body that is not an object`,
        { json },
        { kind: 'refused', why: 'not an object' },
      ),
    );
  const notJson = fc
    .tuple(endpoint, key)
    .chain(([which, credential]) =>
      fc
        .tuple(validFields(which, credential, contentNode), fc.double({ min: 0, max: 0.99, noNaN: true }))
        .map(([entries, truncate]) =>
          post(
            which,
            credential,
            `truncated ${which} body`,
            { json: fields(entries), truncate },
            { kind: 'refused', why: 'not JSON' },
          ),
        ),
    );
  const trailing = fc.tuple(endpoint, key).chain(([which, credential]) =>
    fc
      .tuple(
        validFields(which, credential, contentNode),
        fc.oneof(
          fc.constantFrom<Piece[]>(['x'], [']'], ['}'], [{ bytes: [0xff, 0xfe] }], [{ bytes: [0] }], [','], ['{}']),
          fc.uint8Array({ minLength: 1, maxLength: 16 }).map((bytes): Piece[] => [{ bytes: [...bytes] }]),
        ),
      )
      .map(([entries, trailer]) =>
        post(
          which,
          credential,
          `${which} body with bytes after it`,
          { json: fields(entries), trailer },
          { kind: 'any' },
        ),
      ),
  );
  return fc.oneof(
    { arbitrary: valid, weight: 4 },
    { arbitrary: large, weight: 1 },
    { arbitrary: stubError, weight: 2 },
    { arbitrary: mutated, weight: 8 },
    { arbitrary: notAnObject, weight: 2 },
    { arbitrary: notJson, weight: 2 },
    { arbitrary: trailing, weight: 1 },
  );
}

// ---------------------------------------------------------------------------------------------
// Headers

interface CredentialHeader {
  name: string;
  scheme: string;
  credential: Piece;
  suffix: string;
}

/** One valid key in one of the forms the gateway reads. */
const validCredentialHeader: Arbitrary<CredentialHeader> = fc.oneof(
  fc.record({
    name: fc.constantFrom('authorization', 'Authorization', 'AUTHORIZATION'),
    scheme: fc.constantFrom('Bearer ', 'bearer ', 'BEARER ', 'Bearer  ', 'Bearer\t'),
    credential: fc.constantFrom<CredentialName>(...publicKeys).map((name): Piece => ({ credential: name })),
    suffix: fc.constantFrom('', ' ', '\t'),
  }),
  fc.record({
    name: fc.constantFrom('x-api-key', 'X-Api-Key', 'X-API-KEY'),
    scheme: fc.constant(''),
    credential: fc.constantFrom<CredentialName>(...publicKeys).map((name): Piece => ({ credential: name })),
    suffix: fc.constantFrom('', ' '),
  }),
);

const credentialHeader: Arbitrary<CredentialHeader> = fc.record({
  name: fc.constantFrom(
    'authorization',
    'Authorization',
    'AUTHORIZATION',
    'x-api-key',
    'X-Api-Key',
    'api-key',
    'proxy-authorization',
  ),
  scheme: fc.constantFrom('Bearer ', 'bearer ', 'BEARER ', 'Bearer  ', 'Bearer\t', 'Basic ', 'Token ', '', 'Bearer:'),
  credential: fc.oneof(
    {
      arbitrary: fc
        .constantFrom<CredentialName>(...publicKeys, 'revoked', 'operator', 'victim-admin')
        .map((name) => ({ credential: name })),
      weight: 6,
    },
    {
      arbitrary: fc.record({
        credential: fc.constantFrom<CredentialName>(...publicKeys),
        cutTo: fc.integer({ min: 0, max: 40 }),
      }),
      weight: 2,
    },
    {
      arbitrary: fc.constantFrom<Piece>(
        'gw_test_',
        'gw_live_00000000000000000000000000000000',
        'gw_admin_x',
        'null',
        '',
      ),
      weight: 1,
    },
    { arbitrary: fc.integer({ min: 1, max: 1_400 }).map((units): Piece => ({ marker: units })), weight: 1 },
    { arbitrary: oddHeaderText, weight: 1 },
  ),
  suffix: fc.constantFrom('', '', '', ' ', 'x', 'é', ',', '\t'),
});

/** Whether the header presents one of the fuzz's valid public keys whole, in a form the gateway reads. */
function presentsValidKey(header: CredentialHeader): boolean {
  const { credential } = header;
  if (typeof credential !== 'object' || !('credential' in credential) || credential.cutTo !== undefined) return false;
  if (!(publicKeys as readonly string[]).includes(credential.credential)) return false;
  if (header.suffix.trim() !== '') return false;
  const name = header.name.toLowerCase();
  if (name === 'authorization') return /^bearer\s+$/i.test(header.scheme);
  return name === 'x-api-key' && header.scheme === '';
}

const contentTypes: Arbitrary<string> = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  '',
  'application/jsonx',
  '*/*',
);

const extraHeaderName = fc.oneof(
  fc.constantFrom(
    'x-forwarded-for',
    'anthropic-version',
    'anthropic-beta',
    'content-encoding',
    'expect',
    'connection',
    'te',
    'user-agent',
    'x-request-id',
    'request-id',
    'traceparent',
    'cookie',
    'range',
    'upgrade',
    'x-http-method-override',
    'forwarded',
    'transfer-encoding',
    'content-type',
  ),
  fc.stringMatching(/^[a-z][a-z0-9-]{0,24}$/),
);

const extraHeaderValue: Arbitrary<Piece[]> = fc.oneof(
  { arbitrary: fc.stringMatching(/^[ -~]{0,40}$/).map((text): Piece[] => [text]), weight: 4 },
  {
    arbitrary: fc
      .constantFrom(
        'gzip',
        'deflate',
        'br',
        '100-continue',
        'something-else',
        'close',
        'keep-alive',
        'upgrade',
        'websocket',
        'chunked',
        'identity',
        '127.0.0.1, 10.0.0.1',
        '999.1.1.1',
        '2023-06-01',
        'bytes=0-1',
        'POST',
      )
      .map((text): Piece[] => [text]),
    weight: 4,
  },
  { arbitrary: oddHeaderText.map((text): Piece[] => [text]), weight: 2 },
  {
    arbitrary: fc
      .uint8Array({ minLength: 1, maxLength: 12 })
      .map((bytes): Piece[] => [{ bytes: [...bytes].filter((byte) => byte !== 0x0a && byte !== 0x0d) }]),
    weight: 1,
  },
  { arbitrary: fc.integer({ min: 10, max: 1_700 }).map((units): Piece[] => [{ marker: units }]), weight: 1 },
);

const requestTargets = [
  { method: 'POST', path: '/v1/messages', body: 'messages' as const },
  { method: 'POST', path: '/v1/messages/count_tokens', body: 'count_tokens' as const },
  { method: 'GET', path: '/v1/models' },
  { method: 'GET', path: '/v1/usage' },
];

/** The documented requests with credentials, content types and other headers in every form. */
export function headerCases(): Arbitrary<FuzzCase> {
  return fc
    .record({
      target: fc.constantFrom(...requestTargets),
      host: fc.oneof(
        { arbitrary: fc.constant<Piece[][]>([['gateway']]), weight: 10 },
        { arbitrary: fc.constantFrom<Piece[][]>([], [['a'], ['b']], [['']], [['127.0.0.1:1']]), weight: 1 },
      ),
      credentials: fc.oneof(
        fc.tuple(validCredentialHeader),
        fc.array(fc.oneof(credentialHeader, validCredentialHeader), { maxLength: 3 }),
      ),
      contentType: fc.oneof(
        { arbitrary: fc.constant<string[]>(['application/json']), weight: 3 },
        { arbitrary: fc.array(contentTypes, { maxLength: 2 }), weight: 2 },
      ),
      extra: fc.array(fc.tuple(extraHeaderName, extraHeaderValue), { maxLength: 4 }),
      version: fc.oneof(
        { arbitrary: fc.constant('HTTP/1.1'), weight: 12 },
        { arbitrary: fc.constant('HTTP/1.0'), weight: 2 },
        { arbitrary: fc.constantFrom('HTTP/1.2', 'HTTP/2.0', 'http/1.1', 'HTTP/1.1 ', 'HTTP/0.9'), weight: 1 },
      ),
      chunked: fc.boolean(),
    })
    .chain((shape) =>
      (shape.target.body ? validFields(shape.target.body, 'test-off', contentNode) : fc.constant(undefined)).map(
        (entries): FuzzCase => {
          const valid = shape.credentials.some(presentsValidKey);
          return {
            label: `headers of ${shape.target.method} ${shape.target.path}`,
            port: 'public',
            method: shape.target.method,
            target: [shape.target.path],
            version: shape.version,
            headers: [
              ...shape.host.map((value): [string, Piece[]] => ['host', value]),
              ...shape.credentials.map((header): [string, Piece[]] => [
                header.name,
                [header.scheme, header.credential, header.suffix],
              ]),
              ...shape.contentType.map((type): [string, Piece[]] => ['content-type', [type]]),
              ...shape.extra,
            ],
            body: entries && { json: fields(entries) },
            chunked: shape.chunked && entries !== undefined,
            expect: valid ? { kind: 'any' } : { kind: 'refused', why: 'no valid key presented' },
          };
        },
      ),
    );
}

// ---------------------------------------------------------------------------------------------
// Paths

const publicPaths = [
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/v1/models',
  '/v1/models/claude-sonnet-5',
  '/v1/usage',
  '/healthz',
  '/admin/v1/accounts',
  '/',
  '/v1',
  '/metrics',
];

const pathNoise = fc.constantFrom(
  '%',
  '%z',
  '%zz',
  '%ff',
  '%c0%af',
  '%00',
  '%2e%2e',
  '%2E',
  '%2F',
  '%5C',
  '%e0%a4',
  '%ed%a0%80',
  '/..',
  '/.',
  '/../',
  '/./',
  '//',
  '\\',
  ';',
  ';a=b',
  '%20',
  '+',
  '*',
  '@',
);

type PathChange =
  | { insert: string; at: number }
  | { encodeAt: number; upper: boolean }
  | { append: Piece }
  | { upperCase: true }
  | { query: string }
  | { absolute: true };

/** Percent-encodes text byte by byte, as a client would. */
const percentEncoded = (text: string) =>
  [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

const pathChange: Arbitrary<PathChange> = fc.oneof(
  fc.record({ insert: pathNoise, at: fc.nat() }),
  fc.record({ encodeAt: fc.nat(), upper: fc.boolean() }),
  fc.record({
    append: fc.oneof(
      oddText.map((text): Piece => `/${percentEncoded(text)}`),
      oddText.map((text): Piece => `/${text.replace(/[\s\p{Cc}]/gu, '')}`),
      fc.integer({ min: 10, max: 1_200 }).map((units): Piece => ({ marker: units })),
    ),
  }),
  fc.constant({ upperCase: true as const }),
  fc.record({
    query: fc.oneof(
      fc.constantFrom(
        '?limit=abc',
        '?limit=-1&limit=2',
        '?after_id[]=x',
        '?a=%ff',
        '?',
        '#x',
        '?limit=99999999999999999999',
        '?before_id=' + 'b'.repeat(300),
      ),
      fc.webQueryParameters().map((query) => `?${query}`),
    ),
  }),
  fc.constant({ absolute: true as const }),
);

function changePath(path: string, changes: PathChange[]): Piece[] {
  let text = path;
  const appended: Piece[] = [];
  let suffix = '';
  let absolute = false;
  for (const change of changes) {
    if ('insert' in change) {
      const at = change.at % (text.length + 1);
      text = `${text.slice(0, at)}${change.insert}${text.slice(at)}`;
    } else if ('encodeAt' in change) {
      const at = change.encodeAt % text.length;
      const code = text.charCodeAt(at).toString(16).padStart(2, '0');
      text = `${text.slice(0, at)}%${change.upper ? code.toUpperCase() : code}${text.slice(at + 1)}`;
    } else if ('append' in change) appended.push(change.append);
    else if ('upperCase' in change) text = text.toUpperCase();
    else if ('query' in change) suffix = change.query;
    else absolute = true;
  }
  return [absolute ? `http://gateway${text}` : text, ...appended, suffix];
}

/** The public port's routes and their neighbours: encodings, dot segments, case, length, odd text. */
export function pathCases(): Arbitrary<FuzzCase> {
  return fc
    .record({
      method: fc.constantFrom(
        'GET',
        'POST',
        'PUT',
        'DELETE',
        'PATCH',
        'OPTIONS',
        'HEAD',
        'TRACE',
        'PROPFIND',
        'get',
        'BREW',
      ),
      path: fc.constantFrom(...publicPaths),
      changes: fc.array(pathChange, { maxLength: 3 }),
      key: fc.constantFrom<CredentialName | undefined>('test-off', 'test-uk', undefined),
    })
    .chain((shape) =>
      validFields('messages', 'test-off', contentNode).map((entries): FuzzCase => ({
        label: `${shape.method} on a fuzzed public path`,
        port: 'public',
        method: shape.method,
        target: changePath(shape.path, shape.changes),
        version: 'HTTP/1.1',
        headers: [
          ['host', ['gateway']],
          ...(shape.key ? [['x-api-key', [{ credential: shape.key }]] as [string, Piece[]]] : []),
          ['content-type', ['application/json']],
        ],
        body: ['POST', 'PUT', 'PATCH'].includes(shape.method) ? { json: fields(entries) } : undefined,
        chunked: false,
        expect: { kind: 'any' },
      })),
    );
}

// ---------------------------------------------------------------------------------------------
// The admin API

/** Mostly what the admin API takes, so that requests reach the auth service's own checks; else anything. */
const mostly = (valid: Arbitrary<JsonNode>, odd: Arbitrary<JsonNode>): Arbitrary<JsonNode> =>
  fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: odd, weight: 1 });

const nameNode: Arbitrary<JsonNode> = mostly(
  fc
    .lorem({ maxCount: 3 })
    .filter((text) => text.trim() !== '')
    .map(value),
  fc.oneof(
    { arbitrary: oddText.map(value), weight: 4 },
    { arbitrary: fc.integer({ min: 195, max: 205 }).map((length) => value('n'.repeat(length))), weight: 1 },
    { arbitrary: longMarker(20, 150_000), weight: 1 },
    { arbitrary: wrongValue, weight: 1 },
  ),
);

/** Addresses and ranges as the admin API takes them: canonical, a range named by its network address. */
const canonicalIpEntry: Arbitrary<JsonNode> = fc.oneof(
  fc.ipV4().map(value),
  fc.ipV6().map(value),
  fc.tuple(fc.nat(255), fc.nat(255)).map(([first, second]) => value(`${first}.${second}.0.0/16`)),
  fc.constantFrom('10.0.0.0/8', '2001:db8::/32', '::ffff:192.0.2.7', '0.0.0.0/0', '::/0').map(value),
);

const ipEntry: Arbitrary<JsonNode> = mostly(
  canonicalIpEntry,
  fc.oneof(
    { arbitrary: fc.ipV4Extended().map(value), weight: 2 },
    {
      arbitrary: fc
        .tuple(fc.ipV4(), fc.integer({ min: -1, max: 40 }))
        .map(([address, bits]) => value(`${address}/${bits}`)),
      weight: 2,
    },
    {
      arbitrary: fc
        .constantFrom(
          '010.0.0.1',
          '0x7f.0.0.1',
          '127.1',
          '3221225991',
          'fe80::1%eth0',
          '10.0.0.1/8',
          '1.2.3.4/33',
          '',
          ' 1.2.3.4',
          '1.2.3.4 ',
          '[::1]',
          '::ffff:1.2.3.4/200',
        )
        .map(value),
      weight: 2,
    },
    { arbitrary: oddText.map(value), weight: 1 },
    { arbitrary: longMarker(10, 5_000), weight: 1 },
    { arbitrary: fc.jsonValue({ maxDepth: 1 }).map(value), weight: 1 },
  ),
);

/** A list of `count` copies: the refusal of the 1,001st entry, and the largest accepted list. */
const repeated = (node: JsonNode, counts: number[]): Arbitrary<JsonNode> =>
  fc.constantFrom(...counts).map((count) => ({ array: Array.from({ length: count }, () => node) }));

const listOf = (entry: Arbitrary<JsonNode>, bulk: JsonNode): Arbitrary<JsonNode> =>
  fc.oneof(
    { arbitrary: fc.array(entry, { maxLength: 5 }).map((items) => ({ array: items })), weight: 6 },
    { arbitrary: fc.constant(value(null)), weight: 2 },
    { arbitrary: repeated(bulk, [1_000, 1_001]), weight: 1 },
    { arbitrary: wrongValue, weight: 1 },
  );

const modelEntry: Arbitrary<JsonNode> = mostly(
  fc.constantFrom('claude-sonnet-5', 'claude-haiku-4-5', 'claude-opus-5', 'llama-4-maverick').map(value),
  fc.oneof(
    fc.constantFrom('gpt-5', '', 'CLAUDE-SONNET-5', 'claude-sonnet-5 ').map(value),
    fc.integer({ min: 255, max: 258 }).map((length) => value('m'.repeat(length))),
    oddText.map(value),
    longMarker(30, 5_000),
  ),
);

const expiresAt: Arbitrary<JsonNode> = mostly(
  fc.oneof(
    fc
      .date({ min: new Date('2030-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true })
      .map((date) => value(date.toISOString())),
    fc.constant(value(null)),
  ),
  fc.oneof(
    fc
      .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2020-01-01T00:00:00Z'), noInvalidDate: true })
      .map((date) => value(date.toISOString())),
    fc
      .constantFrom(
        '2030-02-31T00:00:00Z',
        '+275760-09-13T00:00:00Z',
        '+275760-09-13T00:00:00.001Z',
        '9999-12-31T23:59:59.999999999Z',
        '2030-01-01',
        '2030-01-01T00:00:00',
        '2030-01-01T00:00:00+25:00',
        '2030-01-01T00:00:00+01:00',
        '2030-13-01T00:00:00Z',
        '2030-01-01T24:00:00Z',
      )
      .map(value),
    wrongValue,
  ),
);

const limitValue: Arbitrary<JsonNode> = mostly(
  fc.oneof(fc.integer({ min: 1, max: 1_000_000 }).map(value), fc.constant(value(null))),
  fc.oneof(
    fc.constantFrom(0, -1, 1.5, 2_147_483_647, 2_147_483_648, Number.MAX_SAFE_INTEGER, true, '10').map(value),
    numberText,
  ),
);

const keyBody = fc
  .record({
    account_id: mostly(fc.constant<JsonNode>({ id: 'victim-account' }), fc.oneof(wrongValue, oddText.map(value))),
    name: nameNode,
    environment: mostly(fc.constantFrom('live', 'test').map(value), fc.constantFrom('LIVE', 'prod', '').map(value)),
    residency: mostly(fc.constantFrom('uk', 'eu').map(value), fc.constantFrom('us', 'EU', '').map(value)),
    privacy_mode: mostly(
      fc.constantFrom('off', 'flag', 'redact', 'tokenise').map(value),
      fc.oneof(fc.constantFrom('tokenize', 'none').map(value), wrongValue),
    ),
    allowed_models: listOf(modelEntry, value('claude-sonnet-5')),
    allowed_ips: listOf(ipEntry, value('10.0.0.0/8')),
    expires_at: expiresAt,
  })
  .map((record) => fields(Object.entries(record)));

const limitsBody = fc
  .subarray(['requests_per_minute', 'concurrency', 'monthly_tokens', 'hard_ceiling_tokens', 'overage'], {
    minLength: 1,
  })
  .chain((names) =>
    fc
      .tuple(...names.map((name) => (name === 'overage' ? mostly(fc.boolean().map(value), limitValue) : limitValue)))
      .map((values) => fields(names.map((name, index) => [name, values[index]!]))),
  );

/** Admin bodies: shaped like the documented ones, then changed by the same mutations as the public bodies. */
const adminBodies: { method: string; target: Piece[]; body: Arbitrary<JsonNode> }[] = [
  {
    method: 'POST',
    target: ['/admin/v1/accounts'],
    body: fc
      .record({
        name: nameNode,
        plan: mostly(
          fc.constantFrom('pro', 'starter').map(value),
          fc.oneof(fc.constantFrom('enterprise', '', 'PRO').map(value), wrongValue),
        ),
      })
      .map((record) => fields(Object.entries(record))),
  },
  { method: 'POST', target: ['/admin/v1/keys'], body: keyBody },
  { method: 'PATCH', target: ['/admin/v1/accounts/', { id: 'victim-account' }, '/limits'], body: limitsBody },
  {
    method: 'POST',
    target: ['/admin/v1/accounts/', { id: 'victim-account' }, '/admin-keys'],
    body: nameNode.map((name) => fields([['name', name]])),
  },
];

const bearer = (name: CredentialName): [string, Piece[]][] => [['authorization', ['Bearer ', { credential: name }]]];

const adminToken: Arbitrary<{ headers: [string, Piece[]][]; valid: boolean }> = fc.oneof(
  { arbitrary: fc.constant({ headers: bearer('operator'), valid: true }), weight: 6 },
  { arbitrary: fc.constant({ headers: bearer('victim-admin'), valid: true }), weight: 2 },
  {
    arbitrary: fc
      .constantFrom<[string, Piece[]][]>(
        [],
        [['authorization', ['Bearer ', { credential: 'operator', cutTo: 20 }]]],
        [['authorization', ['Basic ', { credential: 'operator' }]]],
        [['x-api-key', [{ credential: 'operator' }]]],
        bearer('test-off'),
        bearer('revoked'),
        [['authorization', ['Bearer ', { marker: 900 }]]],
      )
      .map((headers) => ({ headers, valid: false })),
    weight: 2,
  },
);

const adminIdPiece: Arbitrary<Piece[]> = fc.oneof(
  fc.constantFrom<Piece[]>(
    [{ id: 'victim-account' }],
    [{ id: 'victim-key' }],
    ['acct_00000000000000000000'],
    ['key_0'],
    ['..'],
    ['%2e%2e'],
    ['%00'],
    ['%ff'],
    ['%e0%a4'],
    ['a%2Fb'],
    [''],
  ),
  oddText.map((text): Piece[] => [percentEncoded(text)]),
  fc.integer({ min: 10, max: 1_200 }).map((units): Piece[] => [{ marker: units }]),
);

const adminPathShapes: ((id: Piece[]) => Piece[])[] = [
  (id) => ['/admin/v1/accounts/', ...id],
  (id) => ['/admin/v1/keys/', ...id],
  (id) => ['/admin/v1/keys?account_id=', ...id],
  (id) => ['/admin/v1/accounts/', ...id, '/suspend'],
  (id) => ['/admin/v1/accounts/', ...id, '/resume'],
  (id) => ['/admin/v1/keys/', ...id, '/revoke'],
  (id) => ['/admin/v1/keys/', ...id, '/rotate'],
  (id) => ['/admin/v1/accounts/', ...id, '/usage'],
  (id) => ['/admin/v1/accounts/', { id: 'victim-account' }, '/usage?environment=', ...id],
  (id) => ['/admin/v1/', ...id],
  (id) => ['/admin/', ...id],
];

/** The admin API: documented bodies in odd forms, and its paths with odd ids. */
export function adminCases(): Arbitrary<FuzzCase> {
  const withBody = fc
    .record({
      route: fc.constantFrom(...adminBodies),
      token: adminToken,
      mutations: fc.oneof(
        { arbitrary: fc.constant<Mutation[]>([]), weight: 3 },
        { arbitrary: fc.array(mutation, { minLength: 1, maxLength: 2 }), weight: 2 },
      ),
      contentType: fc.oneof(
        { arbitrary: fc.constant<Piece[][]>([['application/json']]), weight: 8 },
        {
          arbitrary: fc.constantFrom<Piece[][]>([['text/plain']], [['application/json; charset=latin1']], []),
          weight: 1,
        },
      ),
      encoding: fc.oneof(
        { arbitrary: fc.constant<Piece[][]>([]), weight: 8 },
        { arbitrary: fc.constantFrom<Piece[][]>([['gzip']], [['br']], [['compress']], [['identity']]), weight: 1 },
      ),
      truncate: fc.oneof(
        { arbitrary: fc.constant(undefined), weight: 12 },
        { arbitrary: fc.double({ min: 0, max: 0.99, noNaN: true }), weight: 1 },
      ),
    })
    .chain((shape) =>
      shape.route.body.map((body): FuzzCase => {
        const json = 'fields' in body ? fields(mutate(body.fields, shape.mutations)) : body;
        return {
          label: `admin ${shape.route.method} body`,
          port: 'admin',
          method: shape.route.method,
          target: shape.route.target,
          version: 'HTTP/1.1',
          headers: [
            ['host', ['gateway']],
            ...shape.token.headers,
            ...shape.contentType.map((type): [string, Piece[]] => ['content-type', type]),
            ...shape.encoding.map((encoding): [string, Piece[]] => ['content-encoding', encoding]),
          ],
          body: { json, truncate: shape.truncate },
          chunked: false,
          expect: shape.token.valid ? { kind: 'any' } : { kind: 'refused', why: 'no valid admin credential' },
        };
      }),
    );
  const paths = fc
    .record({
      method: fc.constantFrom('GET', 'GET', 'POST', 'DELETE', 'PUT', 'HEAD', 'OPTIONS'),
      shape: fc.constantFrom(...adminPathShapes),
      id: adminIdPiece,
      token: adminToken,
    })
    .map((shape): FuzzCase => ({
      label: `admin ${shape.method} on a fuzzed path`,
      port: 'admin',
      method: shape.method,
      target: shape.shape(shape.id),
      version: 'HTTP/1.1',
      headers: [['host', ['gateway']], ...shape.token.headers],
      chunked: false,
      expect: shape.token.valid ? { kind: 'any' } : { kind: 'refused', why: 'no valid admin credential' },
    }));
  return fc.oneof({ arbitrary: withBody, weight: 3 }, { arbitrary: paths, weight: 2 });
}
