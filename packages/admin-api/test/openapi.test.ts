import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020';
import { openApiDocument } from '../src/openapi';
import { adminApi, apiKey } from '../src';

const checkedIn = join(__dirname, '../../../docs/admin-api.openapi.json');

/** Every object schema in the document, with where it is. */
function* objectSchemas(node: unknown, at: string): Generator<[string, Record<string, unknown>]> {
  if (Array.isArray(node)) {
    for (const [index, item] of node.entries()) yield* objectSchemas(item, `${at}/${index}`);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const record = node as Record<string, unknown>;
  const types = Array.isArray(record.type) ? record.type : [record.type];
  if (types.includes('object')) yield [at, record];
  for (const [name, value] of Object.entries(record)) yield* objectSchemas(value, `${at}/${name}`);
}

describe('the OpenAPI document of the admin API', () => {
  const document = openApiDocument();

  it('is a valid OpenAPI 3.1 document', async () => {
    // Checks the document against the OpenAPI 3.1 schema, then the rules it cannot express (unique ids, …).
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();
    expect(document.openapi).toBe('3.1.0');
    // The OpenAPI schema leaves the JSON Schemas inside unchecked: each compiles under JSON Schema 2020-12, strictly.
    const ajv = new Ajv2020({ strict: true, validateFormats: false });
    const schemas = JSON.parse(
      JSON.stringify(document.components.schemas).replaceAll('#/components/schemas/', 'document#/$defs/'),
    ) as Record<string, object>;
    ajv.addSchema({ $id: 'document', $defs: schemas });
    for (const id of Object.keys(schemas)) {
      expect(() => ajv.compile({ $ref: `document#/$defs/${id}` })).not.toThrow();
    }
    expect(() => ajv.compile({ type: 'objectx' })).toThrow();
  });

  it('has an operation for each route of the table, with its answer and its errors', () => {
    const operations = Object.values(document.paths).flatMap((path) => Object.values(path)) as {
      operationId: string;
      responses: Record<string, unknown>;
    }[];
    expect(operations.map((operation) => operation.operationId).sort()).toEqual(Object.keys(adminApi).sort());
    for (const operation of operations) {
      const route = adminApi[operation.operationId as keyof typeof adminApi];
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining([String(route.status), '401', '500']));
    }
  });

  it('has no free-form object: each names its properties and allows no others, or is a map of one typed value', () => {
    const loose = [...objectSchemas(document, '#')].filter(
      ([, schema]) =>
        !(schema.additionalProperties === false && typeof schema.properties === 'object') &&
        !(typeof schema.additionalProperties === 'object' && typeof schema.propertyNames === 'object'),
    );
    expect(loose.map(([at]) => at)).toEqual([]);
    // Untyped values (`{}`, `true`) would be free-form too.
    expect(JSON.stringify(document)).not.toMatch(/:\{\}|"additionalProperties":true/);
  });

  it('is the copy checked into docs/ (regenerate with: node packages/admin-api/dist/write-openapi.js)', () => {
    expect(JSON.parse(readFileSync(checkedIn, 'utf8'))).toEqual(document);
  });

  it('refuses an answer with a field more, a field less or a field of another type', () => {
    const key = {
      id: 'key_1',
      account_id: 'acct_1',
      name: 'ci',
      environment: 'live',
      display_prefix: 'gw_live_a1B2',
      residency: 'eu',
      privacy_mode: 'off',
      allowed_models: null,
      allowed_ips: null,
      expires_at: null,
      status: 'active',
      created_at: '2026-11-28T10:00:00.000Z',
      last_used_at: null,
      revoked_at: null,
      replaces_key_id: null,
    };
    expect(apiKey.safeParse(key).success).toBe(true);
    expect(apiKey.safeParse({ ...key, key: 'gw_live_secret' }).success).toBe(false);
    const { name: _name, ...withoutName } = key;
    expect(apiKey.safeParse(withoutName).success).toBe(false);
    expect(apiKey.safeParse({ ...key, residency: 'us' }).success).toBe(false);
  });
});
