import { keyEnvironments, privacyModes, residencyTiers } from '@gw/vocabulary';
import { Client } from 'pg';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';

// The SQL checks on the stored words, read back from a freshly migrated database, against the lists the code
// uses (@gw/vocabulary): a word added to one but not the other fails here, not in production.

let database: TestDatabase;
let client: Client;

beforeAll(async () => {
  database = await createTestDatabase('vocabulary_checks');
  client = new Client({ connectionString: database.url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await database?.drop();
});

/** The words a column's CHECK (column IN (...)) admits, as PostgreSQL holds the constraint. */
async function wordsAllowed(table: string, column: string): Promise<string[]> {
  const result = await client.query<{ definition: string }>(
    `SELECT pg_get_constraintdef(c.oid) AS definition
       FROM pg_constraint c
       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
      WHERE c.contype = 'c' AND c.conrelid = $1::regclass AND a.attname = $2`,
    [table, column],
  );
  expect(result.rows).toHaveLength(1);
  // e.g. CHECK ((residency = ANY (ARRAY['uk'::text, 'eu'::text])))
  return [...result.rows[0]!.definition.matchAll(/'([^']*)'::text/g)].map((match) => match[1]!);
}

it.each([
  ['api_keys', 'residency', residencyTiers],
  ['api_keys', 'privacy_mode', privacyModes],
  ['api_keys', 'environment', keyEnvironments],
])('%s.%s admits exactly the vocabulary', async (table, column, words) => {
  expect((await wordsAllowed(table, column)).sort()).toEqual([...words].sort());
});
