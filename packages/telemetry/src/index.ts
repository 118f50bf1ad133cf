export * from './logger';
export * from './metrics';
export * from './lifecycle';
export * from './config-reload';
