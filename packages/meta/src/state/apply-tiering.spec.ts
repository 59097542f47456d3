/**
 * The fences of lake tiering (docs/architecture.md §9, docs/ownership.md §5 ("Coordinator failover")): a round starts where the lake ends,
 * tiers at most what the stream has committed, and commits only at the coordinator epoch that is current
 * and the tiering epoch of the round in progress, so a round of a deposed coordinator or of a worker whose
 * round was given to another can never commit; each bucket's range is tiered exactly once.
 */
import { apply } from './apply';
import type { Command, StartTieringRound } from './commands';
import { deepFreeze } from './deep-freeze';
import { lakeBucketOf } from './lake-properties';
import { getIn, shardedFrom } from './sharded-map';
import { NO_WRITERS, bucketId, emptyView, type BucketRecord, type TableRecord, type View } from './view';

const EVENTS: TableRecord = {
  id: 4,
  name: 'events',
  kind: 'log',
  columns: [{ name: 'body', type: 'string' }],
  primaryKey: [],
  bucketKey: [],
  buckets: 2,
  properties: { 'table.datalake.enabled': 'true' },
  createdAtMs: 1_000,
  partitions: [],
};

function bucketOf(bucket: number, endOffset: number): BucketRecord {
  return {
    tableId: EVENTS.id,
    table: EVENTS.name,
    partition: null,
    bucket,
    leader: '1',
    leaderEpoch: 1,
    stream: { state: 'open', epoch: 1, node: '1', nodeEpoch: 1, startOffset: 0, endOffset, slices: [], writers: NO_WRITERS },
    kvSnapshots: [],
  };
}

/** Coordinator c1 at epoch 3; events (lake on) with bucket 0 committed up to 100 and bucket 1 up to 50. */
function lakeView(table: TableRecord = EVENTS): View {
  return deepFreeze({
    ...emptyView(),
    seq: 20,
    coordinator: { node: 'c1', epoch: 3 },
    tables: shardedFrom({ [table.name]: table }),
    buckets: shardedFrom({ [bucketId(table.id, null, 0)]: bucketOf(0, 100), [bucketId(table.id, null, 1)]: bucketOf(1, 50) }),
    nextTableId: 5,
  });
}

function next(view: View, command: unknown) {
  return apply(view, view.seq + 1, command as Command);
}

const START: StartTieringRound = {
  type: 'StartTieringRound',
  coordinatorEpoch: 3,
  table: 'events',
  tableId: 4,
  worker: 'tiering-1',
  ranges: [
    { bucket: 0, startOffset: 0, endOffset: 100 },
    { bucket: 1, startOffset: 0, endOffset: 40 },
  ],
  atMs: 5_000,
};

const COMMIT = { type: 'CommitTieringRound', coordinatorEpoch: 3, table: 'events', tableId: 4, tieringEpoch: 1, metadataKey: 'lake/events/metadata/v1-r1.metadata.json', snapshotId: '77', atMs: 6_000 };

describe('StartTieringRound', () => {
  it('starts round 1 at the lake offsets and records it on the table', () => {
    const before = lakeView();
    const { view, outcome } = next(before, START);
    expect(outcome).toEqual({ ok: true, tieringEpoch: 1 });
    expect(getIn(view.tables, 'events')!.lake).toEqual({
      metadataKey: null,
      snapshotId: null,
      offsets: {},
      tieringEpoch: 1,
      round: { epoch: 1, worker: 'tiering-1', coordinatorEpoch: 3, ranges: START.ranges, startedAtMs: 5_000 },
      tieredAtMs: 0,
    });
    // Nothing else moves.
    expect(view.buckets).toBe(before.buckets);
  });

  it('replaces a round in progress with the next tiering epoch', () => {
    const first = next(lakeView(), START).view;
    const { view, outcome } = next(first, { ...START, worker: 'tiering-2', atMs: 9_000 });
    expect(outcome).toEqual({ ok: true, tieringEpoch: 2 });
    expect(getIn(view.tables, 'events')!.lake!.round).toMatchObject({ epoch: 2, worker: 'tiering-2', startedAtMs: 9_000 });
  });

  it.each<[string, (view: View) => View, unknown, string, string]>([
    ['a deposed coordinator', (view) => view, { ...START, coordinatorEpoch: 2 }, 'Fenced', 'coordinator epoch 2 is fenced: current is 3'],
    ['an unknown table', (view) => view, { ...START, table: 'clicks' }, 'NotFound', "table 'clicks' with id 4 does not exist"],
    ['a dropped and re-created table (another id)', (view) => view, { ...START, tableId: 9 }, 'NotFound', "table 'events' with id 9 does not exist"],
    [
      'a table without the lake',
      () => lakeView({ ...EVENTS, properties: {} }),
      START,
      'InvalidArgument',
      "table 'events' does not have 'table.datalake.enabled' set to true",
    ],
    ['a range that does not start at the lake offset (a gap)', (view) => view, { ...START, ranges: [{ bucket: 0, startOffset: 10, endOffset: 100 }] }, 'Conflict', "bucket 0 of 'events' is tiered up to 0, not 10"],
    ['a range beyond the committed end', (view) => view, { ...START, ranges: [{ bucket: 1, startOffset: 0, endOffset: 51 }] }, 'InvalidArgument', "bucket 1 of 'events' ends at 50, before 51"],
    ['a bucket named twice', (view) => view, { ...START, ranges: [START.ranges[0], START.ranges[0]] }, 'InvalidArgument', 'StartTieringRound names bucket 0 twice'],
    ['a bucket the table does not have', (view) => view, { ...START, ranges: [{ bucket: 2, startOffset: 0, endOffset: 0 }] }, 'InvalidArgument', 'StartTieringRound: bucket must be a bucket number below 2, got 2'],
    ['a range ending before it starts', (view) => view, { ...START, ranges: [{ bucket: 0, startOffset: 0, endOffset: -1 }] }, 'InvalidArgument', 'StartTieringRound: offsets must be non-negative integers, got 0 and -1'],
    ['ranges that are not a list', (view) => view, { ...START, ranges: 'all' }, 'InvalidArgument', 'StartTieringRound.ranges must be an array (got "all")'],
  ])('refuses %s', (_case, prepare, command, code, message) => {
    const before = prepare(lakeView());
    const { view, outcome } = next(before, command);
    expect(outcome).toEqual({ ok: false, rejection: { code, message } });
    expect(view).toEqual({ ...before, seq: before.seq + 1 });
  });
});

