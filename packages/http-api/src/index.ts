export * from './request-bodies';
export * from './scan-reply';
export * from './gateway-service';
export * from './access';
export * from './bucket-figures';
