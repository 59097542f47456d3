export * from './http-scan-pages';
export * from './mink-client';
export * from './table-client';
export * from './partition-routing';