describe('CommitTieringRound', () => {
  it('makes the round\'s Iceberg metadata current and each range\'s end its bucket\'s lake offset', () => {
    const started = next(lakeView(), START).view;
    const { view, outcome } = next(started, COMMIT);
    expect(outcome).toEqual({ ok: true });
    expect(getIn(view.tables, 'events')!.lake).toEqual({
      metadataKey: 'lake/events/metadata/v1-r1.metadata.json',
      snapshotId: '77',
      offsets: { '0': 100, '1': 40 },
      tieringEpoch: 1,
      round: null,
      tieredAtMs: 6_000,
    });
  });

  it('chains rounds without gap or overlap: the next starts where the last ended', () => {
    const tiered = next(next(lakeView(), START).view, COMMIT).view;
    const overlapping = next(tiered, { ...START, ranges: [{ bucket: 1, startOffset: 0, endOffset: 50 }] });
    expect(overlapping.outcome).toEqual({ ok: false, rejection: { code: 'Conflict', message: "bucket 1 of 'events' is tiered up to 40, not 0" } });
    const second = next(tiered, { ...START, ranges: [{ bucket: 1, startOffset: 40, endOffset: 50 }] });
    expect(second.outcome).toEqual({ ok: true, tieringEpoch: 2 });
    const committed = next(second.view, { ...COMMIT, tieringEpoch: 2, metadataKey: 'lake/events/metadata/v2-r2.metadata.json', snapshotId: '78' });
    expect(getIn(committed.view.tables, 'events')!.lake!.offsets).toEqual({ '0': 100, '1': 50 });
  });

  it.each<[string, (view: View) => View, unknown, string, string]>([
    ['a round that was never started', (view) => view, COMMIT, 'Fenced', "tiering epoch 1 of 'events' is not the round in progress (none is)"],
    ['a round replaced by a newer one (a stalled worker)', (view) => next(next(view, START).view, START).view, COMMIT, 'Fenced', "tiering epoch 1 of 'events' is not the round in progress (epoch 2 is)"],
    ['a round already committed (a retried commit)', (view) => next(next(view, START).view, COMMIT).view, COMMIT, 'Fenced', "tiering epoch 1 of 'events' is not the round in progress (none is)"],
    ['a deposed coordinator\'s round', (view) => next(view, START).view, { ...COMMIT, coordinatorEpoch: 2 }, 'Fenced', 'coordinator epoch 2 is fenced: current is 3'],
    ['a table dropped and re-created meanwhile', (view) => next(view, START).view, { ...COMMIT, tableId: 5 }, 'NotFound', "table 'events' with id 5 does not exist"],
    ['a commit without a metadata object', (view) => next(view, START).view, { ...COMMIT, metadataKey: '' }, 'InvalidArgument', 'CommitTieringRound.metadataKey must be a non-empty string (got "")'],
  ])('refuses %s', (_case, prepare, command, code, message) => {
    const before = prepare(lakeView());
    const { view, outcome } = next(before, command);
    expect(outcome).toEqual({ ok: false, rejection: { code, message } });
    expect(view).toEqual({ ...before, seq: before.seq + 1 });
  });

  it('fences a round once a new coordinator registers: its commit is refused and a new round starts afresh', () => {
    const started = next(lakeView(), START).view;
    const newCoordinator = next(started, { type: 'RegisterCoordinator', coordinatorId: 'c2' }).view;
    expect(next(newCoordinator, COMMIT).outcome).toEqual({ ok: false, rejection: { code: 'Fenced', message: 'coordinator epoch 3 is fenced: current is 4' } });
    const restarted = next(newCoordinator, { ...START, coordinatorEpoch: 4 });
    expect(restarted.outcome).toEqual({ ok: true, tieringEpoch: 2 });
  });
});

