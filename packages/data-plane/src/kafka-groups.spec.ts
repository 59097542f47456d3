import { LIMITS, type ServiceConfig } from '@mink/config';
import type { MinkClient } from '@mink/client';
import { emptyView, shardedFrom, type TableRecord } from '@mink/meta';
import { InvalidArgumentError, type KafkaGroupsRequest } from '@mink/protocol';
import { bucketOfRow } from '@mink/records';
import type { ClusterMember, Logger } from '@mink/runtime';
import type { DataPlane } from './data-plane';
import { DataNodeKafkaBackend, OFFSETS_TABLE } from './kafka-backend';

/**
 * What a data node answers GET /v1/kafka/groups with (coordinatedGroups): the committed offsets of the
 * groups in the buckets of `__consumer_offsets` it serves, read page by page, grouped and sorted, with the
 * buckets it does not serve named, one group read by its key prefix, and the answer cut (and said to be)
 * at LIMITS.kafkaGroupsOffsetsListedMax offsets. Membership is empty here (no member joined): `Empty`, 0.
 */

const OFFSETS: TableRecord = {
  id: 3,
  name: OFFSETS_TABLE,
  kind: 'pk',
  columns: [],
  primaryKey: ['group', 'topic', 'partition'],
  bucketKey: ['group'],
  buckets: LIMITS.kafkaGroupBuckets,
  properties: {},
  createdAtMs: 0,
  partitions: [],
};

const ALL_BUCKETS = Array.from({ length: OFFSETS.buckets }, (_, bucket) => bucket);

/** A committed offset row of `__consumer_offsets`. */
function offsetRow(group: string, topic: string, partition: number, offset: number): Record<string, unknown> {
  return { group, topic, partition, offset: String(offset), leader_epoch: -1, metadata: null };
}

/** A backend over a data plane that serves `served` buckets of `__consumer_offsets` holding `rows` (in key order per bucket). */
function backendOver(rows: Record<string, unknown>[], served: number[]) {
  const bucketOf = (group: string) => bucketOfRow({ group }, ['group'], OFFSETS.buckets);
  const pages: number[] = [];
  const data = {
    serves: (table: string, bucket: number) => table === OFFSETS_TABLE && served.includes(bucket),
    pkRowsAfter: (address: { bucket: number }, after: Uint8Array | null, limit: number) => {
      const inBucket = rows.filter((row) => bucketOf(String(row.group)) === address.bucket);
      const from = after === null ? 0 : new DataView(after.buffer).getUint32(0) + 1;
      const page = inBucket.slice(from, from + limit);
      pages.push(page.length);
      const lastKey = new Uint8Array(4);
      new DataView(lastKey.buffer).setUint32(0, from + page.length - 1);
      return { rows: page, lastKey: page.length === 0 ? null : lastKey };
    },
    prefixLookup: (request: { bucket: number; prefixes: { group: string }[]; limit: number }) => {
      const found = rows.filter((row) => bucketOf(String(row.group)) === request.bucket && row.group === request.prefixes[0]!.group);
      return { results: [{ rows: found.slice(0, request.limit), truncated: found.length > request.limit }] };
    },
  } as unknown as DataPlane;
  const view = emptyView();
  view.tables = shardedFrom({ [OFFSETS_TABLE]: OFFSETS });
  const member = { view, liveNodes: () => new Set(['1']) } as unknown as ClusterMember;
  const config = { s3Bucket: 'b', metaStream: 'm', nodeId: '1', advertisedHost: '127.0.0.1', kafkaPort: 9092, kafkaDefaultPartitions: 1, kafkaAutoCreateTopics: false, kafkaGroupMaxSize: 10, kafkaOffsetsRetentionMs: 60_000 } as ServiceConfig;
  const logger = { info: () => undefined, warn: () => undefined } as unknown as Logger;
  return { backend: new DataNodeKafkaBackend(member, {} as MinkClient, config, () => data, logger), bucketOf, pages, view };
}

