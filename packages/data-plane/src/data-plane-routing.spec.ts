import { bucketId, emptyView, shardedFrom, type BucketRecord, type TableRecord, type View } from '@mink/meta';
import { MinkError, type ScanRequest } from '@mink/protocol';
import type { StreamReader, WalWriter } from '@mink/s3stream';
import type { ClusterMember } from '@mink/runtime';

import type { BucketSync } from './bucket-sync';
import { DataPlane } from './data-plane';
import type { PkBuckets } from './pk-buckets';
import { bucketRecordOf, logTableRecord } from '@mink/testing';

/**
 * The errors DataPlane throws for each routing decision (routeBucketRequest decides; DataPlane words it):
 * the wire code, the message and the redirect a client acts on. Node 1 serves; node 2 leads bucket 1 of
 * `events`; bucket 2 has no leader; bucket 3 is led by node 1 but still opening; bucket 4 is led by a node
 * the view holds no record of; `clicks` is partitioned by the hour with one live partition.
 */

const HOUR = '2026120110';

function record(tableRecord: TableRecord, partition: string | null, bucket: number, leader: string | null): BucketRecord {
  return bucketRecordOf(tableRecord, partition, bucket, leader, 6);
}

const EVENTS = logTableRecord(7, 'events', 6);
const CLICKS = logTableRecord(8, 'clicks', 2, { partitions: [HOUR] });

function view(): View {
  const result = emptyView();
  result.nodes = {
    '1': { id: '1', epoch: 1, address: 'mink.node.1', kafka: 'localhost:9091', http: 'localhost:8091' },
    '2': { id: '2', epoch: 1, address: 'mink.node.2.custom', kafka: 'localhost:9092', http: 'localhost:8092' },
  };
  result.tables = shardedFrom({ events: EVENTS, clicks: CLICKS });
  const records = [record(EVENTS, null, 0, '1'), record(EVENTS, null, 1, '2'), record(EVENTS, null, 2, null), record(EVENTS, null, 3, '1'), record(EVENTS, null, 4, '9'), record(CLICKS, HOUR, 0, '2')];
  result.buckets = shardedFrom(Object.fromEntries(records.map((each) => [bucketId(each.tableId, each.partition, each.bucket), each])));
  return result;
}

function dataPlane(): DataPlane {
  const member = { view: view() } as unknown as ClusterMember;
  const sync = { isOpen: (id: string) => id === bucketId(7, null, 0) } as unknown as BucketSync;
  return new DataPlane(member, { nodeId: '1', nodeEpoch: 1 }, sync, {} as WalWriter, {} as StreamReader, {} as PkBuckets);
}

async function errorOf(request: Partial<ScanRequest> & Record<string, unknown>): Promise<{ code: string; message: string; details: unknown }> {
  try {
    await dataPlane().scan({ op: 'scan', ...request } as ScanRequest);
  } catch (error) {
    if (!(error instanceof MinkError)) throw error;
    return { code: error.code, message: error.message, details: error.details };
  }
  throw new Error('the scan was served');
}

describe('DataPlane routing errors', () => {
  it.each<[string, Record<string, unknown>, { code: string; message: string; details?: unknown }]>([
    [
      'another node leads the bucket: NotLeader with its address, leader epoch and HTTP endpoint',
      { table: 'events', tableId: 7, partition: null, bucket: 1 },
      {
        code: 'NotLeader',
        message: "node 1 does not lead bucket 1 of table 'events'",
        details: { redirect: { table: 'events', bucket: 1, node: '2', to: 'mink.node.2.custom', leaderEpoch: 6, http: 'localhost:8092' } },
      },
    ],
    [
      'a partition bucket another node leads: the redirect names the partition',
      { table: 'clicks', tableId: 8, partition: HOUR, bucket: 0 },
      {
        code: 'NotLeader',
        message: `node 1 does not lead bucket 0 of partition '${HOUR}' of table 'clicks'`,
        details: { redirect: { table: 'clicks', partition: HOUR, bucket: 0, node: '2', to: 'mink.node.2.custom', leaderEpoch: 6, http: 'localhost:8092' } },
      },
    ],
    [
      'a leader the view holds no record of: redirected to its default address, without HTTP',
      { table: 'events', tableId: 7, bucket: 4 },
      { code: 'NotLeader', message: "node 1 does not lead bucket 4 of table 'events'", details: { redirect: { table: 'events', bucket: 4, node: '9', to: 'mink.node.9', leaderEpoch: 6 } } },
    ],
    ['no leader yet: Unavailable', { table: 'events', tableId: 7, bucket: 2 }, { code: 'Unavailable', message: "bucket 2 of table 'events' has no leader yet", details: { retryAfterMs: 200 } }],
    ['led here, still opening: Unavailable', { table: 'events', tableId: 7, bucket: 3 }, { code: 'Unavailable', message: "bucket 3 of table 'events' is still opening on node 1", details: { retryAfterMs: 200 } }],
    ['an unknown table: NotFound', { table: 'nothing', bucket: 0 }, { code: 'NotFound', message: "table 'nothing' does not exist" }],
    ['a re-created table: NotFound', { table: 'events', tableId: 3, bucket: 0 }, { code: 'NotFound', message: "table 'events' was dropped and re-created: refresh its metadata" }],
    ['a bucket out of range: InvalidArgument', { table: 'events', tableId: 7, bucket: 6 }, { code: 'InvalidArgument', message: 'bucket must be an integer in [0, 6), got 6' }],
    ['a bucket without a record: NotFound', { table: 'events', tableId: 7, bucket: 5 }, { code: 'NotFound', message: "bucket 5 of table 'events' does not exist" }],
    [
      'a partition of an unpartitioned table: InvalidArgument',
      { table: 'events', tableId: 7, partition: HOUR, bucket: 0 },
      { code: 'InvalidArgument', message: `table 'events' is not partitioned: a request for it names no partition, got "${HOUR}"` },
    ],
    ['no partition of a partitioned table: InvalidArgument', { table: 'clicks', tableId: 8, bucket: 0 }, { code: 'InvalidArgument', message: "table 'clicks' is partitioned by 'ts': a request for it names a partition" }],
    ['a partition that is not live: NotFound', { table: 'clicks', tableId: 8, partition: '2026120109', bucket: 0 }, { code: 'NotFound', message: "partition '2026120109' of table 'clicks' does not exist" }],
    ['a partition bucket without a record: NotFound', { table: 'clicks', tableId: 8, partition: HOUR, bucket: 1 }, { code: 'NotFound', message: `bucket 1 of partition '${HOUR}' of table 'clicks' does not exist` }],
  ])('%s', async (_name, request, expected) => {
    // Proves each decision reaches the client as the code, message and redirect it had before the decision moved to @mink/ownership.
    expect(await errorOf(request)).toEqual({ details: undefined, ...expected });
  });
});
