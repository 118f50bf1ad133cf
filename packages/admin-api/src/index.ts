export * from './endpoints';
export * from './client';
export * from './requests';
export * from './resources';
export * from './route';
export * from './routes';
