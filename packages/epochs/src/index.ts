export * from './epochs';
export * from './fenced';
