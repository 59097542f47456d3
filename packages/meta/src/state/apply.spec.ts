import { emptyShardedMap, entriesIn, getIn, recordOf, shardOf, shardedFrom } from './sharded-map';
import { LIMITS } from '@mink/config';
import { apply, describeMalformedCommand } from './apply';
import type { Command, Rejection, WalRange } from './commands';
import { deepFreeze } from './deep-freeze';
import {
  NO_WRITERS,
  WRITER_SHARDS,
  bucketId,
  bucketsInTableOrder,
  emptyView,
  type BucketRecord,
  type DataSlice,
  type KvSnapshotRecord,
  type NodeRecord,
  type StreamRecord,
  type TableRecord,
  type View,
  type WriterState,
  type GarbageRecord,
  type ObjectRecord,
} from './view';

const STORAGE_EMPTY = { startOffset: 0, endOffset: 0, slices: [], writers: NO_WRITERS };
const CLOSED_NEVER_OPENED: StreamRecord = { state: 'closed', epoch: 0, node: null, nodeEpoch: 0, ...STORAGE_EMPTY };

function node(id: string, epoch: number): NodeRecord {
  return { id, epoch, address: `mink.node.${id}`, kafka: `host${id}:9092`, http: `host${id}:8081` };
}

function bucket(
  table: TableRecord,
  partition: string | null,
  number: number,
  leader: string | null,
  leaderEpoch: number,
  stream: StreamRecord,
): BucketRecord {
  return { tableId: table.id, table: table.name, partition, bucket: number, leader, leaderEpoch, stream, kvSnapshots: [] };
}

const EVENTS: TableRecord = {
  id: 1,
  name: 'events',
  kind: 'log',
  columns: [
    { name: 'ts', type: 'timestamp' },
    { name: 'body', type: 'string' },
  ],
  primaryKey: [],
  bucketKey: [],
  buckets: 3,
  properties: {},
  createdAtMs: 1_000,
  partitions: [],
};

const ORDERS: TableRecord = {
  id: 2,
  name: 'orders',
  kind: 'pk',
  columns: [
    { name: 'day', type: 'timestamp' },
    { name: 'id', type: 'int64' },
  ],
  primaryKey: ['day', 'id'],
  bucketKey: ['id'],
  buckets: 2,
  partition: { column: 'day', unit: 'day' },
  properties: {},
  createdAtMs: 2_000,
  partitions: ['p1'],
};

/**
 * The view most tests start from, at sequence 10:
 * - nodes 1 (epoch 2), 2 (epoch 1), 3 (epoch 4); coordinator c1 at epoch 3;
 * - events/0: led by 1 at leader epoch 2, stream open at 2 by node 1 at node epoch 2 (healthy);
 * - events/1: led by 2 at leader epoch 1, stream closed at 1 (its leader restarted or closed it);
 * - events/2: re-led to 2 at leader epoch 5, stream still open at 4 by node 3 at node epoch 3, an
 *   incarnation that has since been fenced (node 3 is at epoch 4): the takeover case;
 * - orders/p1/0: no leader yet; orders/p1/1: led by 3 at leader epoch 1, never opened.
 */
function fixture(): View {
  return deepFreeze({
    seq: 10,
    nodes: { '1': node('1', 2), '2': node('2', 1), '3': node('3', 4) },
    coordinator: { node: 'c1', epoch: 3 },
    tables: shardedFrom({ events: EVENTS, orders: ORDERS }),
    buckets: shardedFrom({
      '1//0': bucket(EVENTS, null, 0, '1', 2, { state: 'open', epoch: 2, node: '1', nodeEpoch: 2, ...STORAGE_EMPTY }),
      '1//1': bucket(EVENTS, null, 1, '2', 1, { state: 'closed', epoch: 1, node: '2', nodeEpoch: 1, ...STORAGE_EMPTY }),
      '1//2': bucket(EVENTS, null, 2, '2', 5, { state: 'open', epoch: 4, node: '3', nodeEpoch: 3, ...STORAGE_EMPTY }),
      '2/p1/0': bucket(ORDERS, 'p1', 0, null, 0, CLOSED_NEVER_OPENED),
      '2/p1/1': bucket(ORDERS, 'p1', 1, '3', 1, CLOSED_NEVER_OPENED),
    }),
    nextTableId: 3,
    nextProducerId: 7,
    objects: emptyShardedMap(),
    garbage: emptyShardedMap(),
  });
}

/** `buckets` with `changes` set, built afresh from flat records (so it equals the map apply edits shard by shard). */
function bucketsWith(buckets: View['buckets'], changes: Record<string, BucketRecord>): View['buckets'] {
  return shardedFrom({ ...recordOf(buckets), ...changes });
}

/** The fixture without a registered coordinator. */
function fixtureWithoutCoordinator(): View {
  return deepFreeze({ ...fixture(), coordinator: { node: null, epoch: 0 } });
}

/** Applies `command` as the next log entry. */
function next(view: View, command: unknown) {
  return apply(view, view.seq + 1, command as Command);
}

/** Applies `command` and expects acceptance; returns the new view and outcome. */
function accepted(view: View, command: unknown) {
  const result = next(view, command);
  if (!result.outcome.ok) throw new Error(`expected acceptance, got ${JSON.stringify(result.outcome.rejection)}`);
  return result;
}

const validSpec = {
  name: 'clicks',
  columns: [
    { name: 'ts', type: 'timestamp' },
    { name: 'url', type: 'string' },
  ],
  buckets: 2,
};

describe('the fixture is consistent, so rejections below are caused by the commands alone', () => {
  it('keys every bucket by its own address', () => {
    for (const [id, record] of entriesIn(fixture().buckets)) {
      expect(bucketId(record.tableId, record.partition, record.bucket)).toBe(id);
    }
  });
});

describe('bucketsInTableOrder visits every bucket in a stable order, whatever the sharding of the map', () => {
  it('lists tables by id, partitions in creation order, then bucket numbers', () => {
    // Proves the order the compactor and the simulation rely on: a later partition comes after p1 though it sorts before it.
    const partitioned = accepted(fixture(), { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: '2024-01-02' }).view;
    const { view } = accepted(partitioned, { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 1 });
    expect(bucketsInTableOrder(view).map((record) => bucketId(record.tableId, record.partition, record.bucket))).toEqual([
      '1//0',
      '1//1',
      '1//2',
      '2/p1/0',
      '2/p1/1',
      '2/2024-01-02/0',
      '2/2024-01-02/1',
      '3//0',
      '3//1',
    ]);
    expect(bucketsInTableOrder(view)).toHaveLength(view.buckets.size);
  });
});

