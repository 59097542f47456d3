import type { NatsConnection } from 'nats';
import { openLeaseBucket, LEASE_BUCKET } from './lease';
import { HEARTBEAT_BUCKET, openHeartbeatBucket } from './liveness';
import { SNAPSHOT_BUCKET, openSnapshotBucket } from './view-snapshots';
import { translateNatsError } from './nats-errors';

/** A stream or KV bucket mink keeps on JetStream, with the replicas the server reports for it. */
export interface MetaResource {
  name: string;
  replicas: number;
}

/** Every KV bucket mink creates, by name. */
export const MINK_KV_BUCKETS = [HEARTBEAT_BUCKET, LEASE_BUCKET, SNAPSHOT_BUCKET] as const;

/**
 * Creates every KV bucket mink uses (heartbeats, coordinator lease, view snapshot pointer) with `replicas`
 * replicas when it is missing, and returns each bucket's replicas as the server reports them. A process
 * calls this right after it connects, before anything else opens a bucket, so the buckets are created with
 * the configured replicas whichever process comes first; later opens (`Heartbeater.create`,
 * `CoordinatorLease.open`, …) find them. An existing bucket is never changed, so a restart with another
 * `MINK_META_REPLICAS` leaves the replicas as they were: the caller compares and warns.
 */
export async function ensureMetaBuckets(connection: NatsConnection, replicas: number): Promise<MetaResource[]> {
  const opened = [
    { name: HEARTBEAT_BUCKET, kv: await openHeartbeatBucket(connection, HEARTBEAT_BUCKET, { replicas }) },
    { name: LEASE_BUCKET, kv: await openLeaseBucket(connection, LEASE_BUCKET, { replicas }) },
    { name: SNAPSHOT_BUCKET, kv: await openSnapshotBucket(connection, SNAPSHOT_BUCKET, { replicas }) },
  ];
  const resources: MetaResource[] = [];
  for (const { name, kv } of opened) {
    try {
      resources.push({ name, replicas: (await kv.status()).replicas });
    } catch (error) {
      throw translateNatsError(error, `read the status of KV bucket ${name}`);
    }
  }
  return resources;
}