describe('DataNodeKafkaBackend.coordinatedGroups', () => {
  it('lists the groups of the served buckets with their offsets, names the buckets it does not serve', async () => {
    const rows = [offsetRow('billing', 'orders', 0, 3), offsetRow('billing', 'orders', 1, 10), offsetRow('audit', 'orders', 0, 7)];
    const { backend } = backendOver(rows, ALL_BUCKETS);
    expect(await backend.coordinatedGroups({ op: 'kafkaGroups', buckets: ALL_BUCKETS })).toEqual({
      groups: [
        { group: 'audit', state: 'Empty', members: 0, offsets: [{ topic: 'orders', partition: 0, offset: 7 }] },
        {
          group: 'billing',
          state: 'Empty',
          members: 0,
          offsets: [
            { topic: 'orders', partition: 0, offset: 3 },
            { topic: 'orders', partition: 1, offset: 10 },
          ],
        },
      ],
      unserved: [],
      truncated: false,
    });
    // A node that serves none of the buckets asked for: no groups, each bucket named.
    const elsewhere = backendOver(rows, []);
    expect(await elsewhere.backend.coordinatedGroups({ op: 'kafkaGroups', buckets: [0, 1] })).toEqual({ groups: [], unserved: [0, 1], truncated: false });
  });

  it('reads one group by its key prefix, without the other groups of its bucket', async () => {
    const rows = Array.from({ length: 50 }, (_, index) => offsetRow(`g${index}`, 't', 0, index));
    const { backend, bucketOf } = backendOver(rows, ALL_BUCKETS);
    expect(await backend.coordinatedGroups({ op: 'kafkaGroups', buckets: [bucketOf('g7')], group: 'g7' })).toEqual({
      groups: [{ group: 'g7', state: 'Empty', members: 0, offsets: [{ topic: 't', partition: 0, offset: 7 }] }],
      unserved: [],
      truncated: false,
    });
  });

  it('pages through a bucket and stops, saying so, at the offsets it lists at most', async () => {
    // One group in one bucket with more committed offsets than an answer lists.
    const rows = Array.from({ length: LIMITS.kafkaGroupsOffsetsListedMax + 5 }, (_, partition) => offsetRow('big', 't', partition, 1));
    const { backend, bucketOf, pages } = backendOver(rows, ALL_BUCKETS);
    const answer = await backend.coordinatedGroups({ op: 'kafkaGroups', buckets: [bucketOf('big')] });
    expect([answer.truncated, answer.groups[0]!.offsets.length]).toEqual([true, LIMITS.kafkaGroupsOffsetsListedMax]);
    expect(pages.every((page) => page <= LIMITS.kafkaOffsetsSweepPageRows)).toBe(true);
  });

  it.each<[string, unknown]>([
    ['a bucket the table does not have', { op: 'kafkaGroups', buckets: [LIMITS.kafkaGroupBuckets] }],
    ['a bucket that is no integer', { op: 'kafkaGroups', buckets: ['0'] }],
    ['buckets that are no list', { op: 'kafkaGroups', buckets: 3 }],
    ['a group that is no string', { op: 'kafkaGroups', buckets: [0], group: 7 }],
  ])('refuses %s as InvalidArgument', async (_case, request) => {
    // Proves a malformed request over NATS gets a typed error, never an internal one.
    const { backend } = backendOver([], [0]);
    await expect(backend.coordinatedGroups(request as KafkaGroupsRequest)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it.each<[string, unknown]>([
    ['a bucket that is no integer', { op: 'kafkaGroups', buckets: ['x'] }],
    ['a negative or fractional bucket', { op: 'kafkaGroups', buckets: [-1, 1.5] }],
  ])('refuses %s before there is a __consumer_offsets table (the fuzz test found it answered)', async (_case, request) => {
    const { backend, view } = backendOver([], [0]);
    view.tables = shardedFrom({});
    await expect(backend.coordinatedGroups(request as KafkaGroupsRequest)).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
