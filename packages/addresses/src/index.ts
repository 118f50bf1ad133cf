export * from './allow-list';
export * from './forwarded';
