import { NO_WRITERS, bucketId, emptyView, lakeBucketOf, shardedFrom, type BucketRecord, type LakeRecord, type TableRecord, type View } from '@mink/meta';
import { planTieringRound, tieringStateOf, type TieringTiming } from './tiering';

function table(name: string, id: number, properties: Record<string, string>, lake?: LakeRecord): TableRecord {
  return { id, name, kind: 'log', columns: [{ name: 'a', type: 'int64' }], primaryKey: [], bucketKey: [], buckets: 2, properties, createdAtMs: 1_000, partitions: [], ...(lake ? { lake } : {}) };
}

const LAKE_ON = { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '10s' };

function lake(fields: Partial<LakeRecord>): LakeRecord {
  return { metadataKey: null, snapshotId: null, offsets: {}, tieringEpoch: 0, round: null, tieredAtMs: 0, ...fields };
}

const ROUND = { epoch: 3, worker: 'w1', coordinatorEpoch: 2, ranges: [], startedAtMs: 50_000 };

function timing(nowMs: number, heartbeats: Array<[string, number]> = []): TieringTiming {
  return { nowMs, roundTimeoutMs: 5_000, heartbeatAtMs: new Map(heartbeats) };
}

describe('tieringStateOf', () => {
  it.each<[string, TableRecord, TieringTiming, ReturnType<typeof tieringStateOf>]>([
    ['a table without the lake', table('t', 1, {}), timing(99_000), null],
    ['a new table before its first freshness', table('t', 1, LAKE_ON), timing(10_999), { state: 'scheduled', dueAtMs: 11_000 }],
    ['a new table one freshness after it was created', table('t', 1, LAKE_ON), timing(11_000), { state: 'pending' }],
    ['a tiered table before the next freshness', table('t', 1, LAKE_ON, lake({ tieredAtMs: 40_000 })), timing(49_999), { state: 'scheduled', dueAtMs: 50_000 }],
    ['a tiered table at the next freshness', table('t', 1, LAKE_ON, lake({ tieredAtMs: 40_000 })), timing(50_000), { state: 'pending' }],
    ['a round whose worker heartbeats', table('t', 1, LAKE_ON, lake({ round: ROUND })), timing(60_000, [['t', 56_000]]), { state: 'tiering' }],
    ['a round whose worker went quiet', table('t', 1, LAKE_ON, lake({ round: ROUND })), timing(60_000, [['t', 54_999]]), { state: 'failed' }],
    ['a round this holder never heard of (a new coordinator)', table('t', 1, LAKE_ON, lake({ round: ROUND })), timing(60_000), { state: 'failed' }],
  ])('%s', (_case, subject, clock, expected) => {
    expect(tieringStateOf(subject, clock)).toEqual(expected);
  });
});

function viewOf(tables: TableRecord[], ends: Record<string, number>): View {
  const buckets: Record<string, BucketRecord> = {};
  for (const each of tables) {
    for (let bucket = 0; bucket < each.buckets; bucket++) {
      const id = bucketId(each.id, null, bucket);
      buckets[id] = {
        tableId: each.id,
        table: each.name,
        partition: null,
        bucket,
        leader: '1',
        leaderEpoch: 1,
        stream: { state: 'open', epoch: 1, node: '1', nodeEpoch: 1, startOffset: 0, endOffset: ends[`${each.name}/${bucket}`] ?? 0, slices: [], writers: NO_WRITERS },
        kvSnapshots: [],
      };
    }
  }
  return { ...emptyView(), tables: shardedFrom(Object.fromEntries(tables.map((each) => [each.name, each]))), buckets: shardedFrom(buckets) };
}

describe('planTieringRound', () => {
  it('plans every bucket with records beyond its lake offset, from the lake offset to the committed end', () => {
    const events = table('events', 1, LAKE_ON, lake({ offsets: { '0': 40 }, tieredAtMs: 20_000 }));
    const planned = planTieringRound(viewOf([events], { 'events/0': 100, 'events/1': 0 }), timing(60_000));
    expect(planned).toEqual({ table: events, ranges: [{ bucket: 0, startOffset: 40, endOffset: 100 }] });
  });

  it('takes the table whose lake is oldest first, and a failed round before a fresh one', () => {
    const older = table('older', 1, LAKE_ON, lake({ tieredAtMs: 10_000 }));
    const newer = table('newer', 2, LAKE_ON, lake({ tieredAtMs: 30_000 }));
    const stalled = table('stalled', 3, LAKE_ON, lake({ tieredAtMs: 5_000, round: ROUND }));
    const view = viewOf([newer, older, stalled], { 'older/0': 5, 'newer/1': 7, 'stalled/0': 9 });
    expect(planTieringRound(view, timing(60_000))?.table.name).toBe('stalled');
    expect(planTieringRound(view, timing(60_000, [['stalled', 59_000]]))?.table.name).toBe('older');
  });

  it.each<[string, TableRecord, Record<string, number>]>([
    ['no table is due', table('t', 1, LAKE_ON, lake({ tieredAtMs: 55_000 })), { 't/0': 10 }],
    ['the due table has nothing new', table('t', 1, LAKE_ON, lake({ offsets: { '0': 10 }, tieredAtMs: 1_000 })), { 't/0': 10 }],
    ['the round in progress heartbeats', table('t', 1, LAKE_ON, lake({ round: ROUND })), { 't/0': 10 }],
    ['the table has no lake', table('t', 1, {}), { 't/0': 10 }],
  ])('plans nothing when %s', (_case, subject, ends) => {
    expect(planTieringRound(viewOf([subject], ends), timing(60_000, [['t', 59_000]]))).toBeNull();
  });
});

describe('planTieringRound of a partitioned table', () => {
  it('plans the lake bucket of every bucket of every live partition with records beyond its lake offset', () => {
    const hourly: TableRecord = {
      ...table('clicks', 2, LAKE_ON, lake({ offsets: {}, tieredAtMs: 20_000 })),
      columns: [{ name: 'at', type: 'timestamp' }],
      partition: { column: 'at', unit: 'hour' },
      partitions: ['2026120117', '2026120118'],
    };
    const record = (partition: string, bucket: number, endOffset: number): BucketRecord => ({
      tableId: hourly.id,
      table: hourly.name,
      partition,
      bucket,
      leader: '1',
      leaderEpoch: 1,
      stream: { state: 'open', epoch: 1, node: '1', nodeEpoch: 1, startOffset: 0, endOffset, slices: [], writers: NO_WRITERS },
      kvSnapshots: [],
    });
    const tiered = lakeBucketOf(hourly, '2026120117', 0)!;
    const withOffset = { ...hourly, lake: lake({ offsets: { [String(tiered)]: 4 }, tieredAtMs: 20_000 }) };
    const view: View = {
      ...emptyView(),
      tables: shardedFrom({ clicks: withOffset }),
      buckets: shardedFrom({
        [bucketId(hourly.id, '2026120117', 0)]: record('2026120117', 0, 10),
        [bucketId(hourly.id, '2026120117', 1)]: record('2026120117', 1, 0),
        [bucketId(hourly.id, '2026120118', 0)]: record('2026120118', 0, 0),
        [bucketId(hourly.id, '2026120118', 1)]: record('2026120118', 1, 3),
      }),
    };
    expect(planTieringRound(view, timing(60_000))).toEqual({
      table: withOffset,
      ranges: [
        { bucket: tiered, startOffset: 4, endOffset: 10 },
        { bucket: lakeBucketOf(hourly, '2026120118', 1), startOffset: 0, endOffset: 3 },
      ],
    });
  });
});
