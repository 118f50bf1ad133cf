import { Pool } from 'pg';

export type { Pool, PoolClient } from 'pg';

/** A connection pool whose broken connections, idle or in use, are reported instead of crashing the process. */
export function createPool(connectionString: string, onError: (error: Error) => void, max = 10): Pool {
  const pool = new Pool({ connectionString, max, connectionTimeoutMillis: 5_000, idleTimeoutMillis: 30_000 });
  pool.on('error', onError);
  // The pool listens on idle clients only. A client checked out for a transaction whose connection the
  // server ends between two statements (a PostgreSQL restart) would emit an unhandled 'error' and end
  // the process; heard here, the statement in progress fails instead and its caller retries.
  pool.on('connect', (client) => client.on('error', onError));
  return pool;
}

/** Runs work in one transaction: committed when it resolves, rolled back when it throws. */
export async function inTransaction<T>(pool: Pool, work: (client: import('pg').PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
