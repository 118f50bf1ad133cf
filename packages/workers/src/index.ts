export * from './body-budget';
export * from './fair-scheduler';
export * from './large-input-work';
export * from './thread-pool';
// A thread's script imports '@gw/workers/thread' alone, so that it loads none of the pool's dependencies.
export type { ThreadMessage, TaskResult } from './thread';