describe('apply rejects every invalid or stale command without changing anything but the sequence', () => {
  type Case = [description: string, command: unknown, code: Rejection['code'], message: string, view?: () => View];
  const cases: Case[] = [
    // Malformed commands, as anybody may publish them to the log.
    ['a command that is null', null, 'InvalidArgument', 'command must be an object'],
    ['a command that is a string', 'RegisterNode', 'InvalidArgument', 'command must be an object'],
    ['a command without a type', { nodeId: '1' }, 'InvalidArgument', 'unknown command type undefined'],
    ['a command of an unknown type', { type: 'Explode' }, 'InvalidArgument', 'unknown command type "Explode"'],
    ['a command type inherited from Object', { type: 'toString' }, 'InvalidArgument', 'unknown command type "toString"'],
    ['RegisterNode without nodeId', { type: 'RegisterNode' }, 'InvalidArgument', 'RegisterNode.nodeId must be a non-empty string'],
    ['RegisterNode with an empty nodeId', { type: 'RegisterNode', nodeId: '' }, 'InvalidArgument', 'RegisterNode.nodeId must be a non-empty string'],
    ['RegisterNode with a negative expectedEpoch', { type: 'RegisterNode', nodeId: '1', expectedEpoch: -1 }, 'InvalidArgument', 'RegisterNode.expectedEpoch must be absent or a non-negative integer (got -1)'],
    ['RegisterNode with a numeric address', { type: 'RegisterNode', nodeId: '1', address: 5 }, 'InvalidArgument', 'RegisterNode.address must be absent or a string'],
    ['RegisterCoordinator without coordinatorId', { type: 'RegisterCoordinator' }, 'InvalidArgument', 'RegisterCoordinator.coordinatorId must be a non-empty string of at most 128 characters (missing)'],
    ['CreateTable without spec', { type: 'CreateTable', coordinatorEpoch: 3, createdAtMs: 5 }, 'InvalidArgument', 'CreateTable.spec must be an object'],
    ['CreateTable with a string time', { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 'now' }, 'InvalidArgument', 'CreateTable.createdAtMs must be a non-negative integer'],
    ['DropTable without name', { type: 'DropTable', coordinatorEpoch: 3 }, 'InvalidArgument', 'DropTable.name must be'],
    ['DropTable without coordinatorEpoch', { type: 'DropTable', name: 'events' }, 'InvalidArgument', 'DropTable.coordinatorEpoch must be a non-negative integer (missing)'],
    ['CreatePartition with a slash in the name', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'a/b' }, 'InvalidArgument', "CreatePartition.partition must be a non-empty string of at most 128 characters without '/'"],
    ['DropPartition without partition', { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders' }, 'InvalidArgument', 'DropPartition.partition must be'],
    ['LeadBucket without partition (null is required for none)', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, bucket: 0, leader: '1' }, 'InvalidArgument', 'LeadBucket.partition must be null or'],
    ['LeadBucket with a fractional bucket', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0.5, leader: '1' }, 'InvalidArgument', 'LeadBucket.bucket must be a non-negative integer (got 0.5)'],
    ['LeadBucket with a string expectedLeaderEpoch', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '1', expectedLeaderEpoch: '2' }, 'InvalidArgument', 'LeadBucket.expectedLeaderEpoch must be absent or'],
    ['OpenStream without nodeEpoch', { type: 'OpenStream', nodeId: '3', tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }, 'InvalidArgument', 'OpenStream.nodeEpoch must be a non-negative integer (missing)'],
    ['CloseStream with a string streamEpoch', { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, streamEpoch: '2' }, 'InvalidArgument', 'CloseStream.streamEpoch must be a non-negative integer (got "2")'],
    ['DropTable with a string time', { type: 'DropTable', coordinatorEpoch: 3, name: 'events', atMs: 'now' }, 'InvalidArgument', 'DropTable.atMs must be absent or a non-negative integer (got "now")'],
    ['DropPartition with a negative time', { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', atMs: -1 }, 'InvalidArgument', 'DropPartition.atMs must be absent or a non-negative integer (got -1)'],
    ['CommitStreamObject without atMs', { type: 'CommitStreamObject', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, streamEpoch: 2, object: 'streams/x', startOffset: 0, endOffset: 1, slices: [] }, 'InvalidArgument', 'CommitStreamObject.atMs must be a non-negative integer (missing)'],
    ['CommitStreamObject whose slices are not a list', { type: 'CommitStreamObject', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, streamEpoch: 2, object: 'streams/x', startOffset: 0, endOffset: 1, slices: {}, atMs: 1 }, 'InvalidArgument', 'CommitStreamObject.slices must be an array (got {})'],
    ['CommitStreamObject without a partition (null is required for none)', { type: 'CommitStreamObject', nodeId: '1', nodeEpoch: 2, tableId: 1, bucket: 0, streamEpoch: 2, object: 'streams/x', startOffset: 0, endOffset: 1, slices: [], atMs: 1 }, 'InvalidArgument', 'CommitStreamObject.partition must be null or'],
    ['CommitStreamObject with an empty object key', { type: 'CommitStreamObject', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, streamEpoch: 2, object: '', startOffset: 0, endOffset: 1, slices: [], atMs: 1 }, 'InvalidArgument', 'CommitStreamObject.object must be a non-empty string (got "")'],
    ['CommitKvSnapshot without atMs', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, object: 'kv/2/p1/0/1-5', appliedOffset: 5, bytes: 10 }, 'InvalidArgument', 'CommitKvSnapshot.atMs must be a non-negative integer (missing)'],
    ['CommitKvSnapshot without a partition (null is required for none)', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, bucket: 0, streamEpoch: 1, object: 'kv/2/p1/0/1-5', appliedOffset: 5, bytes: 10, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.partition must be null or'],
    ['CommitKvSnapshot with a slash in the partition', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p/1', bucket: 0, streamEpoch: 1, object: 'kv/2/p1/0/1-5', appliedOffset: 5, bytes: 10, atMs: 1 }, 'InvalidArgument', "CommitKvSnapshot.partition must be null or a non-empty string of at most 128 characters without '/' (got \"p/1\")"],
    ['CommitKvSnapshot without an object', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, appliedOffset: 5, bytes: 10, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.object must be a non-empty string (missing)'],
    ['CommitKvSnapshot with an empty object key', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, object: '', appliedOffset: 5, bytes: 10, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.object must be a non-empty string (got "")'],
    ['CommitKvSnapshot with a numeric object key', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, object: 7, appliedOffset: 5, bytes: 10, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.object must be a non-empty string (got 7)'],
    ['CommitKvSnapshot with a negative applied offset', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, object: 'kv/2/p1/0/1-5', appliedOffset: -1, bytes: 10, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.appliedOffset must be a non-negative integer (got -1)'],
    ['CommitKvSnapshot with a fractional size', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, object: 'kv/2/p1/0/1-5', appliedOffset: 5, bytes: 1.5, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.bytes must be a non-negative integer (got 1.5)'],
    ['CommitKvSnapshot without a size', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, object: 'kv/2/p1/0/1-5', appliedOffset: 5, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.bytes must be a non-negative integer (missing)'],
    ['CommitKvSnapshot with a string stream epoch', { type: 'CommitKvSnapshot', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: '1', object: 'kv/2/p1/0/1-5', appliedOffset: 5, bytes: 10, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.streamEpoch must be a non-negative integer (got "1")'],
    ['CommitKvSnapshot with an empty node id', { type: 'CommitKvSnapshot', nodeId: '', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1, object: 'kv/2/p1/0/1-5', appliedOffset: 5, bytes: 10, atMs: 1 }, 'InvalidArgument', 'CommitKvSnapshot.nodeId must be a non-empty string'],
    ['CreateTable whose leaders are not a list of names', { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 5, leaders: ['1', 2] }, 'InvalidArgument', 'CreateTable.leaders must be absent or an array of'],
    ['OpenStreams whose streams are not a list', { type: 'OpenStreams', nodeId: '3', nodeEpoch: 4, streams: {} }, 'InvalidArgument', 'OpenStreams.streams must be an array (got {})'],
    ['OpenStreams with an empty list', { type: 'OpenStreams', nodeId: '3', nodeEpoch: 4, streams: [] }, 'InvalidArgument', 'OpenStreams.streams must not be empty'],
    ['OpenStreams with a stream lacking its leader epoch', { type: 'OpenStreams', nodeId: '3', nodeEpoch: 4, streams: [{ tableId: 2, partition: 'p1', bucket: 1 }] }, 'InvalidArgument', 'OpenStreams.streams[0].leaderEpoch must be a non-negative integer (missing)'],
    ['OpenStreams naming one bucket twice', { type: 'OpenStreams', nodeId: '3', nodeEpoch: 4, streams: [{ tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }, { tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }] }, 'InvalidArgument', 'OpenStreams.streams[1] names bucket 2/p1/1 a second time'],
    ['OpenStreams with more streams than one command may open', { type: 'OpenStreams', nodeId: '3', nodeEpoch: 4, streams: Array.from({ length: LIMITS.openStreamsPerCommandMax + 1 }, (_, bucket) => ({ tableId: 2, partition: 'p1', bucket, leaderEpoch: 1 })) }, 'InvalidArgument', `OpenStreams.streams holds ${LIMITS.openStreamsPerCommandMax + 1} entries: at most ${LIMITS.openStreamsPerCommandMax}`],
    ['CloseStreams with an empty list', { type: 'CloseStreams', nodeId: '2', nodeEpoch: 1, streams: [] }, 'InvalidArgument', 'CloseStreams.streams must not be empty'],
    ['CloseStreams with a string stream epoch', { type: 'CloseStreams', nodeId: '2', nodeEpoch: 1, streams: [{ tableId: 1, partition: null, bucket: 2, streamEpoch: '4' }] }, 'InvalidArgument', 'CloseStreams.streams[0].streamEpoch must be a non-negative integer (got "4")'],
    ['LeadBuckets from a stale coordinator', { type: 'LeadBuckets', coordinatorEpoch: 2, buckets: [{ tableId: 1, partition: null, bucket: 0, leader: '2' }] }, 'Fenced', 'coordinator epoch 2 is fenced: current is 3'],
    ['LeadBuckets with an empty list', { type: 'LeadBuckets', coordinatorEpoch: 3, buckets: [] }, 'InvalidArgument', 'LeadBuckets.buckets must not be empty'],
    ['LeadBuckets with a bucket without a leader', { type: 'LeadBuckets', coordinatorEpoch: 3, buckets: [{ tableId: 1, partition: null, bucket: 0 }] }, 'InvalidArgument', 'LeadBuckets.buckets[0].leader must be a non-empty string'],
    ['LeadBuckets naming one bucket twice', { type: 'LeadBuckets', coordinatorEpoch: 3, buckets: [{ tableId: 1, partition: null, bucket: 0, leader: '2' }, { tableId: 1, partition: null, bucket: 0, leader: '3' }] }, 'InvalidArgument', 'LeadBuckets.buckets[1] names bucket 1//0 a second time'],
    ['ForgetObjects without keys', { type: 'ForgetObjects' }, 'InvalidArgument', 'ForgetObjects.keys must be an array (missing)'],
    ['ForgetObjects whose keys are a string', { type: 'ForgetObjects', keys: 'wal/1/2/1' }, 'InvalidArgument', 'ForgetObjects.keys must be an array (got "wal/1/2/1")'],

    // RegisterNode as a takeover.
    ['a takeover of an unregistered node', { type: 'RegisterNode', nodeId: '9', expectedEpoch: 0 }, 'Fenced', 'node 9 is not registered (expected epoch 0)'],
    ['a takeover of a node already bumped', { type: 'RegisterNode', nodeId: '3', expectedEpoch: 3 }, 'Fenced', 'node 3 is at epoch 4, not 3'],

    // The coordinator fence, on each command that carries it.
    ['CreateTable from a stale coordinator', { type: 'CreateTable', coordinatorEpoch: 2, spec: validSpec, createdAtMs: 5 }, 'Fenced', 'coordinator epoch 2 is fenced: current is 3'],
    ['CreateTable from a coordinator ahead of the view', { type: 'CreateTable', coordinatorEpoch: 4, spec: validSpec, createdAtMs: 5 }, 'Fenced', 'coordinator epoch 4 is not current: current is 3'],
    ['CreateTable before any coordinator registered', { type: 'CreateTable', coordinatorEpoch: 0, spec: validSpec, createdAtMs: 5 }, 'Fenced', 'no coordinator is registered', fixtureWithoutCoordinator],
    ['a stale CreateTable with an invalid spec (the fence is checked first)', { type: 'CreateTable', coordinatorEpoch: 2, spec: { name: 'x' }, createdAtMs: 5 }, 'Fenced', 'coordinator epoch 2 is fenced'],
    ['DropTable from a stale coordinator', { type: 'DropTable', coordinatorEpoch: 2, name: 'events' }, 'Fenced', 'coordinator epoch 2 is fenced: current is 3'],
    ['DropTable before any coordinator registered', { type: 'DropTable', coordinatorEpoch: 0, name: 'events' }, 'Fenced', 'no coordinator is registered', fixtureWithoutCoordinator],
    ['CreatePartition from a stale coordinator', { type: 'CreatePartition', coordinatorEpoch: 1, table: 'orders', partition: 'p2' }, 'Fenced', 'coordinator epoch 1 is fenced: current is 3'],
    ['DropPartition from a stale coordinator', { type: 'DropPartition', coordinatorEpoch: 2, table: 'orders', partition: 'p1' }, 'Fenced', 'coordinator epoch 2 is fenced: current is 3'],
    ['LeadBucket from a stale coordinator', { type: 'LeadBucket', coordinatorEpoch: 2, tableId: 1, partition: null, bucket: 0, leader: '2' }, 'Fenced', 'coordinator epoch 2 is fenced: current is 3'],
    ['LeadBucket before any coordinator registered', { type: 'LeadBucket', coordinatorEpoch: 0, tableId: 1, partition: null, bucket: 0, leader: '2' }, 'Fenced', 'no coordinator is registered', fixtureWithoutCoordinator],

    // Names of Object.prototype members are valid names, and are not in a view that lacks them.
    ['DropTable of a table named like a prototype member', { type: 'DropTable', coordinatorEpoch: 3, name: 'toString' }, 'NotFound', "table 'toString' does not exist"],
    ['CreatePartition of a table named like a prototype member', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'constructor', partition: 'p2' }, 'NotFound', "table 'constructor' does not exist"],
    ['DropPartition of a table named __proto__', { type: 'DropPartition', coordinatorEpoch: 3, table: '__proto__', partition: 'p1' }, 'NotFound', "table '__proto__' does not exist"],
    ['a takeover of a node named like a prototype member', { type: 'RegisterNode', nodeId: 'constructor', expectedEpoch: 0 }, 'Fenced', 'node constructor is not registered'],
    ['LeadBucket to a node named like a prototype member', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: 'toString' }, 'NotFound', 'node toString is not registered'],
    ['OpenStream by a node named like a prototype member', { type: 'OpenStream', nodeId: 'valueOf', nodeEpoch: 0, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }, 'NotFound', 'node valueOf is not registered'],
    ['CloseStream by a node named like a prototype member', { type: 'CloseStream', nodeId: 'hasOwnProperty', nodeEpoch: 0, tableId: 1, partition: null, bucket: 2, streamEpoch: 4 }, 'Fenced', 'node hasOwnProperty is not registered'],

    // CreateTable and DropTable.
    ['CreateTable with an invalid spec', { type: 'CreateTable', coordinatorEpoch: 3, spec: { ...validSpec, buckets: 0 }, createdAtMs: 5 }, 'InvalidArgument', 'buckets must be an integer between 1 and 1024'],
    ['CreateTable of an existing name', { type: 'CreateTable', coordinatorEpoch: 3, spec: { ...validSpec, name: 'events' }, createdAtMs: 5 }, 'Conflict', "table 'events' already exists"],
    ['CreateTable with fewer leaders than buckets', { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 5, leaders: ['1'] }, 'InvalidArgument', 'CreateTable.leaders names 1 leaders for 2 buckets'],
    ['CreateTable with leaders for a partitioned table', { type: 'CreateTable', coordinatorEpoch: 3, spec: { ...validSpec, partition: { column: 'ts', unit: 'day' } }, createdAtMs: 5, leaders: ['1', '2'] }, 'InvalidArgument', "CreateTable.leaders is for unpartitioned tables; 'clicks' is partitioned"],
    ['CreateTable led by an unregistered node', { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 5, leaders: ['1', '9'] }, 'NotFound', 'node 9 is not registered'],
    ['CreateTable with leaders from a stale coordinator', { type: 'CreateTable', coordinatorEpoch: 2, spec: validSpec, createdAtMs: 5, leaders: ['1', '2'] }, 'Fenced', 'coordinator epoch 2 is fenced'],
    ['DropTable of a missing table', { type: 'DropTable', coordinatorEpoch: 3, name: 'ghost' }, 'NotFound', "table 'ghost' does not exist"],

    // Partitions.
    ['CreatePartition of a missing table', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'ghost', partition: 'p2' }, 'NotFound', "table 'ghost' does not exist"],
    ['CreatePartition of an unpartitioned table', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'events', partition: 'p2' }, 'InvalidArgument', "table 'events' is not partitioned"],
    ['CreatePartition of an existing partition', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1' }, 'Conflict', "partition 'p1' of table 'orders' already exists"],
    ['DropPartition of a missing table', { type: 'DropPartition', coordinatorEpoch: 3, table: 'ghost', partition: 'p1' }, 'NotFound', "table 'ghost' does not exist"],
    ['DropPartition of an unpartitioned table', { type: 'DropPartition', coordinatorEpoch: 3, table: 'events', partition: 'p1' }, 'InvalidArgument', "table 'events' is not partitioned"],
    ['DropPartition of a missing partition', { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders', partition: 'p9' }, 'NotFound', "partition 'p9' of table 'orders' does not exist"],
    ['CreatePartition whose leaders are not a list of names', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2', leaders: '1' }, 'InvalidArgument', 'CreatePartition.leaders must be absent or an array of'],
    ['CreatePartition with an empty leader name', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2', leaders: ['1', ''] }, 'InvalidArgument', 'CreatePartition.leaders must be absent or an array of'],
    ['CreatePartition with fewer leaders than buckets', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2', leaders: ['1'] }, 'InvalidArgument', 'CreatePartition.leaders names 1 leaders for 2 buckets'],
    ['CreatePartition with more leaders than buckets', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2', leaders: ['1', '2', '3'] }, 'InvalidArgument', 'CreatePartition.leaders names 3 leaders for 2 buckets'],
    ['CreatePartition led by an unregistered node', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2', leaders: ['1', '9'] }, 'NotFound', 'node 9 is not registered'],
    ['CreatePartition led by a node named like a prototype member', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2', leaders: ['toString', '1'] }, 'NotFound', 'node toString is not registered'],
    ['CreatePartition with leaders of an existing partition', { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', leaders: ['1', '2'] }, 'Conflict', "partition 'p1' of table 'orders' already exists"],
    ['CreatePartition with leaders from a stale coordinator', { type: 'CreatePartition', coordinatorEpoch: 2, table: 'orders', partition: 'p2', leaders: ['1', '2'] }, 'Fenced', 'coordinator epoch 2 is fenced'],

    // LeadBucket.
    ['LeadBucket of a bucket number past the table', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 3, leader: '2' }, 'NotFound', 'bucket 3 of table id 1 does not exist'],
    ['LeadBucket of a partitioned table without its partition', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 2, partition: null, bucket: 0, leader: '2' }, 'NotFound', 'bucket 0 of table id 2 does not exist'],
    ['LeadBucket of a missing partition', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 2, partition: 'p9', bucket: 0, leader: '2' }, 'NotFound', "bucket 0 of table id 2 partition 'p9' does not exist"],
    ['LeadBucket to an unregistered node', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '9' }, 'NotFound', 'node 9 is not registered'],
    ['LeadBucket decided on an older view', { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '2', expectedLeaderEpoch: 1 }, 'Conflict', "table 'events' bucket 0 is at leader epoch 2, not 1"],

    // OpenStream.
    ['OpenStream of a missing bucket', { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, tableId: 7, partition: null, bucket: 0, leaderEpoch: 1 }, 'NotFound', 'bucket 0 of table id 7 does not exist'],
    ['OpenStream by an unregistered node', { type: 'OpenStream', nodeId: '9', nodeEpoch: 1, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }, 'NotFound', 'node 9 is not registered'],
    ['OpenStream by a fenced incarnation of the leader', { type: 'OpenStream', nodeId: '3', nodeEpoch: 3, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }, 'Fenced', 'node 3 epoch 3 is fenced: current is 4'],
    ['OpenStream at a node epoch ahead of the view', { type: 'OpenStream', nodeId: '3', nodeEpoch: 5, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }, 'Fenced', 'node 3 epoch 5 is not current: current is 4'],
    ['OpenStream by a node that does not lead the bucket', { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }, 'Fenced', "node 1 does not lead table 'orders' partition 'p1' bucket 1: the leader is node 3"],
    ['OpenStream of a bucket without a leader', { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, leaderEpoch: 0 }, 'Fenced', "node 1 does not lead table 'orders' partition 'p1' bucket 0: it has no leader"],
    ['OpenStream at a stale leader epoch', { type: 'OpenStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 2, leaderEpoch: 4 }, 'Fenced', "leader epoch 4 is fenced: current is 5 for table 'events' bucket 2"],
    ['OpenStream at a leader epoch ahead of the view', { type: 'OpenStream', nodeId: '3', nodeEpoch: 4, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 2 }, 'Fenced', 'leader epoch 2 is not current: current is 1'],
    ['OpenStream of a stream that is already open', { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, leaderEpoch: 2 }, 'Conflict', "the stream of table 'events' bucket 0 is already open at epoch 2 by node 1"],
    ['OpenStream again at the epoch the stream was opened at', { type: 'OpenStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 1, leaderEpoch: 1 }, 'Fenced', "the stream of table 'events' bucket 1 was already opened at epoch 1: it needs a new leader epoch"],

    // CloseStream.
    ['CloseStream of a missing bucket', { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: 'p1', bucket: 0, streamEpoch: 2 }, 'NotFound', "bucket 0 of table id 1 partition 'p1' does not exist"],
    ['CloseStream of a closed stream', { type: 'CloseStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 1, streamEpoch: 1 }, 'Conflict', "the stream of table 'events' bucket 1 is not open"],
    ['CloseStream at a stale stream epoch', { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, streamEpoch: 1 }, 'Fenced', "stream epoch 1 is fenced: current is 2 for table 'events' bucket 0"],
    ['CloseStream by an unregistered node', { type: 'CloseStream', nodeId: '9', nodeEpoch: 1, tableId: 1, partition: null, bucket: 2, streamEpoch: 4 }, 'Fenced', 'node 9 is not registered'],
    ['CloseStream by the opener at its fenced node epoch', { type: 'CloseStream', nodeId: '3', nodeEpoch: 3, tableId: 1, partition: null, bucket: 2, streamEpoch: 4 }, 'Fenced', 'node 3 epoch 3 is fenced: current is 4'],
    ['CloseStream by another node while the opener is not fenced', { type: 'CloseStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 0, streamEpoch: 2 }, 'Fenced', "the stream of table 'events' bucket 0 is held by node 1 at node epoch 2, which is not fenced"],
  ];

  it.each(cases)('rejects %s', (_description, command, code, message, makeView = fixture) => {
    const view = makeView();
    const result = next(view, command);
    expect(result.outcome).toEqual({ ok: false, rejection: { code, message: expect.stringContaining(message) } });
    expect(result.view).toEqual({ ...view, seq: view.seq + 1 });
  });
});

describe('apply enforces log order as an invariant', () => {
  it.each([
    ['the same sequence twice', 10],
    ['a gap', 12],
    ['an older sequence', 3],
  ])('throws on %s instead of applying', (_description, seq) => {
    const view = fixture();
    expect(() => apply(view, seq, { type: 'RegisterCoordinator', coordinatorId: 'c2' })).toThrow(
      `invariant broken: log entry ${seq} applied to the view at 10 (expected 11)`,
    );
  });

  it('throws on a bad sequence even for a malformed command, which would otherwise be a rejection', () => {
    expect(() => apply(fixture(), 12, null as unknown as Command)).toThrow('invariant broken');
  });
});

describe('RegisterNode gives each incarnation a new epoch and fences a dead one only once', () => {
  it('registers a new node at epoch 1 with its addresses, defaulting missing ones to empty', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'RegisterNode', nodeId: '4', address: 'mink.node.4', kafka: 'h4:9092' });
    expect(outcome).toEqual({ ok: true, epoch: 1 });
    expect(view.nodes['4']).toEqual({ id: '4', epoch: 1, address: 'mink.node.4', kafka: 'h4:9092', http: '' });
    expect(view.seq).toBe(11);
    expect(view.nodes['1']).toBe(before.nodes['1']);
  });

  it('bumps a restarting node and replaces the addresses it sends, keeping those it leaves out', () => {
    const { view, outcome } = accepted(fixture(), { type: 'RegisterNode', nodeId: '1', address: 'mink.node.1b' });
    expect(outcome).toEqual({ ok: true, epoch: 3 });
    expect(view.nodes['1']).toEqual({ id: '1', epoch: 3, address: 'mink.node.1b', kafka: 'host1:9092', http: 'host1:8081' });
  });

  it('bumps a node taken over at its current epoch and keeps its addresses, whatever the command says', () => {
    const { view, outcome } = accepted(fixture(), { type: 'RegisterNode', nodeId: '3', expectedEpoch: 4, address: 'elsewhere' });
    expect(outcome).toEqual({ ok: true, epoch: 5 });
    expect(view.nodes['3']).toEqual({ ...node('3', 5) });
  });

  it('lets only the first of two takeovers of the same incarnation bump the epoch', () => {
    const first = accepted(fixture(), { type: 'RegisterNode', nodeId: '2', expectedEpoch: 1 });
    const second = next(first.view, { type: 'RegisterNode', nodeId: '2', expectedEpoch: 1 });
    expect(second.outcome).toEqual({ ok: false, rejection: { code: 'Fenced', message: 'node 2 is at epoch 2, not 1' } });
    expect(second.view.nodes['2'].epoch).toBe(2);
  });

  it('changes nothing but the node and the sequence', () => {
    const before = fixture();
    const { view } = accepted(before, { type: 'RegisterNode', nodeId: '2' });
    expect(view).toEqual({ ...before, seq: 11, nodes: { ...before.nodes, '2': { ...node('2', 2) } } });
  });
});

describe('names of Object.prototype members work as ordinary table and node names', () => {
  it('creates and drops a table named constructor', () => {
    const created = accepted(fixture(), { type: 'CreateTable', coordinatorEpoch: 3, spec: { ...validSpec, name: 'constructor' }, createdAtMs: 1 });
    expect(created.outcome).toEqual({ ok: true, tableId: 3 });
    expect(Object.keys(recordOf(created.view.tables)).sort()).toEqual(['constructor', 'events', 'orders']);
    const dropped = accepted(created.view, { type: 'DropTable', coordinatorEpoch: 3, name: 'constructor' });
    expect(dropped.outcome).toEqual({ ok: true, tableId: 3 });
    expect(Object.keys(recordOf(dropped.view.tables)).sort()).toEqual(['events', 'orders']);
    expect(Object.keys(recordOf(dropped.view.buckets)).some((id) => id.startsWith('3/'))).toBe(false);
  });

  it('registers a node named __proto__ as an own entry that survives a JSON round trip', () => {
    const { view, outcome } = accepted(fixture(), { type: 'RegisterNode', nodeId: '__proto__', address: 'mink.node.x' });
    expect(outcome).toEqual({ ok: true, epoch: 1 });
    expect(Object.getPrototypeOf(view.nodes)).toBe(Object.prototype);
    const roundTripped = JSON.parse(JSON.stringify(view)) as View;
    expect(Object.keys(roundTripped.nodes)).toEqual(['1', '2', '3', '__proto__']);
    const again = accepted(roundTripped, { type: 'RegisterNode', nodeId: '__proto__' });
    expect(again.outcome).toEqual({ ok: true, epoch: 2 });
    expect(Object.getOwnPropertyDescriptor(again.view.nodes, '__proto__')?.value).toEqual({ id: '__proto__', epoch: 2, address: 'mink.node.x', kafka: '', http: '' });
  });
});

describe('AllocateProducerId hands out each Kafka producer id once, in log order', () => {
  it.each([
    ['an empty view', () => deepFreeze(emptyView()), 0],
    ['a view that has handed out seven', () => fixture(), 7],
  ])('on %s the next id is %#', (_, viewOf, first) => {
    const before = viewOf();
    const { view, outcome } = accepted(before, { type: 'AllocateProducerId' });
    expect(outcome).toEqual({ ok: true, producerId: first });
    expect(view).toEqual({ ...before, seq: before.seq + 1, nextProducerId: first + 1 });
    const again = next(view, { type: 'AllocateProducerId' });
    expect(again.outcome).toEqual({ ok: true, producerId: first + 1 });
  });
});

describe('RegisterCoordinator makes the proposer coordinator at the next coordinator epoch', () => {
  it('starts at epoch 1 on an empty view', () => {
    const { view, outcome } = accepted(deepFreeze(emptyView()), { type: 'RegisterCoordinator', coordinatorId: 'c1' });
    expect(outcome).toEqual({ ok: true, epoch: 1 });
    expect(view).toEqual({ ...emptyView(), seq: 1, coordinator: { node: 'c1', epoch: 1 } });
  });

  it('bumps the epoch even when the same replica registers again', () => {
    const { view, outcome } = accepted(fixture(), { type: 'RegisterCoordinator', coordinatorId: 'c1' });
    expect(outcome).toEqual({ ok: true, epoch: 4 });
    expect(view.coordinator).toEqual({ node: 'c1', epoch: 4 });
  });

  it('fences the previous coordinator: its next command is rejected', () => {
    const { view } = accepted(fixture(), { type: 'RegisterCoordinator', coordinatorId: 'c2' });
    const stale = next(view, { type: 'DropTable', coordinatorEpoch: 3, name: 'events' });
    expect(stale.outcome).toEqual({ ok: false, rejection: { code: 'Fenced', message: 'coordinator epoch 3 is fenced: current is 4' } });
  });
});

describe('CreateTable adds a table with a fresh id and, unless partitioned, its leaderless buckets', () => {
  it('creates a log table with empty keys and one closed, never-opened stream per bucket', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 42 });
    expect(outcome).toEqual({ ok: true, tableId: 3 });
    const clicks: TableRecord = {
      id: 3,
      name: 'clicks',
      kind: 'log',
      columns: validSpec.columns as TableRecord['columns'],
      primaryKey: [],
      bucketKey: [],
      buckets: 2,
      properties: {},
      createdAtMs: 42,
      partitions: [],
    };
    expect(view).toEqual({
      ...before,
      seq: 11,
      tables: shardedFrom({ ...recordOf(before.tables), clicks }),
      buckets: bucketsWith(before.buckets, {
        '3//0': bucket(clicks, null, 0, null, 0, CLOSED_NEVER_OPENED),
        '3//1': bucket(clicks, null, 1, null, 0, CLOSED_NEVER_OPENED),
      }),
      nextTableId: 4,
    });
    expect('partition' in getIn(view.tables, 'clicks')!).toBe(false);
    // Records that did not change are shared with the input rather than copied.
    expect(getIn(view.buckets, '1//0')).toBe(getIn(before.buckets, '1//0'));
    expect(getIn(view.tables, 'events')).toBe(getIn(before.tables, 'events'));
  });

  it('buckets a PK table by its primary key when no bucket key is given', () => {
    const spec = { name: 'users', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], primaryKey: ['id'], buckets: 1, properties: { 'merge.engine': 'first_row' } };
    const { view } = accepted(fixture(), { type: 'CreateTable', coordinatorEpoch: 3, spec, createdAtMs: 1 });
    expect(getIn(view.tables, 'users')).toMatchObject({ kind: 'pk', primaryKey: ['id'], bucketKey: ['id'], properties: { 'merge.engine': 'first_row' } });
    expect(Object.keys(recordOf(view.buckets)).filter((id) => id.startsWith('3/'))).toEqual(['3//0']);
  });

  it('keeps an explicit bucket key', () => {
    const spec = { name: 'users', columns: [{ name: 'tenant', type: 'string' }, { name: 'id', type: 'int64' }], primaryKey: ['tenant', 'id'], bucketKey: ['tenant'], buckets: 1 };
    const { view } = accepted(fixture(), { type: 'CreateTable', coordinatorEpoch: 3, spec, createdAtMs: 1 });
    expect(getIn(view.tables, 'users')!.bucketKey).toEqual(['tenant']);
  });

  it('creates a partitioned PK table without buckets, bucketed by its key minus the partition column', () => {
    const before = fixture();
    const spec = {
      name: 'metrics',
      columns: [{ name: 'hour', type: 'timestamp' }, { name: 'host', type: 'string' }, { name: 'value', type: 'float64' }],
      primaryKey: ['hour', 'host'],
      buckets: 4,
      partition: { column: 'hour', unit: 'hour', retain: 24 },
    };
    const { view, outcome } = accepted(before, { type: 'CreateTable', coordinatorEpoch: 3, spec, createdAtMs: 7 });
    expect(outcome).toEqual({ ok: true, tableId: 3 });
    expect(getIn(view.tables, 'metrics')).toEqual({
      id: 3,
      name: 'metrics',
      kind: 'pk',
      columns: spec.columns,
      primaryKey: ['hour', 'host'],
      bucketKey: ['host'],
      buckets: 4,
      partition: { column: 'hour', unit: 'hour', retain: 24 },
      properties: {},
      createdAtMs: 7,
      partitions: [],
    });
    expect(view.buckets).toBe(before.buckets);
  });

  it('gives a table dropped and created again a new id', () => {
    const dropped = accepted(fixture(), { type: 'DropTable', coordinatorEpoch: 3, name: 'events' });
    const created = accepted(dropped.view, { type: 'CreateTable', coordinatorEpoch: 3, spec: { ...validSpec, name: 'events' }, createdAtMs: 9 });
    expect(created.outcome).toEqual({ ok: true, tableId: 3 });
    expect(Object.keys(recordOf(created.view.buckets)).sort()).toEqual(['2/p1/0', '2/p1/1', '3//0', '3//1']);
  });
});

describe('DropTable removes a table and every bucket it had', () => {
  it('drops an unpartitioned table and keeps the others', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'DropTable', coordinatorEpoch: 3, name: 'events' });
    expect(outcome).toEqual({ ok: true, tableId: 1 });
    expect(view).toEqual({
      ...before,
      seq: 11,
      tables: shardedFrom({ orders: ORDERS }),
      buckets: shardedFrom({ '2/p1/0': getIn(before.buckets, '2/p1/0')!, '2/p1/1': getIn(before.buckets, '2/p1/1')! }),
    });
  });

  it('drops a partitioned table with the buckets of all its partitions', () => {
    const withSecondPartition = accepted(fixture(), { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2' }).view;
    const { view, outcome } = accepted(withSecondPartition, { type: 'DropTable', coordinatorEpoch: 3, name: 'orders' });
    expect(outcome).toEqual({ ok: true, tableId: 2 });
    expect(Object.keys(recordOf(view.tables))).toEqual(['events']);
    expect(Object.keys(recordOf(view.buckets)).sort()).toEqual(['1//0', '1//1', '1//2']);
    expect(view.nextTableId).toBe(3);
  });
});

describe('CreatePartition and DropPartition add and remove one partition with its buckets', () => {
  /** A stream never opened, closed at the epoch floor of the partition created by the entry at sequence `seq`. */
  const neverOpenedAt = (seq: number): StreamRecord => ({ ...CLOSED_NEVER_OPENED, epoch: seq });

  it('adds a partition after the existing ones, with leaderless buckets at the epochs of its entry', () => {
    // Proves the epoch floor: the buckets of a partition created at sequence 11 start at leader and stream epoch 11.
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: '2024-01-02' });
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({
      ...before,
      seq: 11,
      tables: shardedFrom({ ...recordOf(before.tables), orders: { ...ORDERS, partitions: ['p1', '2024-01-02'] } }),
      buckets: bucketsWith(before.buckets, {
        '2/2024-01-02/0': bucket(ORDERS, '2024-01-02', 0, null, 11, neverOpenedAt(11)),
        '2/2024-01-02/1': bucket(ORDERS, '2024-01-02', 1, null, 11, neverOpenedAt(11)),
      }),
    });
  });

  it('adds a partition led by the nodes it names, each at the next leader epoch, ready to be opened', () => {
    // Proves CreatePartition.leaders mirrors CreateTable.leaders: one entry assigns the whole partition.
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: '20240102', leaders: ['3', '1'] });
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({
      ...before,
      seq: 11,
      tables: shardedFrom({ ...recordOf(before.tables), orders: { ...ORDERS, partitions: ['p1', '20240102'] } }),
      buckets: bucketsWith(before.buckets, {
        '2/20240102/0': bucket(ORDERS, '20240102', 0, '3', 12, neverOpenedAt(11)),
        '2/20240102/1': bucket(ORDERS, '20240102', 1, '1', 12, neverOpenedAt(11)),
      }),
    });
    // The named leader opens at the leader epoch the create gave, as after any LeadBucket.
    const opened = accepted(view, { type: 'OpenStream', nodeId: '3', nodeEpoch: 4, tableId: 2, partition: '20240102', bucket: 0, leaderEpoch: 12 });
    expect(opened.outcome).toEqual({ ok: true, streamEpoch: 12 });
  });

  it('leads a leaderless partition bucket with LeadBucket at the epoch after its floor', () => {
    const created = accepted(fixture(), { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2' }).view;
    const led = accepted(created, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 2, partition: 'p2', bucket: 1, leader: '2', expectedLeaderEpoch: 11 });
    expect(led.outcome).toEqual({ ok: true, leaderEpoch: 12 });
  });

  it('removes a partition and only its buckets', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1' });
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({
      ...before,
      seq: 11,
      tables: shardedFrom({ ...recordOf(before.tables), orders: { ...ORDERS, partitions: [] } }),
      buckets: shardedFrom({ '1//0': getIn(before.buckets, '1//0')!, '1//1': getIn(before.buckets, '1//1')!, '1//2': getIn(before.buckets, '1//2')! }),
    });
  });
});

describe('LeadBucket moves a bucket to a leader at the next leader epoch and leaves its stream alone', () => {
  it('re-leads a bucket whose stream is open, returning the new leader epoch', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '2' });
    expect(outcome).toEqual({ ok: true, leaderEpoch: 3 });
    expect(view).toEqual({
      ...before,
      seq: 11,
      buckets: bucketsWith(before.buckets, { '1//0': { ...getIn(before.buckets, '1//0')!, leader: '2', leaderEpoch: 3 } }),
    });
    expect(getIn(view.buckets, '1//0')!.stream).toBe(getIn(before.buckets, '1//0')!.stream);
  });

  it('gives a first leader to a partition bucket when the expected leader epoch still holds', () => {
    const { view, outcome } = accepted(fixture(), {
      type: 'LeadBucket',
      coordinatorEpoch: 3,
      tableId: 2,
      partition: 'p1',
      bucket: 0,
      leader: '1',
      expectedLeaderEpoch: 0,
    });
    expect(outcome).toEqual({ ok: true, leaderEpoch: 1 });
    expect(getIn(view.buckets, '2/p1/0')).toMatchObject({ leader: '1', leaderEpoch: 1, stream: CLOSED_NEVER_OPENED });
  });

  it('bumps the epoch when a restarted leader is led again, so it can open at a fresh epoch', () => {
    const relead = accepted(fixture(), { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 1, leader: '2' });
    expect(relead.outcome).toEqual({ ok: true, leaderEpoch: 2 });
    const open = accepted(relead.view, { type: 'OpenStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 1, leaderEpoch: 2 });
    expect(open.outcome).toEqual({ ok: true, streamEpoch: 2 });
  });
});

describe('OpenStream opens a closed stream at the leader epoch, from the current incarnation of the leader', () => {
  it('opens a never-opened stream and records the opener and its node epoch', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'OpenStream', nodeId: '3', nodeEpoch: 4, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 });
    expect(outcome).toEqual({ ok: true, streamEpoch: 1 });
    expect(view).toEqual({
      ...before,
      seq: 11,
      buckets: bucketsWith(before.buckets, { '2/p1/1': { ...getIn(before.buckets, '2/p1/1')!, stream: { state: 'open', epoch: 1, node: '3', nodeEpoch: 4, ...STORAGE_EMPTY } } }),
    });
  });

  it('opens after a takeover: the new leader closes the fenced opener stream, then opens at its leader epoch', () => {
    const closed = accepted(fixture(), { type: 'CloseStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 2, streamEpoch: 4 });
    expect(closed.outcome).toEqual({ ok: true });
    expect(getIn(closed.view.buckets, '1//2')!.stream).toEqual({ state: 'closed', epoch: 4, node: '3', nodeEpoch: 3, ...STORAGE_EMPTY });
    const opened = accepted(closed.view, { type: 'OpenStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 2, leaderEpoch: 5 });
    expect(opened.outcome).toEqual({ ok: true, streamEpoch: 5 });
    expect(getIn(opened.view.buckets, '1//2')!.stream).toEqual({ state: 'open', epoch: 5, node: '2', nodeEpoch: 1, ...STORAGE_EMPTY });
  });
});

describe('CreateTable with leaders assigns every bucket in the same entry, as a LeadBucket per bucket would', () => {
  it('gives bucket i the leader leaders[i] at leader epoch 1, with the same view the separate LeadBuckets give', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 42, leaders: ['2', '1'] });
    expect(outcome).toEqual({ ok: true, tableId: 3 });
    expect(getIn(view.buckets, '3//0')).toMatchObject({ leader: '2', leaderEpoch: 1, stream: CLOSED_NEVER_OPENED });
    expect(getIn(view.buckets, '3//1')).toMatchObject({ leader: '1', leaderEpoch: 1, stream: CLOSED_NEVER_OPENED });
    let separate = accepted(before, { type: 'CreateTable', coordinatorEpoch: 3, spec: validSpec, createdAtMs: 42 }).view;
    separate = accepted(separate, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 3, partition: null, bucket: 0, leader: '2' }).view;
    separate = accepted(separate, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 3, partition: null, bucket: 1, leader: '1' }).view;
    expect(view).toEqual({ ...separate, seq: view.seq });
  });
});

describe('LeadBuckets leads several buckets in one entry, each as its own LeadBucket would', () => {
  it('leads every bucket it may, refuses the others with the LeadBucket message, and equals one LeadBucket each', () => {
    const before = fixture();
    const buckets = [
      { tableId: 1, partition: null, bucket: 2, leader: '1', expectedLeaderEpoch: 5 },
      { tableId: 1, partition: null, bucket: 0, leader: '2', expectedLeaderEpoch: 1 },
      { tableId: 2, partition: 'p1', bucket: 0, leader: '9' },
      { tableId: 2, partition: 'p1', bucket: 1, leader: '1' },
    ];
    const { view, outcome } = accepted(before, { type: 'LeadBuckets', coordinatorEpoch: 3, buckets });
    expect(outcome).toEqual({
      ok: true,
      led: [
        { ok: true, leaderEpoch: 6 },
        { ok: false, rejection: { code: 'Conflict', message: "table 'events' bucket 0 is at leader epoch 2, not 1" } },
        { ok: false, rejection: { code: 'NotFound', message: 'node 9 is not registered' } },
        { ok: true, leaderEpoch: 2 },
      ],
    });
    let separate = before;
    for (const bucket of [buckets[0], buckets[3]]) separate = accepted(separate, { type: 'LeadBucket', coordinatorEpoch: 3, ...bucket }).view;
    expect(view).toEqual({ ...separate, seq: before.seq + 1 });
    expect(getIn(view.buckets, '1//0')).toBe(getIn(before.buckets, '1//0'));
  });
});

describe('OpenStreams opens several streams of one node in one entry, each as its own OpenStream would', () => {
  /** The fixture plus table clicks (3) with buckets 0 and 1 led by node 3 and bucket 2 by node 1, all at leader epoch 1. */
  function withClicks(): View {
    const spec = { ...validSpec, buckets: 3 };
    return deepFreeze(accepted(fixture(), { type: 'CreateTable', coordinatorEpoch: 3, spec, createdAtMs: 42, leaders: ['3', '3', '1'] }).view);
  }

  it('opens every stream the node may open, copying the view once, and gives the same view as one OpenStream each', () => {
    const before = withClicks();
    const streams = [
      { tableId: 3, partition: null, bucket: 0, leaderEpoch: 1 },
      { tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 },
      { tableId: 3, partition: null, bucket: 1, leaderEpoch: 1 },
    ];
    const { view, outcome } = accepted(before, { type: 'OpenStreams', nodeId: '3', nodeEpoch: 4, streams });
    expect(outcome).toEqual({ ok: true, opened: [{ ok: true, streamEpoch: 1 }, { ok: true, streamEpoch: 1 }, { ok: true, streamEpoch: 1 }] });
    let separate = before;
    for (const stream of streams) separate = accepted(separate, { type: 'OpenStream', nodeId: '3', nodeEpoch: 4, ...stream }).view;
    expect(view).toEqual({ ...separate, seq: before.seq + 1 });
    expect(getIn(view.buckets, '1//0')).toBe(getIn(before.buckets, '1//0'));
  });

  it('refuses each stream the fence refuses, with the OpenStream message, and still opens the others', () => {
    const before = withClicks();
    const { view, outcome } = accepted(before, {
      type: 'OpenStreams',
      nodeId: '3',
      nodeEpoch: 4,
      streams: [
        { tableId: 3, partition: null, bucket: 2, leaderEpoch: 1 },
        { tableId: 3, partition: null, bucket: 0, leaderEpoch: 2 },
        { tableId: 9, partition: null, bucket: 0, leaderEpoch: 1 },
        { tableId: 3, partition: null, bucket: 1, leaderEpoch: 1 },
      ],
    });
    expect(outcome).toEqual({
      ok: true,
      opened: [
        { ok: false, rejection: { code: 'Fenced', message: "node 3 does not lead table 'clicks' bucket 2: the leader is node 1" } },
        { ok: false, rejection: { code: 'Fenced', message: "leader epoch 2 is not current: current is 1 for table 'clicks' bucket 0" } },
        { ok: false, rejection: { code: 'NotFound', message: 'bucket 0 of table id 9 does not exist' } },
        { ok: true, streamEpoch: 1 },
      ],
    });
    expect(getIn(view.buckets, '3//0')).toBe(getIn(before.buckets, '3//0'));
    expect(getIn(view.buckets, '3//2')).toBe(getIn(before.buckets, '3//2'));
    expect(getIn(view.buckets, '3//1')!.stream).toEqual({ state: 'open', epoch: 1, node: '3', nodeEpoch: 4, ...STORAGE_EMPTY });
  });

  it('refuses every stream of a fenced incarnation and changes nothing but the sequence', () => {
    const before = withClicks();
    const { view, outcome } = accepted(before, { type: 'OpenStreams', nodeId: '3', nodeEpoch: 3, streams: [{ tableId: 3, partition: null, bucket: 0, leaderEpoch: 1 }] });
    expect(outcome).toEqual({ ok: true, opened: [{ ok: false, rejection: { code: 'Fenced', message: 'node 3 epoch 3 is fenced: current is 4' } }] });
    expect(view).toEqual({ ...before, seq: before.seq + 1 });
  });
});

describe('CloseStreams closes several streams in one entry, each as its own CloseStream would', () => {
  it('closes what the proposer may close, refuses the rest with the CloseStream message, and equals one CloseStream each', () => {
    const before = fixture();
    const streams = [
      { tableId: 1, partition: null, bucket: 2, streamEpoch: 4 },
      { tableId: 1, partition: null, bucket: 0, streamEpoch: 2 },
      { tableId: 1, partition: null, bucket: 1, streamEpoch: 1 },
    ];
    const { view, outcome } = accepted(before, { type: 'CloseStreams', nodeId: '2', nodeEpoch: 1, streams });
    expect(outcome).toEqual({
      ok: true,
      closed: [
        { ok: true },
        { ok: false, rejection: { code: 'Fenced', message: "the stream of table 'events' bucket 0 is held by node 1 at node epoch 2, which is not fenced" } },
        { ok: false, rejection: { code: 'Conflict', message: "the stream of table 'events' bucket 1 is not open" } },
      ],
    });
    const separate = accepted(before, { type: 'CloseStream', nodeId: '2', nodeEpoch: 1, ...streams[0] }).view;
    expect(view).toEqual({ ...separate, seq: before.seq + 1 });
    expect(getIn(view.buckets, '1//0')).toBe(getIn(before.buckets, '1//0'));
  });
});

describe('CloseStream closes an open stream for its opener, or for anyone once the opener is fenced', () => {
  it('closes for the opener at the node epoch it opened with, keeping epoch, node and node epoch', () => {
    const before = fixture();
    const { view, outcome } = accepted(before, { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, streamEpoch: 2 });
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({
      ...before,
      seq: 11,
      buckets: bucketsWith(before.buckets, { '1//0': { ...getIn(before.buckets, '1//0')!, stream: { state: 'closed', epoch: 2, node: '1', nodeEpoch: 2, ...STORAGE_EMPTY } } }),
    });
  });

  it('closes for the restarted opener itself, whose old incarnation is fenced', () => {
    const { view, outcome } = accepted(fixture(), { type: 'CloseStream', nodeId: '3', nodeEpoch: 4, tableId: 1, partition: null, bucket: 2, streamEpoch: 4 });
    expect(outcome).toEqual({ ok: true });
    expect(getIn(view.buckets, '1//2')!.stream.state).toBe('closed');
  });

  it('closes for another node once a takeover has registered the opener at a higher epoch', () => {
    const takeover = accepted(fixture(), { type: 'RegisterNode', nodeId: '1', expectedEpoch: 2 });
    const { outcome } = accepted(takeover.view, { type: 'CloseStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 0, streamEpoch: 2 });
    expect(outcome).toEqual({ ok: true });
  });
});

describe('apply is deterministic and never mutates its input', () => {
  it('gives equal views and outcomes for the same command on equal views, leaving the frozen input as it was', () => {
    const command = { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p2' };
    const input = fixture();
    const snapshot = JSON.stringify(input);
    const first = next(input, command);
    const second = next(fixture(), command);
    expect(JSON.stringify(first)).toBe(JSON.stringify(second));
    expect(JSON.stringify(input)).toBe(snapshot);
  });
});

// ---------------------------------------------------------------------------------------------------
// CommitWal

/** Where a range goes: a bucket's stream and the stream epoch its opener writes at. */
type StreamAddress = Pick<WalRange, 'tableId' | 'partition' | 'bucket' | 'streamEpoch'>;

/** The stream of events/0 as the fixture opened it: by node 1 at node epoch 2, stream epoch 2. */
const EVENTS_0: StreamAddress = { tableId: 1, partition: null, bucket: 0, streamEpoch: 2 };
/** The stream of orders/p1/0 as the storage fixture opened it: by node 1 at node epoch 2, stream epoch 1. */
const ORDERS_P1_0: StreamAddress = { tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1 };
/** The stream of events/2: open at stream epoch 4 by node 3 at node epoch 3, a fenced incarnation. */
const EVENTS_2: StreamAddress = { tableId: 1, partition: null, bucket: 2, streamEpoch: 4 };

/** A range of `stream` holding offsets [startOffset, endOffset); bytes default to 10 per offset from position 0. */
function range(stream: StreamAddress, startOffset: number, endOffset: number, extra: Partial<WalRange> = {}): WalRange {
  return { ...stream, startOffset, endOffset, position: 0, length: (endOffset - startOffset) * 10, ...extra };
}

/** A CommitWal of WAL object `wal/1/2/2` by node 1 at its current node epoch 2, unless `fields` say otherwise. */
function commitWal(ranges: unknown, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'CommitWal', nodeId: '1', nodeEpoch: 2, object: 'wal/1/2/2', ranges, ...fields };
}

function slice(object: string, startOffset: number, endOffset: number, position: number, length: number): DataSlice {
  return { object, startOffset, endOffset, position, length };
}

/** A stream's writers map holding the writers of a flat record. */
function writersOf(writers: Record<string, WriterState>): StreamRecord['writers'] {
  return shardedFrom(writers, WRITER_SHARDS);
}

const EVENTS_0_COMMITTED = slice('wal/1/2/1', 0, 10, 0, 400);
const ORDERS_P1_0_COMMITTED = slice('wal/1/2/1', 0, 5, 400, 200);

/**
 * The fixture after node 1 has written: at sequence 10 like the fixture, but
 * - events/0 (open at stream epoch 2 by node 1 at node epoch 2) holds [0, 10) in WAL object wal/1/2/1,
 *   committed by writer w1 with sequence 0;
 * - orders/p1/0 is led by node 1 at leader epoch 1 and its stream open at 1 by node 1 at node epoch 2, so
 *   node 1 holds two open streams; it holds [0, 5) at bytes 400..600 of the same object;
 * - the object registry counts the two slices pointing into wal/1/2/1.
 * The first test below checks that LeadBucket, OpenStream and one CommitWal build exactly this.
 */
function storageFixture(): View {
  const base = fixture();
  const events0 = getIn(base.buckets, '1//0')!;
  const orders0 = getIn(base.buckets, '2/p1/0');
  return deepFreeze({
    ...base,
    buckets: bucketsWith(base.buckets, {
      '1//0': {
        ...events0,
        stream: { ...events0.stream, endOffset: 10, slices: [EVENTS_0_COMMITTED], writers: writersOf({ w1: { seq: 0, baseOffset: 0, count: 10 } }) },
      },
      '2/p1/0': bucket(ORDERS, 'p1', 0, '1', 1, {
        state: 'open',
        epoch: 1,
        node: '1',
        nodeEpoch: 2,
        startOffset: 0,
        endOffset: 5,
        slices: [ORDERS_P1_0_COMMITTED],
        writers: NO_WRITERS,
      }),
    }),
    objects: shardedFrom({ 'wal/1/2/1': { references: 2, bytes: 600 } }),
  });
}

/** The storage fixture after a takeover registered node 1 at epoch 3: its incarnation at 2 is a zombie. */
function storageFixtureAfterTakeoverOfNode1(): View {
  return deepFreeze(accepted(storageFixture(), { type: 'RegisterNode', nodeId: '1', expectedEpoch: 2 }).view);
}

/** `view` with the given garbage. */
function withGarbage(view: View, garbage: Record<string, GarbageRecord>): View {
  return deepFreeze({ ...view, garbage: shardedFrom(garbage) });
}

/** The storage fixture with the given changes to the stream of events/0. */
function withEvents0Stream(view: View, changes: Partial<StreamRecord>): View {
  const record = getIn(view.buckets, '1//0')!;
  return { ...view, buckets: bucketsWith(view.buckets, { '1//0': { ...record, stream: { ...record.stream, ...changes } } }) };
}

describe('CommitWal: the storage fixture is what CommitWal builds, so the tests below start from real states', () => {
  it('builds the storage fixture from the fixture by leading and opening orders/p1/0, then one commit of two streams', () => {
    let view = fixture();
    view = accepted(view, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 2, partition: 'p1', bucket: 0, leader: '1' }).view;
    view = accepted(view, { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, leaderEpoch: 1 }).view;
    const { view: built, outcome } = accepted(
      deepFreeze(view),
      commitWal(
        [
          range(EVENTS_0, 0, 10, { position: 0, length: 400, writer: { id: 'w1', seq: 0 } }),
          range(ORDERS_P1_0, 0, 5, { position: 400, length: 200 }),
        ],
        { object: 'wal/1/2/1' },
      ),
    );
    expect(outcome).toEqual({ ok: true });
    expect(built).toEqual({ ...storageFixture(), seq: 13 });
  });
});

describe('CommitWal appends the ranges of an uploaded WAL object to their streams when every fence holds', () => {
  type Case = [
    description: string,
    command: Record<string, unknown>,
    expectedStreams: Record<string, Partial<StreamRecord>>,
    expectedObjects: Record<string, ObjectRecord>,
    view?: () => View,
  ];
  const FIXTURE_OBJECTS = { 'wal/1/2/1': { references: 2, bytes: 600 } };
  const cases: Case[] = [
    [
      'one range without a writer: the end advances, the slice is appended, the writers stay',
      commitWal([range(EVENTS_0, 10, 14, { position: 0, length: 160 })]),
      { '1//0': { endOffset: 14, slices: [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 14, 0, 160)] } },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: 1, bytes: 160 } },
    ],
    [
      'a transactional batch and its abort marker: the transaction opens at the batch and is remembered as aborted up to the marker',
      commitWal([
        range(EVENTS_0, 10, 12, { position: 0, length: 20, transaction: { producerId: 7, producerEpoch: 0 } }),
        range(EVENTS_0, 12, 13, { position: 20, length: 10, transaction: { producerId: 7, producerEpoch: 1, marker: 'abort' } }),
      ]),
      {
        '1//0': {
          endOffset: 13,
          slices: [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 12, 0, 20), slice('wal/1/2/2', 12, 13, 20, 10)],
          transactions: { open: {}, aborted: [{ producerId: 7, firstOffset: 10, lastOffset: 12 }], markerEpochs: { '7': 1 } },
        },
      },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: 2, bytes: 30 } },
    ],
    [
      'one range of a new writer: the writer is remembered next to the others',
      commitWal([range(EVENTS_0, 10, 14, { position: 32, length: 160, writer: { id: 'w2', seq: 3 } })]),
      {
        '1//0': {
          endOffset: 14,
          slices: [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 14, 32, 160)],
          writers: writersOf({ w1: { seq: 0, baseOffset: 0, count: 10 }, w2: { seq: 3, baseOffset: 10, count: 4 } }),
        },
      },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: 1, bytes: 192 } },
    ],
    [
      "the next batch of a remembered writer: it becomes the writer's last batch, the one before is kept as earlier",
      commitWal([range(EVENTS_0, 10, 14, { writer: { id: 'w1', seq: 1 } })]),
      {
        '1//0': {
          endOffset: 14,
          slices: [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 14, 0, 40)],
          writers: writersOf({ w1: { seq: 1, baseOffset: 10, count: 4, earlier: [{ seq: 0, baseOffset: 0, count: 10 }] } }),
        },
      },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: 1, bytes: 40 } },
    ],
    [
      "two ranges of one stream, the second starting at the first's end",
      commitWal([range(EVENTS_0, 10, 12, { position: 0, length: 80 }), range(EVENTS_0, 12, 15, { position: 80, length: 120 })]),
      { '1//0': { endOffset: 15, slices: [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 12, 0, 80), slice('wal/1/2/2', 12, 15, 80, 120)] } },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: 2, bytes: 200 } },
    ],
    [
      'two ranges of one stream by one writer: the second batch is the one remembered',
      commitWal([range(EVENTS_0, 10, 12, { writer: { id: 'w2', seq: 1 } }), range(EVENTS_0, 12, 15, { position: 20, writer: { id: 'w2', seq: 2 } })]),
      {
        '1//0': {
          endOffset: 15,
          slices: [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 12, 0, 20), slice('wal/1/2/2', 12, 15, 20, 30)],
          writers: writersOf({ w1: { seq: 0, baseOffset: 0, count: 10 }, w2: { seq: 2, baseOffset: 12, count: 3, earlier: [{ seq: 1, baseOffset: 10, count: 2 }] } }),
        },
      },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: 2, bytes: 50 } },
    ],
    [
      `a writer's batches beyond LIMITS.writerBatchesRemembered (${LIMITS.writerBatchesRemembered}): the oldest is forgotten`,
      commitWal(
        Array.from({ length: LIMITS.writerBatchesRemembered + 1 }, (_, index) =>
          range(EVENTS_0, 10 + index, 11 + index, { position: index * 10, length: 10, writer: { id: 'w1', seq: 1 + index } }),
        ),
      ),
      {
        '1//0': {
          endOffset: 11 + LIMITS.writerBatchesRemembered,
          slices: [
            EVENTS_0_COMMITTED,
            ...Array.from({ length: LIMITS.writerBatchesRemembered + 1 }, (_, index) => slice('wal/1/2/2', 10 + index, 11 + index, index * 10, 10)),
          ],
          writers: writersOf({
            w1: {
              seq: 1 + LIMITS.writerBatchesRemembered,
              baseOffset: 10 + LIMITS.writerBatchesRemembered,
              count: 1,
              earlier: Array.from({ length: LIMITS.writerBatchesRemembered - 1 }, (_, index) => ({
                seq: LIMITS.writerBatchesRemembered - index,
                baseOffset: 9 + LIMITS.writerBatchesRemembered - index,
                count: 1,
              })),
            },
          }),
        },
      },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: LIMITS.writerBatchesRemembered + 1, bytes: LIMITS.writerBatchesRemembered * 10 + 10 } },
    ],
    [
      'ranges of two streams of the proposer, each at its own committed end',
      commitWal([range(EVENTS_0, 10, 12, { position: 0, length: 80 }), range(ORDERS_P1_0, 5, 9, { position: 80, length: 50, writer: { id: 'w1', seq: 9 } })]),
      {
        '1//0': { endOffset: 12, slices: [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 12, 0, 80)] },
        '2/p1/0': { endOffset: 9, slices: [ORDERS_P1_0_COMMITTED, slice('wal/1/2/2', 5, 9, 80, 50)], writers: writersOf({ w1: { seq: 9, baseOffset: 5, count: 4 } }) },
      },
      { ...FIXTURE_OBJECTS, 'wal/1/2/2': { references: 2, bytes: 130 } },
    ],
    [
      'the first range of a stream that holds nothing yet, at offset 0',
      commitWal([range(EVENTS_0, 0, 3, { position: 5, length: 7 })], { object: 'wal/1/2/9' }),
      { '1//0': { endOffset: 3, slices: [slice('wal/1/2/9', 0, 3, 5, 7)] } },
      { 'wal/1/2/9': { references: 1, bytes: 12 } },
      fixture,
    ],
    [
      'a second object under a key already registered: its references add up, one per slice',
      commitWal([range(EVENTS_0, 10, 12, { position: 600, length: 80 })], { object: 'wal/1/2/1' }),
      { '1//0': { endOffset: 12, slices: [EVENTS_0_COMMITTED, slice('wal/1/2/1', 10, 12, 600, 80)] } },
      { 'wal/1/2/1': { references: 3, bytes: 680 } },
    ],
  ];

  it.each(cases)('accepts %s', (_description, command, expectedStreams, expectedObjects, makeView = storageFixture) => {
    const before = makeView();
    const { view, outcome } = accepted(before, command);
    expect(outcome).toEqual({ ok: true });
    const changedBuckets: Record<string, BucketRecord> = {};
    for (const [id, changes] of Object.entries(expectedStreams)) {
      changedBuckets[id] = { ...getIn(before.buckets, id)!, stream: { ...getIn(before.buckets, id)!.stream, ...changes } };
    }
    expect(view).toEqual({ ...before, seq: before.seq + 1, buckets: bucketsWith(before.buckets, changedBuckets), objects: shardedFrom(expectedObjects) });
    // Buckets the command did not name are shared with the input, not copied.
    for (const id of Object.keys(recordOf(before.buckets))) {
      if (!(id in expectedStreams)) expect(getIn(view.buckets, id)).toBe(getIn(before.buckets, id));
    }
  });

  it(`accepts exactly LIMITS.walRangesPerObjectMax (${LIMITS.walRangesPerObjectMax}) ranges in one object`, () => {
    const ranges = Array.from({ length: LIMITS.walRangesPerObjectMax }, (_, index) => range(EVENTS_0, 10 + index, 11 + index, { position: index * 10 }));
    const { view, outcome } = accepted(storageFixture(), commitWal(ranges));
    expect(outcome).toEqual({ ok: true });
    const stream = getIn(view.buckets, '1//0')!.stream;
    expect(stream.endOffset).toBe(10 + LIMITS.walRangesPerObjectMax);
    expect(stream.slices).toHaveLength(1 + LIMITS.walRangesPerObjectMax);
    expect(stream.slices[LIMITS.walRangesPerObjectMax]).toEqual(
      slice('wal/1/2/2', 9 + LIMITS.walRangesPerObjectMax, 10 + LIMITS.walRangesPerObjectMax, (LIMITS.walRangesPerObjectMax - 1) * 10, 10),
    );
  });
});

