import type { ClusterFile } from '@mink/devcluster';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '@mink/protocol';
import { CliError } from './io';
import { resolveS3Settings, s3Failure, s3OfClusterFile, type S3Flags } from './lake-settings';

/** A cluster.json as `mink up` writes it, with the S3 server on `port`. */
function clusterFile(port: number, endpoints = true): ClusterFile {
  return {
    processes: [{ role: 's3', nodeId: null, pid: 1, ports: { http: port }, running: true, log: '/x/logs/s3.log' }],
    endpoints: (endpoints ? { gateway: 'http://127.0.0.1:8080', nats: 'nats://127.0.0.1:1', s3: `http://127.0.0.1:${port}`, s3Bucket: 'mink' } : {}) as ClusterFile['endpoints'],
  };
}

describe('resolveS3Settings', () => {
  // Proves the order each setting is taken in: its flag, its MINK_S3_* variable, then a local cluster.json,
  // then the services' defaults, and that no endpoint at all is a one-line error naming all three places.
  const dataDir = '/work/.mink';
  const none: S3Flags = { dataDir };
  it.each<[string, S3Flags, NodeJS.ProcessEnv, ClusterFile | null, Record<string, string>]>([
    [
      'cluster.json alone: its endpoint and bucket, s3rver credentials',
      none,
      {},
      clusterFile(9100),
      { endpoint: 'http://127.0.0.1:9100', endpointSource: '/work/.mink/cluster.json', bucket: 'mink', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    ],
    ['an older cluster.json without endpoints: the s3 process port', none, {}, clusterFile(9200, false), { endpoint: 'http://127.0.0.1:9200', bucket: 'mink' }],
    [
      'the environment over cluster.json',
      none,
      { MINK_S3_ENDPOINT: 'https://s3.example.com/', MINK_S3_BUCKET: 'lakes', MINK_S3_REGION: 'eu-west-1', MINK_S3_ACCESS_KEY_ID: 'AK', MINK_S3_SECRET_ACCESS_KEY: 'SK' },
      clusterFile(9100),
      { endpoint: 'https://s3.example.com', endpointSource: 'MINK_S3_ENDPOINT', bucket: 'lakes', region: 'eu-west-1', accessKeyId: 'AK', secretAccessKey: 'SK' },
    ],
    [
      'flags over the environment',
      { dataDir, s3Endpoint: 'http://flag:1', s3Bucket: 'b', s3Region: 'r', s3AccessKeyId: 'fa', s3SecretAccessKey: 'fs' },
      { MINK_S3_ENDPOINT: 'http://env:2', MINK_S3_BUCKET: 'env-bucket', MINK_S3_ACCESS_KEY_ID: 'ea' },
      null,
      { endpoint: 'http://flag:1', endpointSource: '--s3-endpoint', bucket: 'b', region: 'r', accessKeyId: 'fa', secretAccessKey: 'fs' },
    ],
    ['an empty variable counts as not set', none, { MINK_S3_ENDPOINT: '', MINK_S3_BUCKET: '' }, clusterFile(9100), { endpoint: 'http://127.0.0.1:9100', bucket: 'mink' }],
    ['an endpoint from the environment, the bucket from cluster.json', none, { MINK_S3_ENDPOINT: 'http://env:2' }, clusterFile(9100), { endpoint: 'http://env:2', bucket: 'mink' }],
    ['no cluster.json: the default bucket', { dataDir, s3Endpoint: 'http://flag:1' }, {}, null, { bucket: 'mink', accessKeyId: 'S3RVER' }],
  ])('%s', (_name, flags, env, file, expected) => {
    expect(resolveS3Settings(flags, env, file)).toMatchObject(expected);
  });

  it('without an endpoint anywhere, says where it looked', () => {
    expect(() => resolveS3Settings(none, {}, null)).toThrow(
      new CliError('no S3 endpoint to read the lake from: give --s3-endpoint or MINK_S3_ENDPOINT, or --data-dir of a running `mink up` (no /work/.mink/cluster.json)'),
    );
    expect(() => resolveS3Settings(none, {}, { processes: [], endpoints: {} } as unknown as ClusterFile)).toThrow(/no S3 endpoint/);
  });

  it('reads a cluster.json that names no S3 server as none', () => {
    expect(s3OfClusterFile({ processes: [], endpoints: {} } as unknown as ClusterFile)).toBeNull();
  });
});

describe('s3Failure', () => {
  // Proves that every S3 failure becomes one line naming the endpoint and its source, and never a credential.
  const settings = { endpoint: 'http://127.0.0.1:9', bucket: 'mink', endpointSource: '--s3-endpoint' };
  it.each<[string, unknown, string]>([
    ['unreachable', new UnavailableError('GetObject failed: ECONNREFUSED'), 'Unavailable: cannot read the lake from S3 at http://127.0.0.1:9 (from --s3-endpoint), bucket mink: GetObject failed: ECONNREFUSED'],
    [
      'a missing object',
      new NotFoundError('no object lake/t/metadata/v1-t1r1.metadata.json'),
      'NotFound: S3 at http://127.0.0.1:9 (from --s3-endpoint), bucket mink does not hold the lake object the cluster names (no object lake/t/metadata/v1-t1r1.metadata.json): is this the cluster\'s bucket?',
    ],
    ['another refusal', new InvalidArgumentError('AccessDenied'), 'InvalidArgument: reading the lake from S3 at http://127.0.0.1:9 (from --s3-endpoint), bucket mink failed: AccessDenied'],
  ])('%s', (_name, error, expected) => {
    const failure = s3Failure(error, settings);
    expect(failure).toBeInstanceOf(CliError);
    expect((failure as CliError).message).toBe(expected);
  });

  it('leaves a bug as it is', () => {
    const bug = new TypeError('x is undefined');
    expect(s3Failure(bug, settings)).toBe(bug);
  });
});
