export * from './epochs';
