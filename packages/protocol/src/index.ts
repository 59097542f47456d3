export * from './errors';
export * from './subjects';
export * from './messages';
export * from './scan-http';
export * from './access';
