import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiDocument } from './openapi';

// Writes docs/admin-api.openapi.json from the route table; a unit test fails while the copy is stale.
writeFileSync(
  join(__dirname, '../../../docs/admin-api.openapi.json'),
  `${JSON.stringify(openApiDocument(), null, 2)}\n`,
);