describe('CommitWal rejects the whole command, changing nothing but the sequence, when any fence or range fails', () => {
  type Case = [description: string, command: Record<string, unknown>, code: Rejection['code'], message: string, view?: () => View];
  const next10 = range(EVENTS_0, 10, 12);
  const malformedRange = (changes: Record<string, unknown>) => commitWal([{ ...next10, ...changes }]);
  const withoutPartition = (() => {
    const { partition: _partition, ...rest } = next10;
    return rest;
  })();
  const cases: Case[] = [
    // The proposer's node fence.
    ['a commit by an unregistered node', commitWal([next10], { nodeId: '9', nodeEpoch: 1 }), 'Fenced', 'node 9 is not registered'],
    ['a commit by a node named like a prototype member', commitWal([next10], { nodeId: 'constructor', nodeEpoch: 0 }), 'Fenced', 'node constructor is not registered'],
    ['a commit from an older incarnation (stale node epoch)', commitWal([next10], { nodeEpoch: 1 }), 'Fenced', 'node 1 epoch 1 is fenced: current is 2'],
    ['a commit at a node epoch ahead of the view', commitWal([next10], { nodeEpoch: 3 }), 'Fenced', 'node 1 epoch 3 is not current: current is 2'],
    ['a commit by a zombie whose node was taken over', commitWal([next10]), 'Fenced', 'node 1 epoch 2 is fenced: current is 3', storageFixtureAfterTakeoverOfNode1],
    ['a stale commit with no ranges (the fence is checked first)', commitWal([], { nodeEpoch: 1 }), 'Fenced', 'node 1 epoch 1 is fenced'],

    // The shape of the command and its ranges.
    ['a commit without ranges', commitWal([]), 'InvalidArgument', 'CommitWal.ranges must not be empty'],
    [
      `a commit of LIMITS.walRangesPerObjectMax + 1 ranges`,
      commitWal(Array.from({ length: LIMITS.walRangesPerObjectMax + 1 }, (_, index) => range(EVENTS_0, 10 + index, 11 + index))),
      'InvalidArgument',
      `CommitWal holds ${LIMITS.walRangesPerObjectMax + 1} ranges: at most ${LIMITS.walRangesPerObjectMax}`,
    ],
    ['a commit whose ranges are not a list', commitWal(next10), 'InvalidArgument', 'CommitWal.ranges must be an array'],
    ['a commit without an object key', commitWal([next10], { object: '' }), 'InvalidArgument', 'CommitWal.object must be a non-empty string'],
    ['a range that is null', commitWal([null]), 'InvalidArgument', 'CommitWal.ranges[0]: must be an object'],
    ['a range that is a list', commitWal([[1, 2]]), 'InvalidArgument', 'CommitWal.ranges[0]: must be an object'],
    ['a range with a negative start', malformedRange({ startOffset: -1 }), 'InvalidArgument', 'CommitWal.ranges[0]: startOffset must be a non-negative integer'],
    ['a range with a fractional end', malformedRange({ endOffset: 11.5 }), 'InvalidArgument', 'CommitWal.ranges[0]: endOffset must be a non-negative integer'],
    ['a range with a negative position', malformedRange({ position: -8 }), 'InvalidArgument', 'CommitWal.ranges[0]: position must be a non-negative integer'],
    ['a range with a negative length', malformedRange({ length: -1 }), 'InvalidArgument', 'CommitWal.ranges[0]: length must be a non-negative integer'],
    ['a range with a string stream epoch', malformedRange({ streamEpoch: '2' }), 'InvalidArgument', 'CommitWal.ranges[0]: streamEpoch must be a non-negative integer'],
    ['a range without a bucket', malformedRange({ bucket: undefined }), 'InvalidArgument', 'CommitWal.ranges[0]: bucket must be a non-negative integer'],
    ['a range that ends where it starts', malformedRange({ startOffset: 10, endOffset: 10 }), 'InvalidArgument', 'CommitWal.ranges[0]: endOffset must be greater than startOffset'],
    ['a range that ends before it starts', malformedRange({ startOffset: 10, endOffset: 9 }), 'InvalidArgument', 'CommitWal.ranges[0]: endOffset must be greater than startOffset'],
    ['a range of zero bytes', malformedRange({ length: 0 }), 'InvalidArgument', 'CommitWal.ranges[0]: length must be positive'],
    ['a range without a partition (null is required for none)', commitWal([withoutPartition]), 'InvalidArgument', 'CommitWal.ranges[0]: partition must be null or'],
    ['a range with a slash in the partition', malformedRange({ partition: 'p1/x' }), 'InvalidArgument', 'CommitWal.ranges[0]: partition must be null or'],
    ['a range whose writer is null', malformedRange({ writer: null }), 'InvalidArgument', 'CommitWal.ranges[0]: writer must be {id: a non-empty string, seq: a non-negative integer}'],
    ['a range whose writer has an empty id', malformedRange({ writer: { id: '', seq: 1 } }), 'InvalidArgument', 'CommitWal.ranges[0]: writer must be'],
    ['a range whose writer id is a number', malformedRange({ writer: { id: 7, seq: 1 } }), 'InvalidArgument', 'CommitWal.ranges[0]: writer must be'],
    ['a range whose writer id is too long', malformedRange({ writer: { id: 'w'.repeat(LIMITS.nameLengthMax + 1), seq: 1 } }), 'InvalidArgument', 'CommitWal.ranges[0]: writer must be'],
    ['a range whose writer has a negative sequence', malformedRange({ writer: { id: 'w1', seq: -1 } }), 'InvalidArgument', 'CommitWal.ranges[0]: writer must be'],
    ['a range whose writer has no sequence', malformedRange({ writer: { id: 'w1' } }), 'InvalidArgument', 'CommitWal.ranges[0]: writer must be'],
    ['a range whose transaction names no producer', malformedRange({ transaction: { producerEpoch: 0 } }), 'InvalidArgument', 'CommitWal.ranges[0]: transaction.producerId must be a non-negative integer'],
    ['a range whose transaction marker is neither', malformedRange({ transaction: { producerId: 7, producerEpoch: 0, marker: 'maybe' } }), 'InvalidArgument', "CommitWal.ranges[0]: transaction.marker must be absent, 'commit' or 'abort'"],
    ['a malformed second range after a valid first', commitWal([next10, range(EVENTS_0, 12, 12)]), 'InvalidArgument', 'CommitWal.ranges[1]: endOffset must be greater than startOffset'],

    // The bucket must exist.
    ['a range of a missing table', commitWal([{ ...next10, tableId: 7 }]), 'NotFound', 'bucket 0 of table id 7 does not exist'],
    ['a range of a missing partition', commitWal([range(ORDERS_P1_0, 5, 6, { partition: 'p9' })]), 'NotFound', "bucket 0 of table id 2 partition 'p9' does not exist"],
    ['a range of a partitioned table without its partition', commitWal([range(ORDERS_P1_0, 5, 6, { partition: null })]), 'NotFound', 'bucket 0 of table id 2 does not exist'],
    ['a range of a missing bucket after a valid first', commitWal([next10, { ...next10, bucket: 3 }]), 'NotFound', 'bucket 3 of table id 1 does not exist'],

    // The stream must be open by the proposer at its node epoch, at the range's stream epoch.
    ['a range of a closed stream, even by its last opener at its epochs', commitWal([range(EVENTS_0, 0, 1, { bucket: 1, streamEpoch: 1 })], { nodeId: '2', nodeEpoch: 1 }), 'Fenced', "the stream of table 'events' bucket 1 is not open by node 2 at node epoch 1"],
    ['a range of a stream never opened, by its leader', commitWal([range(ORDERS_P1_0, 0, 1, { bucket: 1, streamEpoch: 0 })], { nodeId: '3', nodeEpoch: 4 }), 'Fenced', "the stream of table 'orders' partition 'p1' bucket 1 is not open by node 3 at node epoch 4"],
    ['a range of a stream open by another node', commitWal([next10], { nodeId: '2', nodeEpoch: 1 }), 'Fenced', "the stream of table 'events' bucket 0 is not open by node 2 at node epoch 1"],
    ['a range of a stream open by another node, from the leader of its bucket', commitWal([range(EVENTS_2, 0, 1)], { nodeId: '2', nodeEpoch: 1 }), 'Fenced', "the stream of table 'events' bucket 2 is not open by node 2 at node epoch 1"],
    ['a range of a stream this node opened at an older node epoch', commitWal([range(EVENTS_2, 0, 1)], { nodeId: '3', nodeEpoch: 4 }), 'Fenced', "the stream of table 'events' bucket 2 is not open by node 3 at node epoch 4"],
    ['a range at a stale stream epoch', commitWal([{ ...next10, streamEpoch: 1 }]), 'Fenced', "stream epoch 1 is fenced: current is 2 for table 'events' bucket 0"],
    ['a range at a stream epoch ahead of the view', commitWal([{ ...next10, streamEpoch: 3 }]), 'Fenced', "stream epoch 3 is not current: current is 2 for table 'events' bucket 0"],

    // The range must start at the committed end: commits of one stream apply in order.
    ['a range leaving a gap after the committed end', commitWal([range(EVENTS_0, 11, 15)]), 'Conflict', "range [11, 15) of table 'events' bucket 0 does not start at the committed end 10"],
    ['a range overlapping the committed end', commitWal([range(EVENTS_0, 9, 12)]), 'Conflict', "range [9, 12) of table 'events' bucket 0 does not start at the committed end 10"],
    ['a range committed again (a retried CommitWal that applied already)', commitWal([range(EVENTS_0, 0, 10)]), 'Conflict', "range [0, 10) of table 'events' bucket 0 does not start at the committed end 10"],
    ['a second range of one stream leaving a gap after the first', commitWal([range(EVENTS_0, 10, 12), range(EVENTS_0, 13, 15)]), 'Conflict', "range [13, 15) of table 'events' bucket 0 does not start at the committed end 12"],
    ['a second range of one stream overlapping the first', commitWal([range(EVENTS_0, 10, 12), range(EVENTS_0, 11, 15)]), 'Conflict', "range [11, 15) of table 'events' bucket 0 does not start at the committed end 12"],
    ['the same range twice', commitWal([range(EVENTS_0, 10, 12), range(EVENTS_0, 10, 12)]), 'Conflict', "range [10, 12) of table 'events' bucket 0 does not start at the committed end 12"],
    ['two ranges of one stream listed out of offset order', commitWal([range(EVENTS_0, 12, 15), range(EVENTS_0, 10, 12)]), 'Conflict', "range [12, 15) of table 'events' bucket 0 does not start at the committed end 10"],

    // All or nothing: a valid first range of one stream is not committed when a range of another fails.
    ['a valid range, then one of another stream at a stale stream epoch', commitWal([next10, range(ORDERS_P1_0, 5, 6, { streamEpoch: 0 })]), 'Fenced', "stream epoch 0 is fenced: current is 1 for table 'orders' partition 'p1' bucket 0"],
    ['a valid range, then one of another stream leaving a gap', commitWal([next10, range(ORDERS_P1_0, 6, 8)]), 'Conflict', "range [6, 8) of table 'orders' partition 'p1' bucket 0 does not start at the committed end 5"],
    ['a valid range, then one of a stream open by another node', commitWal([next10, range(EVENTS_2, 0, 1)]), 'Fenced', "the stream of table 'events' bucket 2 is not open by node 1 at node epoch 2"],
    ['valid ranges of two streams, then a third range of the first that overlaps', commitWal([next10, range(ORDERS_P1_0, 5, 6), range(EVENTS_0, 10, 11)]), 'Conflict', "range [10, 11) of table 'events' bucket 0 does not start at the committed end 12"],

    // An object awaiting deletion never gets a slice again, or the collector would delete committed data.
    ['a commit of an object awaiting deletion', commitWal([next10], { object: 'wal/1/2/0' }), 'Conflict', 'object wal/1/2/0 is awaiting deletion', () => withGarbage(storageFixture(), { 'wal/1/2/0': { unreferencedAtMs: 1 } })],
  ];

  it.each(cases)('rejects %s', (_description, command, code, message, makeView = storageFixture) => {
    const view = makeView();
    const result = next(view, command);
    expect(result.outcome).toEqual({ ok: false, rejection: { code, message: expect.stringContaining(message) } });
    expect(result.view).toEqual({ ...view, seq: view.seq + 1 });
    // Not even a copy: the buckets of the input are the buckets of the result.
    expect(result.view.buckets).toBe(view.buckets);
  });
});