describe('tiering a partitioned table', () => {
  // Hourly partitions of 2 buckets: the lake bucket of (partition, bucket) is hours since the epoch × 2 + bucket.
  const HOURLY: TableRecord = { ...EVENTS, columns: [{ name: 'at', type: 'timestamp' }], partition: { column: 'at', unit: 'hour' }, partitions: ['2026120117', '2026120118'] };
  const lakeBucket = (partition: string, bucket: number) => lakeBucketOf(HOURLY, partition, bucket)!;

  function partitionedView(table: TableRecord = HOURLY): View {
    const record = (partition: string, bucket: number, endOffset: number): BucketRecord => ({ ...bucketOf(bucket, endOffset), partition });
    return deepFreeze({
      ...emptyView(),
      seq: 20,
      coordinator: { node: 'c1', epoch: 3 },
      tables: shardedFrom({ [table.name]: table }),
      buckets: shardedFrom({
        [bucketId(table.id, '2026120117', 0)]: record('2026120117', 0, 30),
        [bucketId(table.id, '2026120117', 1)]: record('2026120117', 1, 0),
        [bucketId(table.id, '2026120118', 0)]: record('2026120118', 0, 7),
        [bucketId(table.id, '2026120118', 1)]: record('2026120118', 1, 9),
      }),
      nextTableId: 5,
    });
  }

  it('starts and commits rounds whose ranges name the lake buckets of live partitions, keeping offsets by lake bucket', () => {
    const ranges = [
      { bucket: lakeBucket('2026120117', 0), startOffset: 0, endOffset: 30 },
      { bucket: lakeBucket('2026120118', 1), startOffset: 0, endOffset: 9 },
    ];
    const started = next(partitionedView(), { ...START, ranges });
    expect(started.outcome).toEqual({ ok: true, tieringEpoch: 1 });
    const committed = next(started.view, COMMIT);
    expect(committed.outcome).toEqual({ ok: true });
    expect(getIn(committed.view.tables, 'events')!.lake!.offsets).toEqual({ [String(ranges[0]!.bucket)]: 30, [String(ranges[1]!.bucket)]: 9 });
  });

  it.each<[string, number, number, string]>([
    ['a partition that does not exist', lakeBucket('2026120119', 0), 1, "bucket must be the lake bucket of a bucket of a live partition of 'events'"],
    ['a bucket number instead of a lake bucket', 1, 1, "bucket must be the lake bucket of a bucket of a live partition of 'events'"],
    ['a lake bucket past the year 9999', 2 ** 31 - 1, 1, "bucket must be the lake bucket of a bucket of a live partition of 'events'"],
    ['more than the partition bucket committed', lakeBucket('2026120118', 0), 8, "ends at 7, before 8"],
  ])('refuses a range of %s', (_case, bucket, endOffset, message) => {
    const { outcome } = next(partitionedView(), { ...START, ranges: [{ bucket, startOffset: 0, endOffset }] });
    expect(outcome).toMatchObject({ ok: false, rejection: { code: 'InvalidArgument', message: expect.stringContaining(message) } });
  });

  it('trims a partition bucket only up to its lake offset', () => {
    const tiered = { ...HOURLY, properties: { 'table.datalake.enabled': 'true' }, lake: { metadataKey: 'm', snapshotId: '1', offsets: { [String(lakeBucket('2026120117', 0))]: 10 }, tieringEpoch: 1, round: null, tieredAtMs: 1 } };
    const slices = [
      { object: 'wal/a', startOffset: 0, endOffset: 10, position: 0, length: 1 },
      { object: 'wal/b', startOffset: 10, endOffset: 30, position: 0, length: 1 },
    ];
    const view = partitionedView(tiered);
    const id = bucketId(HOURLY.id, '2026120117', 0);
    const withSlices = deepFreeze({ ...view, buckets: shardedFrom({ [id]: { ...getIn(view.buckets, id)!, stream: { ...getIn(view.buckets, id)!.stream, slices } } }), objects: shardedFrom({ 'wal/a': { references: 1 }, 'wal/b': { references: 1 } }) });
    const { view: trimmed, outcome } = next(withSlices, { type: 'TrimStreams', coordinatorEpoch: 3, streams: [{ tableId: HOURLY.id, partition: '2026120117', bucket: 0, startOffset: 30 }], atMs: 9_000 });
    expect(outcome).toEqual({ ok: true });
    expect(getIn(trimmed.buckets, id)!.stream).toMatchObject({ startOffset: 10, slices: [slices[1]] });
  });
});
