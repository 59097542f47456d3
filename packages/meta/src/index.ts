export * from './state';
export * from './jetstream';
