import { join } from 'node:path';

export const migrationsDir = join(__dirname, '..', 'migrations');

/** Applies every pending migration with node-pg-migrate; safe to run again. */
export async function migrateUp(databaseUrl: string, log: (message: string) => void = () => undefined): Promise<void> {
  // node-pg-migrate is an ES module; a dynamic import loads it from this CommonJS package.
  const { runner } = await import('node-pg-migrate');
  await runner({
    databaseUrl,
    dir: migrationsDir,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    count: Infinity,
    log,
    noLock: false,
    checkOrder: true,
  });
}
