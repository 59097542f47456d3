export * from './table-spec';
export * from './partition-lifecycle';
export * from './coordinator';
export * from './cluster-figures';
