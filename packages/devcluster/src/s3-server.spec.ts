import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startS3Server, type S3ServerHandle } from './s3-server';
import { isPortOpen } from './ports';

const BUCKET = 'mink-test';

function clientFor(server: S3ServerHandle): S3Client {
  return new S3Client({
    endpoint: server.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
}

async function readObject(client: S3Client, key: string): Promise<string> {
  const response = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return response.Body!.transformToString();
}

// Each test starts an s3rver process: seconds on a loaded machine (Jest's default of 5 s failed a CI run while the box was busy).
jest.setTimeout(30_000);

describe('startS3Server', () => {
  let dataDir: string;
  let server: S3ServerHandle | undefined;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-s3-'));
  });

  afterEach(async () => {
    await server?.stop();
    server = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves PutObject, GetObject and paged ListObjectsV2 on the configured bucket, and stops', async () => {
    // Proves the bucket exists at start, bodies round-trip unframed, and continuation-token paging works (which needs the legacy OpenSSL provider).
    server = await startS3Server({ dataDir, bucket: BUCKET, logFile: join(dataDir, 's3.log') });
    const client = clientFor(server);
    const keys = ['wal/1/1/1', 'wal/1/1/2', 'wal/1/1/3'];
    for (const key of keys) {
      await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: `body of ${key}` }));
    }
    expect(await readObject(client, 'wal/1/1/2')).toBe('body of wal/1/1/2');

    const listed: string[] = [];
    let continuationToken: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'wal/', MaxKeys: 2, ContinuationToken: continuationToken }),
      );
      listed.push(...(page.Contents ?? []).map((object) => object.Key!));
      continuationToken = page.NextContinuationToken;
    } while (continuationToken);
    expect(listed).toEqual(keys);
    client.destroy();

    const { port } = server;
    await server.stop();
    expect(await isPortOpen('127.0.0.1', port)).toBe(false);
  });

  it('keeps objects when restarted on the same directory', async () => {
    // Proves `mink up` after `mink down` finds its data again: objects live in dataDir, not in the process.
    server = await startS3Server({ dataDir, bucket: BUCKET });
    let client = clientFor(server);
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'meta/snapshots/7', Body: 'snapshot seven' }));
    client.destroy();
    await server.stop();

    server = await startS3Server({ dataDir, bucket: BUCKET });
    client = clientFor(server);
    expect(await readObject(client, 'meta/snapshots/7')).toBe('snapshot seven');
    client.destroy();
  });

  it('with a latency, holds back every answer by it after handling the request, and still stores and serves objects', async () => {
    server = await startS3Server({ dataDir, bucket: BUCKET, latency: { medianMs: 300, p99Ms: 300 } });
    const client = clientFor(server);
    const putStartedAt = performance.now();
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'slow', Body: 'late but whole' }));
    const putMs = performance.now() - putStartedAt;
    const getStartedAt = performance.now();
    expect(await readObject(client, 'slow')).toBe('late but whole');
    const getMs = performance.now() - getStartedAt;
    // A fixed delay: no answer comes before it (a lower bound only; how much later depends on the machine).
    expect(Math.min(putMs, getMs)).toBeGreaterThanOrEqual(295);
  });

});
