import { bucketId, emptyView, shardedFrom, type BucketRecord, type NodeRecord, type TableRecord, type View } from '@mink/meta';
import { routeBucketRequest, routeTablePart, type PartRoute, type RouteDecision, type RouteRequest } from './routing';
import { bucketRecordOf, logTableRecord } from '@mink/testing';

/**
 * The view of every row, seen by node 1. Table `events` (id 7, unpartitioned, 6 buckets): bucket 0 led by
 * node 1 and open here, bucket 1 led by node 1 and still opening, bucket 2 led by live node 2, bucket 3
 * led by nobody yet, bucket 4 led by node 9 that the view holds no record of, and bucket 5 without a
 * record. Table `clicks` (id 8, partitioned by the hour, 2 buckets) has one live partition, whose bucket
 * 0 is led by node 2 and bucket 1 by node 1 (open here).
 */
const SELF = '1';
const HOUR = '2026120110';

function node(id: string): NodeRecord {
  return { id, epoch: 3, address: `mink.node.${id}`, kafka: `localhost:909${id}`, http: `localhost:809${id}` };
}

function record(tableRecord: TableRecord, partition: string | null, bucket: number, leader: string | null): BucketRecord {
  return bucketRecordOf(tableRecord, partition, bucket, leader, 4);
}

const EVENTS = logTableRecord(7, 'events', 6);
const CLICKS = logTableRecord(8, 'clicks', 2, { partitions: [HOUR] });
const RECORDS = [
  record(EVENTS, null, 0, '1'),
  record(EVENTS, null, 1, '1'),
  record(EVENTS, null, 2, '2'),
  record(EVENTS, null, 3, null),
  record(EVENTS, null, 4, '9'),
  record(CLICKS, HOUR, 0, '2'),
  record(CLICKS, HOUR, 1, '1'),
];
const OPEN_HERE = new Set([bucketId(7, null, 0), bucketId(8, HOUR, 1)]);

function view(): View {
  const result = emptyView();
  result.nodes = { '1': node('1'), '2': node('2') };
  result.tables = shardedFrom({ events: EVENTS, clicks: CLICKS });
  result.buckets = shardedFrom(Object.fromEntries(RECORDS.map((each) => [bucketId(each.tableId, each.partition, each.bucket), each])));
  return result;
}

const recordOf = (tableRecord: TableRecord, partition: string | null, bucket: number): BucketRecord =>
  RECORDS.find((each) => each.tableId === tableRecord.id && each.partition === partition && each.bucket === bucket)!;

