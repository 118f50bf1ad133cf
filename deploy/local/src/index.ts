export * from './layout';
export * from './env-file';
export * from './processes';
export * from './stack';
export * from './seed';
export * from './grpc-tls';
export * from './trace-viewer';