describe('CommitWal remembers at most LIMITS.writersPerStreamMax writers per stream, forgetting the oldest batch first', () => {
  const WRITERS_MAX = LIMITS.writersPerStreamMax;
  const STREAM_END = 10_000;

  /** The writers events/0 remembers in `view`, as a flat record. */
  const rememberedOf = (view: View): Record<string, WriterState> => recordOf(getIn(view.buckets, '1//0')!.stream.writers);

  /**
   * The storage fixture with events/0 at end 10 000 (one slice) remembering `count` writers: the given
   * ones, in that insertion order, then fillers `filler-N` whose batches are newer than every given one.
   */
  function withRememberedWriters(given: [id: string, baseOffset: number][], count: number): View {
    const writers: Record<string, WriterState> = {};
    for (const [id, baseOffset] of given) writers[id] = { seq: 0, baseOffset, count: 1 };
    for (let index = 0; Object.keys(writers).length < count; index++) writers[`filler-${index}`] = { seq: 0, baseOffset: 5_000 + index, count: 1 };
    return deepFreeze(withEvents0Stream(storageFixture(), { endOffset: STREAM_END, slices: [slice('wal/1/2/1', 0, STREAM_END, 0, 99_999)], writers: writersOf(writers) }));
  }

  /** Commits one batch of writer `id` at the end of events/0 and returns the writers remembered after it. */
  function commitBatchOf(view: View, id: string, seq = 1): Record<string, WriterState> {
    return rememberedOf(accepted(view, commitWal([range(EVENTS_0, STREAM_END, STREAM_END + 2, { writer: { id, seq } })])).view);
  }

  type Case = [description: string, given: [id: string, baseOffset: number][], evicted: string];
  const cases: Case[] = [
    ['the writer with the smallest base offset, wherever it sits in the map', [['late', 900], ['oldest', 3], ['middle', 40]], 'oldest'],
    ['the smaller id on a tie of base offsets, inserted second', [['b', 7], ['a', 7], ['c', 8]], 'a'],
    ['the smaller id on a tie of base offsets, inserted first', [['a', 7], ['b', 7], ['c', 8]], 'a'],
    ['the oldest writer even when integer-like ids are listed before it', [['zeta', 1], ['7', 5], ['10', 2]], 'zeta'],
    ['by offset, not by id: a large id with the smallest base offset', [['aaa', 9], ['zzz', 8]], 'zzz'],
  ];

  it.each(cases)('evicts %s when a new writer pushes the count past the bound', (_description, given, evicted) => {
    const before = withRememberedWriters(given, WRITERS_MAX);
    const writers = commitBatchOf(before, 'newcomer');
    const expectedIds = [...Object.keys(rememberedOf(before)).filter((id) => id !== evicted), 'newcomer'].sort();
    expect(Object.keys(writers).sort()).toEqual(expectedIds);
    expect(writers.newcomer).toEqual({ seq: 1, baseOffset: STREAM_END, count: 2 });
    for (const id of expectedIds) if (id !== 'newcomer') expect(writers[id]).toEqual(rememberedOf(before)[id]);
  });

  it('evicts the same writer whatever the order the map lists the writers in', () => {
    const given: [string, number][] = [['b', 7], ['a', 7], ['zeta', 7], ['7', 7], ['late', 70]];
    const evictedIn = (order: [string, number][]) => {
      const writers = commitBatchOf(withRememberedWriters(order, WRITERS_MAX), 'newcomer');
      return order.map(([id]) => id).filter((id) => !(id in writers));
    };
    const orders = [given, [...given].reverse(), [given[2], given[0], given[4], given[3], given[1]]];
    expect(orders.map(evictedIn)).toEqual([['7'], ['7'], ['7']]);
  });

  it.each([
    ['a writer already remembered commits again at the bound', WRITERS_MAX, 'a'],
    ['a new writer fills the last free place', WRITERS_MAX - 1, 'newcomer'],
  ])('evicts nobody when %s', (_description, count, writer) => {
    const before = withRememberedWriters([['a', 1], ['b', 2]], count);
    const writers = commitBatchOf(before, writer, 5);
    expect(Object.keys(writers).sort()).toEqual([...new Set([...Object.keys(rememberedOf(before)), writer])].sort());
    // A remembered writer keeps its previous batch as earlier; a new one has none.
    const earlier = writer === 'a' ? { earlier: [{ seq: 0, baseOffset: 1, count: 1 }] } : {};
    expect(writers[writer]).toEqual({ seq: 5, baseOffset: STREAM_END, count: 2, ...earlier });
    expect(writers.b).toEqual({ seq: 0, baseOffset: 2, count: 1 });
  });

  it.each([
    ['a remembered writer commits again', 'filler-3', [] as string[]],
    ['a new writer evicts the oldest at the bound', 'newcomer', ['oldest']],
  ])('copies only the shards of the writers it changes when %s', (_description, writer, evicted) => {
    // Proves what keeps a commit's cost independent of how many writers a stream remembers: the other shards are shared.
    const before = withRememberedWriters([['oldest', 1]], WRITERS_MAX);
    const after = accepted(before, commitWal([range(EVENTS_0, STREAM_END, STREAM_END + 2, { writer: { id: writer, seq: 9 } })])).view;
    const [old, next] = [before, after].map((view) => getIn(view.buckets, '1//0')!.stream.writers);
    const touched = new Set([writer, ...evicted].map((id) => shardOf(id, WRITER_SHARDS)));
    expect(next!.shards).toHaveLength(WRITER_SHARDS);
    next!.shards.forEach((shard, index) => (touched.has(index) ? expect(shard).not.toBe(old!.shards[index]) : expect(shard).toBe(old!.shards[index])));
    expect(next!.size).toBe(WRITERS_MAX);
    expect(getIn(next!, writer)).toEqual(expect.objectContaining({ seq: 9, baseOffset: STREAM_END, count: 2 }));
    for (const id of evicted) expect(getIn(next!, id)).toBeUndefined();
  });

  it(`forgets the first of LIMITS.writersPerStreamMax + 1 writers that commit one after another`, () => {
    let view = fixture();
    for (let index = 0; index <= WRITERS_MAX; index++) {
      view = accepted(view, commitWal([range(EVENTS_0, index, index + 1, { writer: { id: `writer-${index}`, seq: index } })])).view;
    }
    const writers = rememberedOf(view);
    expect(Object.keys(writers)).toHaveLength(WRITERS_MAX);
    expect(writers['writer-0']).toBeUndefined();
    expect(writers['writer-1']).toEqual({ seq: 1, baseOffset: 1, count: 1 });
    expect(writers[`writer-${WRITERS_MAX}`]).toEqual({ seq: WRITERS_MAX, baseOffset: WRITERS_MAX, count: 1 });
    expect(getIn(view.buckets, '1//0')!.stream.endOffset).toBe(WRITERS_MAX + 1);
  });

  it('keeps writer ids named like prototype members as own entries', () => {
    const { view } = accepted(storageFixture(), commitWal([range(EVENTS_0, 10, 11, { writer: { id: '__proto__', seq: 4 } }), range(EVENTS_0, 11, 12, { writer: { id: 'constructor', seq: 5 } })]));
    const remembered = getIn(view.buckets, '1//0')!.stream.writers;
    for (const shard of remembered.shards) expect(Object.getPrototypeOf(shard)).toBeNull();
    const writers = JSON.parse(JSON.stringify(recordOf(remembered))) as Record<string, WriterState>;
    expect(Object.keys(writers).sort()).toEqual(['__proto__', 'constructor', 'w1']);
    expect(Object.getOwnPropertyDescriptor(writers, '__proto__')?.value).toEqual({ seq: 4, baseOffset: 10, count: 1 });
  });
});

