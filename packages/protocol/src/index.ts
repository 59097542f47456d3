export * from './errors';
export * from './subjects';
export * from './messages';
