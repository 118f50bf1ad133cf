export * from './definition';
export * from './error-detail';
export * from './request-id';
export * from './types';
export * from './server';
export * from './client';
export * from './multiplexed-client';
export * from './health';