describe('CommitWal: a stream closed and opened again continues at its committed end', () => {
  const closeByOpener = { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 1, partition: null, bucket: 0, streamEpoch: 2 };
  type Case = [description: string, handover: Record<string, unknown>[], newOpener: { nodeId: string; nodeEpoch: number }];
  const cases: Case[] = [
    [
      'closed by its opener and moved to node 2',
      [closeByOpener, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '2' }],
      { nodeId: '2', nodeEpoch: 1 },
    ],
    [
      'taken over from a dead node 1 by node 2',
      [
        { type: 'RegisterNode', nodeId: '1', expectedEpoch: 2 },
        { type: 'CloseStream', nodeId: '2', nodeEpoch: 1, tableId: 1, partition: null, bucket: 0, streamEpoch: 2 },
        { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '2' },
      ],
      { nodeId: '2', nodeEpoch: 1 },
    ],
    [
      'reopened by node 1 after it restarted',
      [
        { type: 'RegisterNode', nodeId: '1' },
        { type: 'CloseStream', nodeId: '1', nodeEpoch: 3, tableId: 1, partition: null, bucket: 0, streamEpoch: 2 },
        { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '1' },
      ],
      { nodeId: '1', nodeEpoch: 3 },
    ],
  ];

  it.each(cases)('keeps end, slices and writers when %s, and fences every commit but the next one of the new opener', (_description, handover, newOpener) => {
    const before = storageFixture();
    const committed = getIn(before.buckets, '1//0')!.stream;
    let view = before;
    for (const command of handover) view = accepted(view, command).view;
    expect(getIn(view.buckets, '1//0')!.stream).toEqual({ ...committed, state: 'closed' });
    view = deepFreeze(
      accepted(view, { type: 'OpenStream', ...newOpener, tableId: 1, partition: null, bucket: 0, leaderEpoch: 3 }).view,
    );
    expect(getIn(view.buckets, '1//0')!.stream).toEqual({ ...committed, state: 'open', epoch: 3, node: newOpener.nodeId, nodeEpoch: newOpener.nodeEpoch });

    const reopened = { ...EVENTS_0, streamEpoch: 3 };
    const attempts = [
      ['the old opener at the old epochs', commitWal([range(EVENTS_0, 10, 12)])],
      ['the new opener from offset 0', commitWal([range(reopened, 0, 2)], newOpener)],
      ['the new opener at the old stream epoch', commitWal([range(EVENTS_0, 10, 12)], newOpener)],
    ] as const;
    expect(attempts.map(([who, command]) => [who, next(view, command).outcome.ok])).toEqual(attempts.map(([who]) => [who, false]));

    const { view: after } = accepted(view, commitWal([range(reopened, 10, 12, { position: 3, length: 4 })], { ...newOpener, object: 'wal/x/1' }));
    expect(getIn(after.buckets, '1//0')!.stream).toEqual({
      ...committed,
      state: 'open',
      epoch: 3,
      node: newOpener.nodeId,
      nodeEpoch: newOpener.nodeEpoch,
      endOffset: 12,
      slices: [EVENTS_0_COMMITTED, slice('wal/x/1', 10, 12, 3, 4)],
    });
  });

  it('keeps the committed data of a stream when LeadBucket moves the bucket (the stream is not the leader)', () => {
    const before = storageFixture();
    const { view } = accepted(before, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 1, partition: null, bucket: 0, leader: '2' });
    expect(getIn(view.buckets, '1//0')!.stream).toBe(getIn(before.buckets, '1//0')!.stream);
  });
});

