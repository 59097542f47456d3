export * from './request-bodies';
export * from './scan-reply';
export * from './gateway-service';
// The access policy lives in @mink/protocol (the Kafka listener of the data nodes uses it too); re-exported for the gateway.
export { ACCESS_SCOPES, TOKEN_CHARS_MIN, authorize, parseAccessPolicy, type AccessNeed, type AccessPolicy, type AccessScope } from '@mink/protocol';
export * from './bucket-figures';
export * from './authentication';
export * from './group-lag';