describe('routeBucketRequest', () => {
  it.each<{ name: string; request: RouteRequest; decision: RouteDecision }>([
    // The redirect table of docs/ownership.md §6.
    { name: 'led here and open → serve', request: { table: 'events', tableId: 7, bucket: 0 }, decision: { route: 'serve', table: EVENTS, record: recordOf(EVENTS, null, 0) } },
    {
      name: 'led by another live node → redirect to it',
      request: { table: 'events', tableId: 7, partition: null, bucket: 2 },
      decision: { route: 'redirect', table: EVENTS, record: recordOf(EVENTS, null, 2), leader: node('2') },
    },
    {
      name: 'led by a node the view holds no record of → redirect without its record',
      request: { table: 'events', tableId: 7, bucket: 4 },
      decision: { route: 'redirect', table: EVENTS, record: recordOf(EVENTS, null, 4), leader: undefined },
    },
    { name: 'led here but still opening (moving here) → opening', request: { table: 'events', tableId: 7, bucket: 1 }, decision: { route: 'opening', table: EVENTS, record: recordOf(EVENTS, null, 1) } },
    { name: 'no leader yet → noLeader', request: { table: 'events', tableId: 7, bucket: 3 }, decision: { route: 'noLeader', table: EVENTS, record: recordOf(EVENTS, null, 3) } },
    // Partitions.
    { name: 'a partition bucket led here and open → serve', request: { table: 'clicks', tableId: 8, partition: HOUR, bucket: 1 }, decision: { route: 'serve', table: CLICKS, record: recordOf(CLICKS, HOUR, 1) } },
    {
      name: 'a partition bucket led elsewhere → redirect',
      request: { table: 'clicks', tableId: 8, partition: HOUR, bucket: 0 },
      decision: { route: 'redirect', table: CLICKS, record: recordOf(CLICKS, HOUR, 0), leader: node('2') },
    },
    { name: 'a partition that is not live (dropped past retain) → noPartition', request: { table: 'clicks', tableId: 8, partition: '2026120109', bucket: 0 }, decision: { route: 'noPartition', table: CLICKS, partition: '2026120109' } },
    { name: 'a partition that is not a string → noPartition', request: { table: 'clicks', tableId: 8, partition: 2026120110, bucket: 0 }, decision: { route: 'noPartition', table: CLICKS, partition: 2026120110 } },
    { name: 'no partition for a partitioned table → partitionRequired', request: { table: 'clicks', tableId: 8, bucket: 0 }, decision: { route: 'partitionRequired', table: CLICKS } },
    { name: 'a null partition for a partitioned table → partitionRequired', request: { table: 'clicks', tableId: 8, partition: null, bucket: 0 }, decision: { route: 'partitionRequired', table: CLICKS } },
    { name: 'a partition for an unpartitioned table → notPartitioned', request: { table: 'events', tableId: 7, partition: HOUR, bucket: 0 }, decision: { route: 'notPartitioned', table: EVENTS, partition: HOUR } },
    // Unknown or stale addresses.
    { name: 'an unknown table → noTable', request: { table: 'nothing', tableId: 7, bucket: 0 }, decision: { route: 'noTable', name: 'nothing' } },
    { name: 'a table name that is not a string → noTable', request: { table: 42, bucket: 0 }, decision: { route: 'noTable', name: 42 } },
    { name: 'a table name of an Object.prototype member → noTable', request: { table: 'constructor', bucket: 0 }, decision: { route: 'noTable', name: 'constructor' } },
    { name: 'a stale table id (dropped and re-created since) → tableRecreated', request: { table: 'events', tableId: 3, bucket: 0 }, decision: { route: 'tableRecreated', table: EVENTS } },
    { name: 'no table id: the name alone is trusted', request: { table: 'events', bucket: 0 }, decision: { route: 'serve', table: EVENTS, record: recordOf(EVENTS, null, 0) } },
    { name: 'a bucket without a record → noBucket', request: { table: 'events', tableId: 7, bucket: 5 }, decision: { route: 'noBucket', table: EVENTS, partition: null, bucket: 5 } },
    // Invalid bucket numbers, checked before the partition.
    { name: 'a bucket past the last → badBucket', request: { table: 'events', tableId: 7, bucket: 6 }, decision: { route: 'badBucket', table: EVENTS, bucket: 6 } },
    { name: 'a negative bucket → badBucket', request: { table: 'events', tableId: 7, bucket: -1 }, decision: { route: 'badBucket', table: EVENTS, bucket: -1 } },
    { name: 'a fractional bucket → badBucket', request: { table: 'events', tableId: 7, bucket: 0.5 }, decision: { route: 'badBucket', table: EVENTS, bucket: 0.5 } },
    { name: 'a bucket that is not a number → badBucket', request: { table: 'events', tableId: 7, bucket: '0' }, decision: { route: 'badBucket', table: EVENTS, bucket: '0' } },
    { name: 'a bad bucket of a partitioned table without a partition → badBucket first', request: { table: 'clicks', tableId: 8, bucket: 2 }, decision: { route: 'badBucket', table: CLICKS, bucket: 2 } },
    { name: 'a stale table id with a bad bucket → tableRecreated first', request: { table: 'events', tableId: 3, bucket: 99 }, decision: { route: 'tableRecreated', table: EVENTS } },
  ])('$name', ({ request, decision }) => {
    // Proves each row of the redirect table, and each way an address can be wrong, gets its own decision.
    expect(routeBucketRequest(view(), SELF, OPEN_HERE, request)).toEqual(decision);
  });

  it('serves a bucket only on its leader: the same open set on another node redirects', () => {
    // Proves being open locally never outranks the view's leader (a node deposed but not yet closed redirects).
    expect(routeBucketRequest(view(), '2', OPEN_HERE, { table: 'events', tableId: 7, bucket: 0 })).toEqual({
      route: 'redirect',
      table: EVENTS,
      record: recordOf(EVENTS, null, 0),
      leader: node('1'),
    });
  });
});

describe('routeTablePart', () => {
  it.each<{ name: string; bucketId: string; route: PartRoute }>([
    { name: 'led here and open → here', bucketId: bucketId(7, null, 0), route: { to: 'here' } },
    { name: 'led here and still opening → here (serving decides again)', bucketId: bucketId(7, null, 1), route: { to: 'here' } },
    { name: 'led by another node → that leader', bucketId: bucketId(7, null, 2), route: { to: 'leader', leader: node('2') } },
    { name: 'a partition bucket led by another node → that leader', bucketId: bucketId(8, HOUR, 0), route: { to: 'leader', leader: node('2') } },
    { name: 'no leader yet → noLeader', bucketId: bucketId(7, null, 3), route: { to: 'noLeader' } },
    { name: 'a leader the view holds no record of → noLeader', bucketId: bucketId(7, null, 4), route: { to: 'noLeader' } },
    { name: 'a bucket without a record → noLeader', bucketId: bucketId(7, null, 5), route: { to: 'noLeader' } },
  ])('$name', ({ bucketId: id, route }) => {
    // Proves where each part of a split table-addressed write is sent.
    expect(routeTablePart(view(), SELF, id)).toEqual(route);
  });
});