// ---------------------------------------------------------------------------------------------------
// CommitStreamObject, ForgetObjects, and the release of objects by drops

/**
 * The storage fixture after node 1 wrote events/0 on to offset 16, at sequence 12:
 * - events/0 holds [0, 10) in wal/1/2/1 (shared with orders/p1/0), [10, 12) and [12, 15) in wal/1/2/2,
 *   and [15, 16) in wal/1/2/3;
 * - the registry counts 2 slices in each of wal/1/2/1 and wal/1/2/2 and 1 in wal/1/2/3; no garbage.
 */
function compactionFixture(): View {
  let view = storageFixture();
  view = accepted(view, commitWal([range(EVENTS_0, 10, 12, { position: 0, length: 20 }), range(EVENTS_0, 12, 15, { position: 20, length: 30 })])).view;
  view = accepted(view, commitWal([range(EVENTS_0, 15, 16, { position: 0, length: 10 })], { object: 'wal/1/2/3' })).view;
  return deepFreeze(view);
}

const EVENTS_0_WAL_SLICES = [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 12, 0, 20), slice('wal/1/2/2', 12, 15, 20, 30), slice('wal/1/2/3', 15, 16, 0, 10)];
const STREAM_OBJECT = 'streams/1-_-0/10-16-2';

/** A stream object slice (the object is the command's). */
function piece(startOffset: number, endOffset: number, position: number, length: number) {
  return { startOffset, endOffset, position, length };
}

/** Node 1 at node epoch 2 compacts events/0 [10, 16) into STREAM_OBJECT at time 5 000, unless `fields` say otherwise. */
function commitStreamObject(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'CommitStreamObject',
    nodeId: '1',
    nodeEpoch: 2,
    tableId: 1,
    partition: null,
    bucket: 0,
    streamEpoch: 2,
    object: STREAM_OBJECT,
    startOffset: 10,
    endOffset: 16,
    slices: [piece(10, 12, 0, 20), piece(12, 15, 20, 30), piece(15, 16, 50, 10)],
    atMs: 5_000,
    ...fields,
  };
}

describe('the compaction fixture is what CommitWal builds, with one reference per slice', () => {
  it('holds the slices and counts documented above', () => {
    const view = compactionFixture();
    expect(view.seq).toBe(12);
    expect(getIn(view.buckets, '1//0')!.stream).toMatchObject({ endOffset: 16, slices: EVENTS_0_WAL_SLICES });
    expect(recordOf(view.objects)).toEqual({ 'wal/1/2/1': { references: 2, bytes: 600 }, 'wal/1/2/2': { references: 2, bytes: 50 }, 'wal/1/2/3': { references: 1, bytes: 10 } });
    expect(recordOf(view.garbage)).toEqual({});
  });
});

describe('CommitStreamObject replaces the slices of a range by slices of one stream object and releases what they pointed into', () => {
  type Case = [
    description: string,
    command: Record<string, unknown>,
    expectedSlices: DataSlice[],
    expectedObjects: Record<string, ObjectRecord>,
    expectedGarbage: Record<string, GarbageRecord>,
  ];
  const cases: Case[] = [
    [
      'every WAL slice after the shared object: both WAL objects it empties move to the garbage at the command time',
      commitStreamObject(),
      [EVENTS_0_COMMITTED, slice(STREAM_OBJECT, 10, 12, 0, 20), slice(STREAM_OBJECT, 12, 15, 20, 30), slice(STREAM_OBJECT, 15, 16, 50, 10)],
      { 'wal/1/2/1': { references: 2, bytes: 600 }, [STREAM_OBJECT]: { references: 3, bytes: 60 } },
      { 'wal/1/2/2': { unreferencedAtMs: 5_000, bytes: 50 }, 'wal/1/2/3': { unreferencedAtMs: 5_000, bytes: 10 } },
    ],
    [
      'the two slices of wal/1/2/2 only: it moves to the garbage, the later slice keeps its WAL object',
      commitStreamObject({ object: 'streams/a', endOffset: 15, slices: [piece(10, 12, 0, 20), piece(12, 15, 20, 30)], atMs: 7 }),
      [EVENTS_0_COMMITTED, slice('streams/a', 10, 12, 0, 20), slice('streams/a', 12, 15, 20, 30), slice('wal/1/2/3', 15, 16, 0, 10)],
      { 'wal/1/2/1': { references: 2, bytes: 600 }, 'wal/1/2/3': { references: 1, bytes: 10 }, 'streams/a': { references: 2, bytes: 50 } },
      { 'wal/1/2/2': { unreferencedAtMs: 7, bytes: 50 } },
    ],
    [
      'a range that splits the slices of one WAL object: that object loses one reference and stays',
      commitStreamObject({ object: 'streams/b', startOffset: 12, slices: [piece(12, 15, 0, 30), piece(15, 16, 30, 10)] }),
      [EVENTS_0_COMMITTED, slice('wal/1/2/2', 10, 12, 0, 20), slice('streams/b', 12, 15, 0, 30), slice('streams/b', 15, 16, 30, 10)],
      { 'wal/1/2/1': { references: 2, bytes: 600 }, 'wal/1/2/2': { references: 1, bytes: 50 }, 'streams/b': { references: 2, bytes: 40 } },
      { 'wal/1/2/3': { unreferencedAtMs: 5_000, bytes: 10 } },
    ],
    [
      'the first slice, whose WAL object another stream still points into: nothing moves to the garbage',
      commitStreamObject({ object: 'streams/c', startOffset: 0, endOffset: 10, slices: [piece(0, 10, 0, 400)] }),
      [slice('streams/c', 0, 10, 0, 400), ...EVENTS_0_WAL_SLICES.slice(1)],
      { 'wal/1/2/1': { references: 1, bytes: 600 }, 'wal/1/2/2': { references: 2, bytes: 50 }, 'wal/1/2/3': { references: 1, bytes: 10 }, 'streams/c': { references: 1, bytes: 400 } },
      {},
    ],
    [
      'three slices merged into one slice of the stream object',
      commitStreamObject({ slices: [piece(10, 16, 0, 60)] }),
      [EVENTS_0_COMMITTED, slice(STREAM_OBJECT, 10, 16, 0, 60)],
      { 'wal/1/2/1': { references: 2, bytes: 600 }, [STREAM_OBJECT]: { references: 1, bytes: 60 } },
      { 'wal/1/2/2': { unreferencedAtMs: 5_000, bytes: 50 }, 'wal/1/2/3': { unreferencedAtMs: 5_000, bytes: 10 } },
    ],
    [
      'the whole stream, one slice per batch with byte positions as the proposer laid them out',
      commitStreamObject({ startOffset: 0, slices: [piece(0, 10, 100, 400), piece(10, 12, 0, 20), piece(12, 15, 20, 30), piece(15, 16, 50, 10)] }),
      [slice(STREAM_OBJECT, 0, 10, 100, 400), slice(STREAM_OBJECT, 10, 12, 0, 20), slice(STREAM_OBJECT, 12, 15, 20, 30), slice(STREAM_OBJECT, 15, 16, 50, 10)],
      { 'wal/1/2/1': { references: 1, bytes: 600 }, [STREAM_OBJECT]: { references: 4, bytes: 500 } },
      { 'wal/1/2/2': { unreferencedAtMs: 5_000, bytes: 50 }, 'wal/1/2/3': { unreferencedAtMs: 5_000, bytes: 10 } },
    ],
  ];

  it.each(cases)('accepts %s', (_description, command, expectedSlices, expectedObjects, expectedGarbage) => {
    const before = compactionFixture();
    const { view, outcome } = accepted(before, command);
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({
      ...before,
      seq: 13,
      buckets: bucketsWith(before.buckets, { '1//0': { ...getIn(before.buckets, '1//0')!, stream: { ...getIn(before.buckets, '1//0')!.stream, slices: expectedSlices } } }),
      objects: shardedFrom(expectedObjects),
      garbage: shardedFrom(expectedGarbage),
    });
    // Offsets, the committed end and the writers stay; the other buckets are shared with the input.
    expect(getIn(view.buckets, '1//0')!.stream.writers).toBe(getIn(before.buckets, '1//0')!.stream.writers);
    expect(getIn(view.buckets, '2/p1/0')).toBe(getIn(before.buckets, '2/p1/0'));
  });

  it('accepts the same compaction again without a reference passing through zero, so the object never reaches the garbage', () => {
    const once = accepted(compactionFixture(), commitStreamObject()).view;
    const { view, outcome } = accepted(deepFreeze(once), commitStreamObject({ atMs: 9_000 }));
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({ ...once, seq: once.seq + 1, buckets: view.buckets, objects: once.objects, garbage: once.garbage });
    expect(getIn(view.buckets, '1//0')!.stream).toEqual(getIn(once.buckets, '1//0')!.stream);
  });

  it('keeps an object\'s size as far as its slices show it, also for a record of a log written before sizes were kept', () => {
    // A record without a size (an older log or snapshot) gets one from the next slice committed into it,
    // and a stream object's size is the end of its furthest slice, whatever the order of their bytes.
    const legacy = deepFreeze({ ...compactionFixture(), objects: shardedFrom({ 'wal/1/2/1': { references: 2 }, 'wal/1/2/2': { references: 2 }, 'wal/1/2/3': { references: 1 } }) });
    const grown = accepted(legacy, commitWal([range(EVENTS_0, 16, 18, { position: 700, length: 20 })], { object: 'wal/1/2/1' })).view;
    expect(getIn(grown.objects, 'wal/1/2/1')).toEqual({ references: 3, bytes: 720 });
    const compacted = accepted(legacy, commitStreamObject({ slices: [piece(10, 12, 40, 20), piece(12, 15, 0, 30), piece(15, 16, 30, 10)] })).view;
    expect(getIn(compacted.objects, STREAM_OBJECT)).toEqual({ references: 3, bytes: 60 });
    expect(recordOf(compacted.garbage)).toEqual({ 'wal/1/2/2': { unreferencedAtMs: 5_000 }, 'wal/1/2/3': { unreferencedAtMs: 5_000 } });
  });

  it('replaces the slices of several batches by one packed slice that keeps its batch count, also through a JSON round trip', () => {
    // Packing is what keeps a stream's slices growing with its bytes rather than its appends (docs/architecture.md §7).
    const packed = { ...piece(10, 16, 0, 60 + 3 * 8), batches: 3 };
    const { view, outcome } = accepted(compactionFixture(), commitStreamObject({ slices: [packed] }));
    expect(outcome).toEqual({ ok: true });
    const stream = JSON.parse(JSON.stringify(getIn(view.buckets, '1//0')!.stream)) as { slices: unknown[] };
    expect(stream.slices.at(-1)).toEqual({ object: STREAM_OBJECT, startOffset: 10, endOffset: 16, position: 0, length: 84, batches: 3 });
    expect(getIn(view.objects, STREAM_OBJECT)).toEqual({ references: 1, bytes: 84 });
    // A plain slice gets no batch count at all.
    const plain = accepted(compactionFixture(), commitStreamObject({ slices: [piece(10, 16, 0, 60)] })).view;
    expect(Object.keys(getIn(plain.buckets, '1//0')!.stream.slices.at(-1)!)).toEqual(['object', 'startOffset', 'endOffset', 'position', 'length']);
  });

  it('moves a WAL object shared by two streams to the garbage only when the second stream is compacted, at that time', () => {
    const first = accepted(compactionFixture(), commitStreamObject({ object: 'streams/e', startOffset: 0, endOffset: 10, slices: [piece(0, 10, 0, 400)], atMs: 100 })).view;
    expect(getIn(first.objects, 'wal/1/2/1')).toEqual({ references: 1, bytes: 600 });
    expect(recordOf(first.garbage)).toEqual({});
    const ordersCompaction = commitStreamObject({ tableId: 2, partition: 'p1', streamEpoch: 1, object: 'streams/o', startOffset: 0, endOffset: 5, slices: [piece(0, 5, 0, 200)], atMs: 200 });
    const second = accepted(deepFreeze(first), ordersCompaction).view;
    expect(getIn(second.objects, 'wal/1/2/1')).toBeUndefined();
    expect(recordOf(second.garbage)).toEqual({ 'wal/1/2/1': { unreferencedAtMs: 200, bytes: 600 } });
    expect(getIn(second.buckets, '2/p1/0')!.stream.slices).toEqual([slice('streams/o', 0, 5, 0, 200)]);
  });

  it('keeps object keys named like prototype members as own entries, through the garbage and a JSON round trip', () => {
    let view = accepted(fixture(), commitWal([range(EVENTS_0, 0, 2)], { object: '__proto__' })).view;
    expect(getIn(view.objects, '__proto__')).toEqual({ references: 1, bytes: 20 });
    expect(Object.getOwnPropertyDescriptor(recordOf(view.objects), '__proto__')?.value).toEqual({ references: 1, bytes: 20 });
    view = accepted(deepFreeze(view), commitStreamObject({ object: 'constructor', startOffset: 0, endOffset: 2, slices: [piece(0, 2, 0, 20)] })).view;
    expect(view.garbage.shards.every((shard) => Object.getPrototypeOf(shard) === null)).toBe(true);
    const roundTripped = JSON.parse(JSON.stringify(view)) as View;
    expect(Object.keys(recordOf(roundTripped.garbage))).toEqual(['__proto__']);
    expect(Object.keys(recordOf(roundTripped.objects))).toEqual(['constructor']);
    const refused = next(roundTripped, commitWal([range(EVENTS_0, 2, 3)], { object: '__proto__' }));
    expect(refused.outcome).toEqual({ ok: false, rejection: { code: 'Conflict', message: 'object __proto__ is awaiting deletion: no slice may point into it again' } });
  });
});

