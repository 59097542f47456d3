import { dataNodeExposureOf, isLoopback, unauthenticatedExposureOf } from './exposure';

describe('unauthenticatedExposureOf', () => {
  const loopback = { httpBindHost: '127.0.0.1', grpcBindHost: '127.0.0.1', authTokensFile: '', allowUnauthenticated: false };
  it.each<[string, Partial<typeof loopback>, RegExp | null]>([
    ['loopback without tokens', {}, null],
    ['0.0.0.0 with a tokens file', { httpBindHost: '0.0.0.0', grpcBindHost: '0.0.0.0', authTokensFile: '/run/secrets/tokens' }, null],
    ['0.0.0.0 allowed outright', { httpBindHost: '0.0.0.0', allowUnauthenticated: true }, null],
    ['HTTP on 0.0.0.0 without tokens', { httpBindHost: '0.0.0.0' }, /^MINK_HTTP_BIND_HOST=0\.0\.0\.0 serves the gateway beyond this machine without credentials/],
    ['gRPC on a LAN address without tokens', { grpcBindHost: '10.0.0.5' }, /^MINK_GRPC_BIND_HOST=10\.0\.0\.5 serves/],
    ['both on ::', { httpBindHost: '::', grpcBindHost: '::' }, /^MINK_HTTP_BIND_HOST=:: and MINK_GRPC_BIND_HOST=:: serves/],
    ['::1 and localhost', { httpBindHost: '::1', grpcBindHost: 'localhost' }, null],
  ])('%s', (_, change, refusal) => {
    const answer = unauthenticatedExposureOf({ ...loopback, ...change });
    if (refusal === null) expect(answer).toBeNull();
    else expect(answer).toMatch(refusal);
  });

  it('names the setting that would guard the gateway, and the way to allow it outright', () => {
    expect(unauthenticatedExposureOf({ ...loopback, httpBindHost: '0.0.0.0' })).toBe(
      'MINK_HTTP_BIND_HOST=0.0.0.0 serves the gateway beyond this machine without credentials: set MINK_AUTH_TOKENS_FILE (docs/operations.md "Authentication"), or MINK_ALLOW_UNAUTHENTICATED=true to serve anyone who can reach it',
    );
  });

  it.each<[string, boolean]>([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['[::1]', true],
    ['LOCALHOST', true],
    ['0.0.0.0', false],
    ['::', false],
    ['192.168.1.2', false],
  ])('isLoopback(%s) → %s', (host, loopbackHost) => {
    expect(isLoopback(host)).toBe(loopbackHost);
  });
});

describe('dataNodeExposureOf', () => {
  const loopback = { httpBindHost: '127.0.0.1', kafkaBindHost: '127.0.0.1', authTokensFile: '', clusterSecret: null as unknown, allowUnauthenticated: false };
  it.each<[string, Partial<typeof loopback>, string | null]>([
    ['loopback without credentials', {}, null],
    ['both on 0.0.0.0 with a tokens file and a cluster secret', { httpBindHost: '0.0.0.0', kafkaBindHost: '0.0.0.0', authTokensFile: '/run/secrets/tokens', clusterSecret: {} }, null],
    ['both on 0.0.0.0, allowed outright', { httpBindHost: '0.0.0.0', kafkaBindHost: '0.0.0.0', allowUnauthenticated: true }, null],
    ['Kafka on 0.0.0.0 without tokens', { kafkaBindHost: '0.0.0.0' }, 'MINK_KAFKA_BIND_HOST=0.0.0.0 serves the data node beyond this machine without credentials: set MINK_AUTH_TOKENS_FILE ('],
    ['Kafka on 0.0.0.0 with tokens, HTTP on a LAN address without a cluster secret', { kafkaBindHost: '0.0.0.0', authTokensFile: '/t', httpBindHost: '10.0.0.5' }, 'MINK_HTTP_BIND_HOST=10.0.0.5 serves the data node beyond this machine without credentials: set MINK_CLUSTER_SECRET_FILE ('],
    ['both exposed, neither guarded', { kafkaBindHost: '::', httpBindHost: '::' }, 'MINK_KAFKA_BIND_HOST=:: and MINK_HTTP_BIND_HOST=:: serves the data node beyond this machine without credentials: set MINK_AUTH_TOKENS_FILE and MINK_CLUSTER_SECRET_FILE ('],
    ['HTTP exposed with a cluster secret, Kafka on loopback', { httpBindHost: '0.0.0.0', clusterSecret: {} }, null],
  ])('%s', (_, change, refusal) => {
    const answer = dataNodeExposureOf({ ...loopback, ...change });
    if (refusal === null) expect(answer).toBeNull();
    else expect(answer?.startsWith(refusal)).toBe(true);
  });
});
