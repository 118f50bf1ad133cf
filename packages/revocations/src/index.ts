export * from './notice';
export * from './subscriber';
