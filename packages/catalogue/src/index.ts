export * from './catalogue';
export * from './snapshot';
export * from './wire';
export * from './betas';
