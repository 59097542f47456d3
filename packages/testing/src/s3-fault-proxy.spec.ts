import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startS3Server, type S3ServerHandle } from '@mink/devcluster';
import { UnavailableError } from '@mink/protocol';
import { S3ObjectStore } from '@mink/s3stream';
import { S3FaultProxy } from './s3-fault-proxy';

describe('S3FaultProxy', () => {
  let dataDir: string;
  let s3: S3ServerHandle;
  let proxy: S3FaultProxy;
  let store: S3ObjectStore;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-s3-fault-proxy-'));
    s3 = await startS3Server({ dataDir, bucket: 'mink' });
    proxy = await S3FaultProxy.start({ targetPort: s3.port });
    // One attempt, so each refusal is seen as it happens rather than retried away.
    store = new S3ObjectStore({ endpoint: proxy.endpoint, bucket: 'mink', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', maxAttempts: 1 });
  });

  afterAll(async () => {
    store?.close();
    await proxy?.close();
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('forwards signed requests unchanged, refuses every one with 503 SlowDown while told to, and forwards again after', async () => {
    // Proves the outage is S3's own throttling answer (a transient Unavailable to the store), and the objects survive it.
    await store.put('before', [Buffer.from('kept')]);
    proxy.setMode('slowDown');
    const refused = await store.put('during', [Buffer.from('lost')]).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(UnavailableError);
    expect(String((refused as Error).message)).toMatch(/SlowDown/);
    await expect(store.get('before')).rejects.toBeInstanceOf(UnavailableError);
    proxy.setMode('forward');
    expect(Buffer.from(await store.get('before')).toString()).toBe('kept');
    await expect(store.get('during')).rejects.toThrow(/does not exist/);
    expect(proxy.seen.refused).toBe(2);
    expect(proxy.seen.forwarded).toBeGreaterThanOrEqual(3);
  });
});