describe('CommitStreamObject rejects every stale, malformed or outdated compaction without changing anything but the sequence', () => {
  type Case = [description: string, command: Record<string, unknown>, code: Rejection['code'], message: string, view?: () => View];
  /** The compaction fixture after a takeover registered node 1 at epoch 3. */
  const afterTakeoverOfNode1 = () => deepFreeze(accepted(compactionFixture(), { type: 'RegisterNode', nodeId: '1', expectedEpoch: 2 }).view);
  /** The compaction fixture with events/0 trimmed to start at 10 (its first slice released). */
  const trimmedTo10 = () =>
    deepFreeze({
      ...withEvents0Stream(compactionFixture(), { startOffset: 10, slices: EVENTS_0_WAL_SLICES.slice(1) }),
      objects: shardedFrom({ 'wal/1/2/1': { references: 1 }, 'wal/1/2/2': { references: 2 }, 'wal/1/2/3': { references: 1 } }),
    });
  const cases: Case[] = [
    // Only the stream's leader, at its current incarnation and stream epoch, rewrites a stream.
    ['a compaction by an unregistered node', commitStreamObject({ nodeId: '9' }), 'Fenced', 'node 9 is not registered'],
    ['a compaction by a node named like a prototype member', commitStreamObject({ nodeId: 'toString', nodeEpoch: 0 }), 'Fenced', 'node toString is not registered'],
    ['a compaction from an older incarnation', commitStreamObject({ nodeEpoch: 1 }), 'Fenced', 'node 1 epoch 1 is fenced: current is 2'],
    ['a compaction at a node epoch ahead of the view', commitStreamObject({ nodeEpoch: 3 }), 'Fenced', 'node 1 epoch 3 is not current: current is 2'],
    ['a compaction by a zombie whose node was taken over', commitStreamObject(), 'Fenced', 'node 1 epoch 2 is fenced: current is 3', afterTakeoverOfNode1],
    ['a compaction of a stream the proposer does not hold', commitStreamObject({ nodeId: '2', nodeEpoch: 1, bucket: 2, streamEpoch: 4 }), 'Fenced', "the stream of table 'events' bucket 2 is not open by node 2 at node epoch 1"],
    ['a compaction of a closed stream by its last opener', commitStreamObject({ nodeId: '2', nodeEpoch: 1, bucket: 1, streamEpoch: 1 }), 'Fenced', "the stream of table 'events' bucket 1 is not open by node 2 at node epoch 1"],
    ['a compaction at a stale stream epoch', commitStreamObject({ streamEpoch: 1 }), 'Fenced', "stream epoch 1 is fenced: current is 2 for table 'events' bucket 0"],
    ['a compaction at a stream epoch ahead of the view', commitStreamObject({ streamEpoch: 3 }), 'Fenced', "stream epoch 3 is not current: current is 2 for table 'events' bucket 0"],
    ['a stale compaction with no slices (the fence is checked first)', commitStreamObject({ nodeEpoch: 1, slices: [] }), 'Fenced', 'node 1 epoch 1 is fenced'],

    // The bucket must exist.
    ['a compaction of a missing bucket', commitStreamObject({ bucket: 3 }), 'NotFound', 'bucket 3 of table id 1 does not exist'],
    ['a compaction of a missing partition', commitStreamObject({ tableId: 2, partition: 'p9' }), 'NotFound', "bucket 0 of table id 2 partition 'p9' does not exist"],

    // The shape of the range and of the new slices.
    ['an empty range', commitStreamObject({ startOffset: 10, endOffset: 10 }), 'InvalidArgument', 'CommitStreamObject range [10, 10) is empty'],
    ['a range that ends before it starts', commitStreamObject({ startOffset: 12, endOffset: 10 }), 'InvalidArgument', 'CommitStreamObject range [12, 10) is empty'],
    ['no new slices', commitStreamObject({ slices: [] }), 'InvalidArgument', 'CommitStreamObject.slices must not be empty'],
    [
      'LIMITS.streamObjectSlicesMax + 1 new slices',
      commitStreamObject({ slices: Array.from({ length: LIMITS.streamObjectSlicesMax + 1 }, (_, index) => piece(10 + index, 11 + index, index, 1)) }),
      'InvalidArgument',
      `CommitStreamObject.slices holds ${LIMITS.streamObjectSlicesMax + 1} slices: at most ${LIMITS.streamObjectSlicesMax}`,
    ],
    ['a new slice that is null', commitStreamObject({ slices: [null] }), 'InvalidArgument', 'CommitStreamObject.slices[0] must be an object'],
    ['a new slice with a negative position', commitStreamObject({ slices: [piece(10, 16, -1, 60)] }), 'InvalidArgument', 'CommitStreamObject.slices[0].position must be a non-negative integer'],
    ['a new slice with a string length', commitStreamObject({ slices: [{ ...piece(10, 16, 0, 60), length: '60' }] }), 'InvalidArgument', 'CommitStreamObject.slices[0].length must be a non-negative integer'],
    ['a new slice of zero bytes', commitStreamObject({ slices: [piece(10, 16, 0, 0)] }), 'InvalidArgument', 'CommitStreamObject.slices[0].length must be positive'],
    ['a packed slice of one batch', commitStreamObject({ slices: [{ ...piece(10, 16, 0, 60), batches: 1 }] }), 'InvalidArgument', 'CommitStreamObject.slices[0].batches must be an integer of at least 2 when present'],
    ['a packed slice with a fractional batch count', commitStreamObject({ slices: [{ ...piece(10, 16, 0, 60), batches: 2.5 }] }), 'InvalidArgument', 'CommitStreamObject.slices[0].batches must be an integer'],
    ['a packed slice of more batches than records', commitStreamObject({ slices: [{ ...piece(10, 16, 0, 600), batches: 7 }] }), 'InvalidArgument', 'CommitStreamObject.slices[0] packs 7 batches into 6 records'],
    ['a packed slice too small for its index', commitStreamObject({ slices: [{ ...piece(10, 16, 0, 24), batches: 3 }] }), 'InvalidArgument', 'CommitStreamObject.slices[0] of 24 bytes cannot hold 3 batches and their index'],
    ['a new slice without offsets', commitStreamObject({ slices: [piece(10, 12, 0, 20), piece(12, 12, 20, 5), piece(12, 16, 25, 40)] }), 'InvalidArgument', 'CommitStreamObject.slices[1] is empty'],
    ['new slices with a gap', commitStreamObject({ slices: [piece(10, 12, 0, 20), piece(13, 16, 20, 40)] }), 'InvalidArgument', 'CommitStreamObject.slices[1] starts at 13, expected 12'],
    ['new slices that overlap', commitStreamObject({ slices: [piece(10, 13, 0, 20), piece(12, 16, 20, 40)] }), 'InvalidArgument', 'CommitStreamObject.slices[1] starts at 12, expected 13'],
    ['new slices that start after the range', commitStreamObject({ slices: [piece(11, 16, 0, 60)] }), 'InvalidArgument', 'CommitStreamObject.slices[0] starts at 11, expected 10'],
    ['new slices that end before the range', commitStreamObject({ slices: [piece(10, 15, 0, 60)] }), 'InvalidArgument', 'CommitStreamObject.slices end at 15, not at endOffset 16'],
    ['new slices that end after the range', commitStreamObject({ endOffset: 15, slices: [piece(10, 16, 0, 60)] }), 'InvalidArgument', 'CommitStreamObject.slices end at 16, not at endOffset 15'],
    ['a range past the committed end', commitStreamObject({ endOffset: 17, slices: [piece(10, 17, 0, 70)] }), 'InvalidArgument', "range [10, 17) of table 'events' bucket 0 runs past the committed end 16"],

    // The stream changed under the proposer, or the object may not be used.
    ['a range that starts inside a slice', commitStreamObject({ startOffset: 11, slices: [piece(11, 16, 0, 50)] }), 'Conflict', "range [11, 16) of table 'events' bucket 0 does not start and end on boundaries of its slices"],
    ['a range that ends inside a slice', commitStreamObject({ endOffset: 14, slices: [piece(10, 14, 0, 40)] }), 'Conflict', "range [10, 14) of table 'events' bucket 0 does not start and end on boundaries of its slices"],
    ['a range below the start of a trimmed stream', commitStreamObject({ startOffset: 0, slices: [piece(0, 16, 0, 460)] }), 'Conflict', "range [0, 16) of table 'events' bucket 0 starts below the stream's start 10", trimmedTo10],
    ['a stream object awaiting deletion', commitStreamObject(), 'Conflict', `object ${STREAM_OBJECT} is awaiting deletion`, () => withGarbage(compactionFixture(), { [STREAM_OBJECT]: { unreferencedAtMs: 1 } })],
  ];

  it.each(cases)('rejects %s', (_description, command, code, message, makeView = compactionFixture) => {
    const view = makeView();
    const result = next(view, command);
    expect(result.outcome).toEqual({ ok: false, rejection: { code, message: expect.stringContaining(message) } });
    expect(result.view).toEqual({ ...view, seq: view.seq + 1 });
    expect(result.view.buckets).toBe(view.buckets);
    expect(result.view.objects).toBe(view.objects);
  });
});

describe('ForgetObjects removes deleted objects from the garbage and ignores every other key', () => {
  const withTwoInGarbage = () => withGarbage(compactionFixture(), { 'wal/0/1/1': { unreferencedAtMs: 1 }, 'wal/0/1/2': { unreferencedAtMs: 2 } });

  it('removes the named keys that are in the garbage, ignoring keys that are not (a registered object, a prototype name, an unknown key)', () => {
    const before = withTwoInGarbage();
    const { view, outcome } = accepted(before, { type: 'ForgetObjects', keys: ['wal/0/1/1', 'wal/1/2/1', 'toString', '__proto__', 'nowhere'] });
    expect(outcome).toEqual({ ok: true });
    expect({ ...view, garbage: recordOf(view.garbage) }).toEqual({ ...before, seq: before.seq + 1, garbage: { 'wal/0/1/2': { unreferencedAtMs: 2 } } });
    expect(view.objects).toBe(before.objects);
  });

  it.each([
    ['no key', []],
    ['only keys already forgotten (a retry)', ['wal/9/9/9']],
  ])('accepts %s and changes nothing but the sequence', (_description, keys) => {
    const before = withTwoInGarbage();
    const { view, outcome } = accepted(before, { type: 'ForgetObjects', keys });
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({ ...before, seq: before.seq + 1 });
    expect(view.garbage).toBe(before.garbage);
  });

  it(`accepts LIMITS.forgetObjectsKeysMax (${LIMITS.forgetObjectsKeysMax}) keys`, () => {
    const keys = Array.from({ length: LIMITS.forgetObjectsKeysMax }, (_, index) => (index === 0 ? 'wal/0/1/2' : `other/${index}`));
    expect(recordOf(accepted(withTwoInGarbage(), { type: 'ForgetObjects', keys }).view.garbage)).toEqual({ 'wal/0/1/1': { unreferencedAtMs: 1 } });
  });

  it.each([
    ['LIMITS.forgetObjectsKeysMax + 1 keys', Array.from({ length: LIMITS.forgetObjectsKeysMax + 1 }, (_, index) => `k${index}`), `ForgetObjects names ${LIMITS.forgetObjectsKeysMax + 1} keys: at most ${LIMITS.forgetObjectsKeysMax}`],
    ['an empty key', ['wal/0/1/1', ''], 'ForgetObjects.keys[1] must be a non-empty string'],
    ['a key that is a number', [7], 'ForgetObjects.keys[0] must be a non-empty string'],
  ])('rejects %s as InvalidArgument, forgetting nothing', (_description, keys, message) => {
    const before = withTwoInGarbage();
    const result = next(before, { type: 'ForgetObjects', keys });
    expect(result.outcome).toEqual({ ok: false, rejection: { code: 'InvalidArgument', message } });
    expect(result.view).toEqual({ ...before, seq: before.seq + 1 });
  });
});

