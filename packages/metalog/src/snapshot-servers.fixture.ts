import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, startS3Server, type NatsServerHandle, type S3ServerHandle } from '@mink/devcluster';
import { S3ObjectStore } from '@mink/s3stream';

export const SNAPSHOT_TEST_BUCKET = 'mink-snapshot-test';

/**
 * A nats-server and an s3rver started by the test in a temporary folder, and the clients made on them;
 * `stop` closes the clients, stops both servers and removes the folder.
 */
export interface SnapshotTestServers {
  natsUrl: string;
  s3Endpoint: string;
  /** A new NATS connection, as a separate process would have; closed by `stop`. */
  connect(): Promise<NatsConnection>;
  /** A new object store client on the test bucket; closed by `stop`. */
  objectStore(): S3ObjectStore;
  stop(): Promise<void>;
}

export async function startSnapshotTestServers(name: string): Promise<SnapshotTestServers> {
  const dataDir = mkdtempSync(join(tmpdir(), `mink-${name}-`));
  let nats: NatsServerHandle | undefined;
  let s3: S3ServerHandle | undefined;
  const connections: NatsConnection[] = [];
  const stores: S3ObjectStore[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
    for (const store of stores) store.close();
    await Promise.all([nats?.stop(), s3?.stop()]);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    [nats, s3] = await Promise.all([
      startNatsServer({ dataDir: join(dataDir, 'nats') }),
      startS3Server({ dataDir: join(dataDir, 's3'), bucket: SNAPSHOT_TEST_BUCKET }),
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  const natsUrl = nats.url;
  const s3Endpoint = s3.endpoint;
  return {
    natsUrl,
    s3Endpoint,
    connect: async () => {
      const connection = await connect({ servers: natsUrl });
      connections.push(connection);
      return connection;
    },
    objectStore: () => {
      const store = new S3ObjectStore({ endpoint: s3Endpoint, bucket: SNAPSHOT_TEST_BUCKET, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
      stores.push(store);
      return store;
    },
    stop,
  };
}
