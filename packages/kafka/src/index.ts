export * from './client';
export * from './topics';
export * from './usage-producer';
export * from './batch-consumer';
export * from './durable-publisher';
export * from './spool-lock';
