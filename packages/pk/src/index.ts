export * from './keys';
export * from './changelog';
export * from './batch';
export * from './stored-row';
export * from './group-commit';
export * from './changelog-fold';
export * from './writer-order';
