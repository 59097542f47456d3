import { join } from 'node:path';
import { DEFAULTS, ENV } from '@mink/config';
import { CLUSTER_FILE_NAME, type ClusterFile } from '@mink/devcluster';
import { MinkError, NotFoundError, UnavailableError } from '@mink/protocol';
import { CliError } from './io';

/** The S3 credentials of the server `mink up` starts (s3rver accepts only these) and the services' default. */
export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;
/** The region the services use when MINK_S3_REGION is not set. */
export const DEFAULT_S3_REGION = 'us-east-1';

/** The `--s3-*` flags of the lake commands and the data dir of a local `mink up`. */
export interface S3Flags {
  s3Endpoint?: string;
  s3Bucket?: string;
  s3Region?: string;
  s3AccessKeyId?: string;
  s3SecretAccessKey?: string;
  dataDir: string;
}

/** Where the lake commands read the cluster's bucket, and where each setting came from (for messages). */
export interface S3Settings {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Where the endpoint came from: `--s3-endpoint`, `MINK_S3_ENDPOINT` or the cluster.json file's path. */
  endpointSource: string;
}

/** The endpoint and bucket a local cluster's cluster.json records, or null when it records none. */
export function s3OfClusterFile(file: ClusterFile): { endpoint: string; bucket: string } | null {
  const bucket = file.endpoints?.s3Bucket || DEFAULTS.s3Bucket;
  if (file.endpoints?.s3) return { endpoint: file.endpoints.s3, bucket };
  // An older file without the endpoint still names the S3 server's port.
  const port = file.processes?.find((entry) => entry.role === 's3')?.ports?.http;
  return port ? { endpoint: `http://127.0.0.1:${port}`, bucket } : null;
}

/**
 * The S3 settings of the lake commands, each from the first that gives it: its flag, its environment
 * variable (the services' `MINK_S3_*`), then for the endpoint and the bucket the cluster.json of a local
 * `mink up` in `--data-dir` (`clusterFile`, null when there is none). Without any endpoint it is a
 * CliError naming all three places. The bucket defaults to the services' default, the region to
 * us-east-1, the credentials to s3rver's (those of `mink up` and the services' defaults).
 */
export function resolveS3Settings(flags: S3Flags, env: NodeJS.ProcessEnv, clusterFile: ClusterFile | null): S3Settings {
  const clusterFilePath = join(flags.dataDir, CLUSTER_FILE_NAME);
  const local = clusterFile === null ? null : s3OfClusterFile(clusterFile);
  const given = (flag: string | undefined, variable: string): string | undefined => nonEmpty(flag) ?? nonEmpty(env[variable]);
  let endpoint: string;
  let endpointSource: string;
  if (nonEmpty(flags.s3Endpoint)) [endpoint, endpointSource] = [flags.s3Endpoint!, '--s3-endpoint'];
  else if (nonEmpty(env[ENV.s3Endpoint])) [endpoint, endpointSource] = [env[ENV.s3Endpoint]!, ENV.s3Endpoint];
  else if (local !== null) [endpoint, endpointSource] = [local.endpoint, clusterFilePath];
  else {
    throw new CliError(
      `no S3 endpoint to read the lake from: give --s3-endpoint or ${ENV.s3Endpoint}, or --data-dir of a running \`mink up\` (no ${clusterFilePath})`,
    );
  }
  return {
    endpoint: endpoint.replace(/\/+$/, ''),
    endpointSource,
    bucket: given(flags.s3Bucket, ENV.s3Bucket) ?? local?.bucket ?? DEFAULTS.s3Bucket,
    region: given(flags.s3Region, ENV.s3Region) ?? DEFAULT_S3_REGION,
    accessKeyId: given(flags.s3AccessKeyId, ENV.s3AccessKeyId) ?? LOCAL_S3_CREDENTIALS.accessKeyId,
    secretAccessKey: given(flags.s3SecretAccessKey, ENV.s3SecretAccessKey) ?? LOCAL_S3_CREDENTIALS.secretAccessKey,
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/**
 * A failed read of the lake's bucket as a one-line CliError: which S3 it was and where that setting came
 * from, so a wrong or stale endpoint (a cluster.json of a `mink up` that has stopped) is plain to see. The
 * credentials are never named. Anything that is not a MinkError is a bug, and is returned as it is.
 */
export function s3Failure(error: unknown, settings: Pick<S3Settings, 'endpoint' | 'bucket' | 'endpointSource'>): unknown {
  if (!(error instanceof MinkError)) return error;
  const where = `S3 at ${settings.endpoint} (from ${settings.endpointSource}), bucket ${settings.bucket}`;
  if (error instanceof UnavailableError) return new CliError(`Unavailable: cannot read the lake from ${where}: ${error.message}`);
  if (error instanceof NotFoundError) return new CliError(`NotFound: ${where} does not hold the lake object the cluster names (${error.message}): is this the cluster's bucket?`);
  return new CliError(`${error.code}: reading the lake from ${where} failed: ${error.message}`);
}
