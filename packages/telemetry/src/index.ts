export * from './logger';
export * from './metrics';
export * from './lifecycle';
export * from './tracing';
export * from './config-reload';