describe('DropTable and DropPartition release the slices of the buckets they remove', () => {
  it('drops events: the objects only it pointed into move to the garbage at atMs, the object orders shares loses one reference', () => {
    const before = compactionFixture();
    const { view } = accepted(before, { type: 'DropTable', coordinatorEpoch: 3, name: 'events', atMs: 7_000 });
    expect(recordOf(view.objects)).toEqual({ 'wal/1/2/1': { references: 1, bytes: 600 } });
    expect(recordOf(view.garbage)).toEqual({ 'wal/1/2/2': { unreferencedAtMs: 7_000, bytes: 50 }, 'wal/1/2/3': { unreferencedAtMs: 7_000, bytes: 10 } });
  });

  it('drops partition p1, then events without a time: the shared object reaches the garbage with the second drop, stamped 0', () => {
    const partitionDropped = accepted(storageFixture(), { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', atMs: 50 }).view;
    expect(recordOf(partitionDropped.objects)).toEqual({ 'wal/1/2/1': { references: 1, bytes: 600 } });
    expect(recordOf(partitionDropped.garbage)).toEqual({});
    const tableDropped = accepted(deepFreeze(partitionDropped), { type: 'DropTable', coordinatorEpoch: 3, name: 'events' }).view;
    expect(recordOf(tableDropped.objects)).toEqual({});
    expect(recordOf(tableDropped.garbage)).toEqual({ 'wal/1/2/1': { unreferencedAtMs: 0, bytes: 600 } });
  });

  it('drops a table whose streams hold nothing without touching the registry or the garbage', () => {
    const before = withGarbage(fixture(), { 'wal/0/1/1': { unreferencedAtMs: 1 } });
    const { view } = accepted(before, { type: 'DropTable', coordinatorEpoch: 3, name: 'orders', atMs: 9 });
    expect(view.objects).toBe(before.objects);
    expect(view.garbage).toBe(before.garbage);
  });
});

describe('a partition dropped and created again never reuses an epoch of its earlier incarnation', () => {
  /** The address of orders/p1/0, which the storage fixture opened by node 1 at node epoch 2. */
  const P1_0 = { tableId: 2, partition: 'p1', bucket: 0 };

  /**
   * The storage fixture after orders/p1/0 was re-led to node 1 three times and its stream reopened at the
   * last leader epoch (4), then written [5, 8) by node 1 at node epoch 2: the incarnation a deposed writer
   * would come from. Returns the view and every epoch the incarnation's buckets ever had.
   */
  function firstIncarnation(): { view: View; epochs: number[] } {
    let view = storageFixture();
    const epochs = [1];
    for (let lead = 0; lead < 3; lead++) {
      const { view: led, outcome } = accepted(view, { type: 'LeadBucket', coordinatorEpoch: 3, ...P1_0, leader: '1' });
      view = led;
      epochs.push(outcome.ok ? outcome.leaderEpoch! : -1);
    }
    view = accepted(view, { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, ...P1_0, streamEpoch: 1 }).view;
    view = accepted(view, { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, ...P1_0, leaderEpoch: 4 }).view;
    view = accepted(view, commitWal([range({ ...P1_0, streamEpoch: 4 }, 5, 8)], { object: 'wal/1/2/7' })).view;
    for (const record of bucketsInTableOrder(view)) if (record.partition === 'p1') epochs.push(record.leaderEpoch, record.stream.epoch);
    return { view: deepFreeze(view), epochs };
  }

  type Case = [description: string, recreate: (view: View) => View];
  const cases: Case[] = [
    ['created again with leaders', (view) => accepted(view, { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', leaders: ['1', '3'] }).view],
    [
      'created again leaderless, then led by LeadBucket',
      (view) => {
        const created = accepted(view, { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1' }).view;
        return accepted(created, { type: 'LeadBuckets', coordinatorEpoch: 3, buckets: [{ ...P1_0, leader: '1' }, { ...P1_0, bucket: 1, leader: '3' }] }).view;
      },
    ],
  ];

  it.each(cases)('%s: the new buckets start above every leader and stream epoch the old ones had', (_description, recreate) => {
    // Proves create → lead → open → drop → create again gives epochs above the first incarnation's, for every bucket.
    const { view: first, epochs } = firstIncarnation();
    expect(Math.max(...epochs)).toBe(4);
    const dropped = accepted(first, { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', atMs: 10 }).view;
    const again = recreate(dropped);
    const records = bucketsInTableOrder(again).filter((record) => record.partition === 'p1');
    expect(records).toHaveLength(2);
    for (const record of records) {
      expect(record.leaderEpoch).toBeGreaterThan(Math.max(...epochs));
      expect(record.stream).toEqual({ ...CLOSED_NEVER_OPENED, epoch: dropped.seq + 1 });
      expect(record.stream.epoch).toBeGreaterThan(Math.max(...epochs));
    }
    // The new incarnation opens at its own leader epoch, above the old stream epoch.
    const leaderEpoch = getIn(again.buckets, '2/p1/0')!.leaderEpoch;
    const opened = accepted(again, { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, ...P1_0, leaderEpoch });
    expect(opened.outcome).toEqual({ ok: true, streamEpoch: leaderEpoch });
    expect(leaderEpoch).toBeGreaterThan(Math.max(...epochs));
  });

  it('fences every command of a deposed writer of the old incarnation, before and after the new one opens', () => {
    // Proves the danger the floor removes: the same node at the same node epoch opening the new stream does not
    // make the old incarnation's stream epoch current again, so its in-flight commits are refused.
    const { view: first } = firstIncarnation();
    const dropped = accepted(first, { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', atMs: 10 }).view;
    const again = accepted(dropped, { type: 'CreatePartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', leaders: ['1', '3'] }).view;
    const leaderEpoch = getIn(again.buckets, '2/p1/0')!.leaderEpoch;
    const opened = accepted(again, { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, ...P1_0, leaderEpoch }).view;
    const old = { ...P1_0, streamEpoch: 4 };

    type Refusal = [view: View, command: Record<string, unknown>, message: string];
    const refusals: Refusal[] = [
      [again, commitWal([range(old, 0, 3)], { object: 'wal/1/2/8' }), "the stream of table 'orders' partition 'p1' bucket 0 is not open by node 1 at node epoch 2"],
      [opened, commitWal([range(old, 0, 3)], { object: 'wal/1/2/8' }), `stream epoch 4 is fenced: current is ${leaderEpoch}`],
      [opened, commitWal([range(old, 8, 9)], { object: 'wal/1/2/8' }), `stream epoch 4 is fenced: current is ${leaderEpoch}`],
      [opened, commitKvSnapshot({ streamEpoch: 4, object: 'kv/2/p1/0/4-0', appliedOffset: 0 }), `stream epoch 4 is fenced: current is ${leaderEpoch}`],
      [opened, { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, ...P1_0, streamEpoch: 4 }, `stream epoch 4 is fenced: current is ${leaderEpoch}`],
      [again, { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, ...P1_0, leaderEpoch: 4 }, `leader epoch 4 is fenced: current is ${leaderEpoch}`],
      [again, { type: 'LeadBucket', coordinatorEpoch: 3, ...P1_0, leader: '2', expectedLeaderEpoch: 4 }, `is at leader epoch ${leaderEpoch}, not 4`],
    ];
    for (const [view, command, message] of refusals) {
      const { outcome } = next(view, command);
      expect(outcome).toEqual({ ok: false, rejection: { code: expect.stringMatching(/^(Fenced|Conflict)$/), message: expect.stringContaining(message) } });
    }
    // The new incarnation's writer commits from offset 0 at its own stream epoch.
    expect(next(opened, commitWal([range({ ...P1_0, streamEpoch: leaderEpoch }, 0, 3)], { object: 'wal/1/2/8' })).outcome).toEqual({ ok: true });
  });
});

// ---------------------------------------------------------------------------------------------------
// CommitKvSnapshot

/** The stream of orders/p1/0 (a PK table) as the storage fixture opened it: by node 1 at node epoch 2, stream epoch 1, end 5. */
const ORDERS_P1_0_ID = '2/p1/0';

/** Node 1 at node epoch 2 records a snapshot of orders/p1/0 that includes offsets below 5, at time 6 000, unless `fields` say otherwise. */
function commitKvSnapshot(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'CommitKvSnapshot',
    nodeId: '1',
    nodeEpoch: 2,
    tableId: 2,
    partition: 'p1',
    bucket: 0,
    streamEpoch: 1,
    object: 'kv/2/p1/0/1-5',
    appliedOffset: 5,
    bytes: 4_096,
    atMs: 6_000,
    ...fields,
  };
}

function kvSnapshot(object: string, appliedOffset: number, bytes: number, streamEpoch = 1): KvSnapshotRecord {
  return { object, appliedOffset, bytes, streamEpoch };
}

const SNAPSHOT_AT_2 = kvSnapshot('kv/2/p1/0/1-2', 2, 100);
const SNAPSHOT_AT_4 = kvSnapshot('kv/2/p1/0/1-4', 4, 200);

/**
 * The storage fixture after node 1 snapshotted the tablet of orders/p1/0 twice, at sequence 12: at applied
 * offset 2 (object kv/2/p1/0/1-2, time 100) and at applied offset 4 (kv/2/p1/0/1-4, time 200). Both are
 * kept, so the next snapshot rotates the first one out; each object has one reference and nothing is garbage.
 */
function kvSnapshotFixture(): View {
  let view = storageFixture();
  view = accepted(view, commitKvSnapshot({ object: SNAPSHOT_AT_2.object, appliedOffset: 2, bytes: 100, atMs: 100 })).view;
  view = accepted(view, commitKvSnapshot({ object: SNAPSHOT_AT_4.object, appliedOffset: 4, bytes: 200, atMs: 200 })).view;
  return deepFreeze(view);
}

describe('the KV snapshot fixture is what two CommitKvSnapshot build, with one reference per snapshot', () => {
  it('holds the snapshots and counts documented above', () => {
    const view = kvSnapshotFixture();
    expect(LIMITS.kvSnapshotsKept).toBe(2);
    expect(view.seq).toBe(12);
    expect(getIn(view.buckets, ORDERS_P1_0_ID)!.kvSnapshots).toEqual([SNAPSHOT_AT_2, SNAPSHOT_AT_4]);
    expect(recordOf(view.objects)).toEqual({
      'wal/1/2/1': { references: 2, bytes: 600 },
      [SNAPSHOT_AT_2.object]: { references: 1, bytes: 100 },
      [SNAPSHOT_AT_4.object]: { references: 1, bytes: 200 },
    });
    expect(recordOf(view.garbage)).toEqual({});
  });
});

describe('CommitKvSnapshot records a snapshot of a PK bucket and keeps the newest LIMITS.kvSnapshotsKept', () => {
  type Case = [description: string, command: Record<string, unknown>, expectedSnapshots: KvSnapshotRecord[], view?: () => View];
  const cases: Case[] = [
    ['the first snapshot of a bucket, at its committed end', commitKvSnapshot(), [kvSnapshot('kv/2/p1/0/1-5', 5, 4_096)], storageFixture],
    ['a snapshot that includes nothing yet (applied offset 0)', commitKvSnapshot({ object: 'kv/2/p1/0/1-0', appliedOffset: 0, bytes: 0 }), [kvSnapshot('kv/2/p1/0/1-0', 0, 0)], storageFixture],
    [
      'a second snapshot at the applied offset of the first (nothing was written between them)',
      commitKvSnapshot({ object: 'kv/2/p1/0/1-2-again', appliedOffset: 2 }),
      [SNAPSHOT_AT_2, kvSnapshot('kv/2/p1/0/1-2-again', 2, 4_096)],
      () => deepFreeze(accepted(storageFixture(), commitKvSnapshot({ object: SNAPSHOT_AT_2.object, appliedOffset: 2, bytes: 100, atMs: 100 })).view),
    ],
  ];

  it.each(cases)('accepts %s: the record is appended and its object gets one reference', (_description, command, expectedSnapshots, makeView = storageFixture) => {
    const before = makeView();
    const { view, outcome } = accepted(before, command);
    expect(outcome).toEqual({ ok: true });
    expect(view).toEqual({
      ...before,
      seq: before.seq + 1,
      buckets: bucketsWith(before.buckets, { [ORDERS_P1_0_ID]: { ...getIn(before.buckets, ORDERS_P1_0_ID)!, kvSnapshots: expectedSnapshots } }),
      // A snapshot's object is as large as its archive (a size of 0 says nothing, so none is kept).
      objects: shardedFrom({ ...recordOf(before.objects), [command.object as string]: { references: 1, ...((command.bytes as number) > 0 ? { bytes: command.bytes } : {}) } }),
    });
    // A snapshot changes nothing about the stream; the other buckets and the garbage are shared with the input.
    expect(getIn(view.buckets, ORDERS_P1_0_ID)!.stream).toBe(getIn(before.buckets, ORDERS_P1_0_ID)!.stream);
    expect(getIn(view.buckets, '1//0')).toBe(getIn(before.buckets, '1//0'));
    expect(view.garbage).toBe(before.garbage);
  });

  it('accepts the object key layout of docs/architecture.md §5 for an unpartitioned bucket', () => {
    expect(describeMalformedCommand(commitKvSnapshot({ tableId: 12, partition: null, bucket: 3, streamEpoch: 7, object: 'kv/12/_/3/7-100000', appliedOffset: 100_000 }))).toBeNull();
  });

  it('rotates the oldest snapshot out beyond the bound: its object leaves the registry for the garbage, stamped with the command time', () => {
    const before = kvSnapshotFixture();
    const { view, outcome } = accepted(before, commitKvSnapshot({ atMs: 7_000 }));
    expect(outcome).toEqual({ ok: true });
    expect(getIn(view.buckets, ORDERS_P1_0_ID)!.kvSnapshots).toEqual([SNAPSHOT_AT_4, kvSnapshot('kv/2/p1/0/1-5', 5, 4_096)]);
    expect(recordOf(view.objects)).toEqual({
      'wal/1/2/1': { references: 2, bytes: 600 },
      [SNAPSHOT_AT_4.object]: { references: 1, bytes: 200 },
      'kv/2/p1/0/1-5': { references: 1, bytes: 4_096 },
    });
    expect(recordOf(view.garbage)).toEqual({ [SNAPSHOT_AT_2.object]: { unreferencedAtMs: 7_000, bytes: 100 } });
  });

  it('keeps rotating as snapshots follow one another, each released object stamped with the time of the commit that released it', () => {
    let view = kvSnapshotFixture();
    view = accepted(view, commitKvSnapshot({ object: 'kv/a', appliedOffset: 4, atMs: 1_000 })).view;
    view = accepted(deepFreeze(view), commitKvSnapshot({ object: 'kv/b', appliedOffset: 5, atMs: 2_000 })).view;
    view = accepted(deepFreeze(view), commitKvSnapshot({ object: 'kv/c', appliedOffset: 5, atMs: 3_000 })).view;
    expect(getIn(view.buckets, ORDERS_P1_0_ID)!.kvSnapshots.map((snapshot) => snapshot.object)).toEqual(['kv/b', 'kv/c']);
    expect(recordOf(view.garbage)).toEqual({
      [SNAPSHOT_AT_2.object]: { unreferencedAtMs: 1_000, bytes: 100 },
      [SNAPSHOT_AT_4.object]: { unreferencedAtMs: 2_000, bytes: 200 },
      'kv/a': { unreferencedAtMs: 3_000, bytes: 4_096 },
    });
    expect(recordOf(view.objects)).toEqual({ 'wal/1/2/1': { references: 2, bytes: 600 }, 'kv/b': { references: 1, bytes: 4_096 }, 'kv/c': { references: 1, bytes: 4_096 } });
  });

  it('records the stream epoch of the leader that took it, which grows when the bucket is re-led and reopened', () => {
    let view = kvSnapshotFixture();
    view = accepted(view, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 2, partition: 'p1', bucket: 0, leader: '2' }).view;
    view = accepted(view, { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1 }).view;
    view = accepted(view, { type: 'OpenStream', nodeId: '2', nodeEpoch: 1, tableId: 2, partition: 'p1', bucket: 0, leaderEpoch: 2 }).view;
    // The snapshots survive the handover: the new leader restores from them.
    expect(getIn(view.buckets, ORDERS_P1_0_ID)!.kvSnapshots).toEqual([SNAPSHOT_AT_2, SNAPSHOT_AT_4]);
    view = accepted(deepFreeze(view), commitKvSnapshot({ nodeId: '2', nodeEpoch: 1, streamEpoch: 2, object: 'kv/2/p1/0/2-5' })).view;
    expect(getIn(view.buckets, ORDERS_P1_0_ID)!.kvSnapshots).toEqual([SNAPSHOT_AT_4, kvSnapshot('kv/2/p1/0/2-5', 5, 4_096, 2)]);
  });

  it('keeps object keys named like prototype members as own entries, through the garbage and a JSON round trip', () => {
    let view = accepted(storageFixture(), commitKvSnapshot({ object: '__proto__', appliedOffset: 1 })).view;
    view = accepted(deepFreeze(view), commitKvSnapshot({ object: 'constructor', appliedOffset: 2 })).view;
    view = accepted(deepFreeze(view), commitKvSnapshot({ object: 'toString', appliedOffset: 3 })).view;
    const roundTripped = JSON.parse(JSON.stringify(view)) as View;
    expect(Object.keys(recordOf(roundTripped.garbage))).toEqual(['__proto__']);
    expect(Object.keys(recordOf(roundTripped.objects)).sort()).toEqual(['constructor', 'toString', 'wal/1/2/1']);
    expect(Object.getPrototypeOf(recordOf(roundTripped.garbage))).toBe(Object.prototype);
  });
});

describe('CommitKvSnapshot rejects every stale, misdirected or outdated snapshot without changing anything but the sequence', () => {
  type Case = [description: string, command: Record<string, unknown>, code: Rejection['code'], message: string, view?: () => View];
  /** The KV snapshot fixture after a takeover registered node 1 at epoch 3. */
  const afterTakeoverOfNode1 = () => deepFreeze(accepted(kvSnapshotFixture(), { type: 'RegisterNode', nodeId: '1', expectedEpoch: 2 }).view);
  /** The KV snapshot fixture after node 1 was led again at leader epoch 2 and reopened orders/p1/0 at stream epoch 2. */
  const reopenedAtLeaderEpoch2 = () => {
    let view = kvSnapshotFixture();
    view = accepted(view, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 2, partition: 'p1', bucket: 0, leader: '1' }).view;
    view = accepted(view, { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1 }).view;
    view = accepted(view, { type: 'OpenStream', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, leaderEpoch: 2 }).view;
    return deepFreeze(view);
  };
  /** The KV snapshot fixture after the bucket moved to node 2, which opened it at stream epoch 2. */
  const movedToNode2 = () => {
    let view = kvSnapshotFixture();
    view = accepted(view, { type: 'LeadBucket', coordinatorEpoch: 3, tableId: 2, partition: 'p1', bucket: 0, leader: '2' }).view;
    view = accepted(view, { type: 'CloseStream', nodeId: '1', nodeEpoch: 2, tableId: 2, partition: 'p1', bucket: 0, streamEpoch: 1 }).view;
    view = accepted(view, { type: 'OpenStream', nodeId: '2', nodeEpoch: 1, tableId: 2, partition: 'p1', bucket: 0, leaderEpoch: 2 }).view;
    return deepFreeze(view);
  };
  const cases: Case[] = [
    // Only the bucket's leader, at its current incarnation and at the stream epoch it opened with, snapshots it.
    ['a snapshot by an unregistered node', commitKvSnapshot({ nodeId: '9' }), 'Fenced', 'node 9 is not registered'],
    ['a snapshot by a node named like a prototype member', commitKvSnapshot({ nodeId: 'hasOwnProperty', nodeEpoch: 0 }), 'Fenced', 'node hasOwnProperty is not registered'],
    ['a snapshot from an older incarnation', commitKvSnapshot({ nodeEpoch: 1 }), 'Fenced', 'node 1 epoch 1 is fenced: current is 2'],
    ['a snapshot at a node epoch ahead of the view', commitKvSnapshot({ nodeEpoch: 3 }), 'Fenced', 'node 1 epoch 3 is not current: current is 2'],
    ['a snapshot by a zombie whose node was taken over', commitKvSnapshot(), 'Fenced', 'node 1 epoch 2 is fenced: current is 3', afterTakeoverOfNode1],
    ['a snapshot by the leader of a stream it has not opened', commitKvSnapshot({ nodeId: '3', nodeEpoch: 4, bucket: 1 }), 'Fenced', "the stream of table 'orders' partition 'p1' bucket 1 is not open by node 3 at node epoch 4"],
    ['a snapshot at a stale stream epoch', commitKvSnapshot({ streamEpoch: 0 }), 'Fenced', "stream epoch 0 is fenced: current is 1 for table 'orders' partition 'p1' bucket 0"],
    ['a snapshot at a stream epoch ahead of the view', commitKvSnapshot({ streamEpoch: 2 }), 'Fenced', "stream epoch 2 is not current: current is 1 for table 'orders' partition 'p1' bucket 0"],
    ['a snapshot taken at an older leader epoch by the same node, re-led and reopened since', commitKvSnapshot(), 'Fenced', "stream epoch 1 is fenced: current is 2 for table 'orders' partition 'p1' bucket 0", reopenedAtLeaderEpoch2],
    ['a snapshot by the previous leader after the bucket moved', commitKvSnapshot(), 'Fenced', "the stream of table 'orders' partition 'p1' bucket 0 is not open by node 1 at node epoch 2", movedToNode2],
    ['a stale snapshot of a log table (the fence is checked before the kind of table)', commitKvSnapshot({ tableId: 1, partition: null, bucket: 0, nodeEpoch: 1, streamEpoch: 2 }), 'Fenced', 'node 1 epoch 1 is fenced'],
    ['a stale snapshot past the committed end (the fence is checked first)', commitKvSnapshot({ streamEpoch: 0, appliedOffset: 99 }), 'Fenced', 'stream epoch 0 is fenced'],

    // The bucket must exist.
    ['a snapshot of a missing bucket', commitKvSnapshot({ bucket: 5 }), 'NotFound', "bucket 5 of table id 2 partition 'p1' does not exist"],
    ['a snapshot of a missing partition', commitKvSnapshot({ partition: 'p9' }), 'NotFound', "bucket 0 of table id 2 partition 'p9' does not exist"],
    ['a snapshot of a missing table', commitKvSnapshot({ tableId: 7, partition: null }), 'NotFound', 'bucket 0 of table id 7 does not exist'],

    // Only a PK bucket has a tablet, and a snapshot cannot include offsets that are not committed.
    ['a snapshot of a bucket of a log table', commitKvSnapshot({ tableId: 1, partition: null, bucket: 0, streamEpoch: 2, appliedOffset: 0 }), 'InvalidArgument', "table 'events' is not a PK table"],
    ['a snapshot past the committed end', commitKvSnapshot({ appliedOffset: 6 }), 'InvalidArgument', "KV snapshot of table 'orders' partition 'p1' bucket 0 at applied offset 6 is past the committed end 5"],

    // A newer snapshot was committed meanwhile, or the object may not be used.
    ['a snapshot older than the newest one kept', commitKvSnapshot({ appliedOffset: 3 }), 'Conflict', "KV snapshot of table 'orders' partition 'p1' bucket 0 at applied offset 3 is older than the committed one at 4"],
    ['a snapshot older than the newest one kept, into a fresh object', commitKvSnapshot({ object: 'kv/new', appliedOffset: 0 }), 'Conflict', 'at applied offset 0 is older than the committed one at 4'],
    ['a snapshot object awaiting deletion', commitKvSnapshot(), 'Conflict', 'object kv/2/p1/0/1-5 is awaiting deletion', () => withGarbage(kvSnapshotFixture(), { 'kv/2/p1/0/1-5': { unreferencedAtMs: 1 } })],
    ['the newest snapshot committed again (a retry)', commitKvSnapshot({ object: SNAPSHOT_AT_4.object, appliedOffset: 4, bytes: 200 }), 'Conflict', `object ${SNAPSHOT_AT_4.object} is already a KV snapshot of table 'orders' partition 'p1' bucket 0`],
    ['an older kept snapshot object at a newer offset', commitKvSnapshot({ object: SNAPSHOT_AT_2.object }), 'Conflict', `object ${SNAPSHOT_AT_2.object} is already a KV snapshot`],
    ['an object that committed slices point into', commitKvSnapshot({ object: 'wal/1/2/1' }), 'Conflict', 'object wal/1/2/1 is already registered: a KV snapshot must be an object of its own'],
    [
      'the snapshot object of another bucket',
      commitKvSnapshot({ object: 'kv/2/p1/1/1-0', appliedOffset: 5 }),
      'Conflict',
      'object kv/2/p1/1/1-0 is already registered',
      () => {
        // Node 3 leads orders/p1/1: it opens the stream and snapshots its empty tablet.
        let view = kvSnapshotFixture();
        view = accepted(view, { type: 'OpenStream', nodeId: '3', nodeEpoch: 4, tableId: 2, partition: 'p1', bucket: 1, leaderEpoch: 1 }).view;
        view = accepted(view, commitKvSnapshot({ nodeId: '3', nodeEpoch: 4, bucket: 1, object: 'kv/2/p1/1/1-0', appliedOffset: 0 })).view;
        return deepFreeze(view);
      },
    ],
  ];

  it.each(cases)('rejects %s', (_description, command, code, message, makeView = kvSnapshotFixture) => {
    const view = makeView();
    const result = next(view, command);
    expect(result.outcome).toEqual({ ok: false, rejection: { code, message: expect.stringContaining(message) } });
    expect(result.view).toEqual({ ...view, seq: view.seq + 1 });
    expect(result.view.buckets).toBe(view.buckets);
    expect(result.view.objects).toBe(view.objects);
    expect(result.view.garbage).toBe(view.garbage);
  });
});

describe('DropTable and DropPartition release the KV snapshots of the buckets they remove, together with their slices', () => {
  it('drops partition p1: both snapshot objects move to the garbage at atMs, the WAL object events shares loses one reference', () => {
    const before = kvSnapshotFixture();
    const { view } = accepted(before, { type: 'DropPartition', coordinatorEpoch: 3, table: 'orders', partition: 'p1', atMs: 9_000 });
    expect(recordOf(view.objects)).toEqual({ 'wal/1/2/1': { references: 1, bytes: 600 } });
    expect(recordOf(view.garbage)).toEqual({ [SNAPSHOT_AT_2.object]: { unreferencedAtMs: 9_000, bytes: 100 }, [SNAPSHOT_AT_4.object]: { unreferencedAtMs: 9_000, bytes: 200 } });
  });

  it('drops orders after a rotation: the kept snapshots join the rotated one in the garbage, which keeps its own time', () => {
    const rotated = accepted(kvSnapshotFixture(), commitKvSnapshot({ atMs: 7_000 })).view;
    const { view } = accepted(deepFreeze(rotated), { type: 'DropTable', coordinatorEpoch: 3, name: 'orders', atMs: 9_000 });
    expect(getIn(view.buckets, ORDERS_P1_0_ID)).toBeUndefined();
    expect(recordOf(view.objects)).toEqual({ 'wal/1/2/1': { references: 1, bytes: 600 } });
    expect(recordOf(view.garbage)).toEqual({
      [SNAPSHOT_AT_2.object]: { unreferencedAtMs: 7_000, bytes: 100 },
      [SNAPSHOT_AT_4.object]: { unreferencedAtMs: 9_000, bytes: 200 },
      'kv/2/p1/0/1-5': { unreferencedAtMs: 9_000, bytes: 4_096 },
    });
  });

  it('drops orders, then events without a time: the last reference to the shared WAL object goes with the second drop, stamped 0', () => {
    const ordersDropped = accepted(kvSnapshotFixture(), { type: 'DropTable', coordinatorEpoch: 3, name: 'orders', atMs: 50 }).view;
    const { view } = accepted(deepFreeze(ordersDropped), { type: 'DropTable', coordinatorEpoch: 3, name: 'events' });
    expect(recordOf(view.objects)).toEqual({});
    expect(recordOf(view.garbage)).toEqual({
      [SNAPSHOT_AT_2.object]: { unreferencedAtMs: 50, bytes: 100 },
      [SNAPSHOT_AT_4.object]: { unreferencedAtMs: 50, bytes: 200 },
      'wal/1/2/1': { unreferencedAtMs: 0, bytes: 600 },
    });
  });
});
