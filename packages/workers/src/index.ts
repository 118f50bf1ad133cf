export * from './fair-scheduler';
export * from './thread';
export * from './thread-pool';
