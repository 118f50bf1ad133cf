export * from './catalogue';
export * from './gateway-error';
export * from './messages';
export * from './quoted';
