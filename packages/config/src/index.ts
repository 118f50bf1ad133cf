export * from './env';
export * from './gateway-config';
