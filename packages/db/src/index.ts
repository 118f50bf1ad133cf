export * from './pool';
export * from './migrate';
export * from './connection-failure';
