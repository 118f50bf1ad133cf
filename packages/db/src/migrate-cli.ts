import { migrateUp } from './migrate';

// Used by `make up`, the tests and the Helm migration job: DATABASE_URL in, migrations applied.
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('invalid configuration: DATABASE_URL: expected a PostgreSQL URL (it is not set)\n');
  process.exit(2);
}
migrateUp(databaseUrl).then(
  () => process.stdout.write('migrations applied\n'),
  (error: unknown) => {
    process.stderr.write(`migration failed: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
