export * from './env';
export * from './gateway-config';
export * from './grpc-transport';
export * from './gateway-config-watch';
export * from './residency';
export * from './kafka-security';
