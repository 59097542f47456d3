import { NO_WRITERS, type BucketRecord, type TableRecord } from '@mink/meta';
import { bucketFiguresOf, clusterSummaryOf, servingState } from './bucket-figures';

/**
 * What GET /v1/cluster reports of a bucket's data: stored offsets, bytes and slices still in WAL objects from the stream's slices, and
 * the lake offset only for a table that has a lake, found under the right lake bucket for a partitioned one.
 */

/** A bucket whose slices have these lengths, in WAL objects except the first `inStreamObjects`. */
function bucket(partition: string | null, number: number, slices: number[], startOffset: number, endOffset: number, inStreamObjects = 0): Pick<BucketRecord, 'partition' | 'bucket' | 'stream'> {
  return {
    partition,
    bucket: number,
    stream: {
      state: 'open',
      epoch: 1,
      node: '1',
      nodeEpoch: 1,
      startOffset,
      endOffset,
      slices: slices.map((length, index) => ({ object: index < inStreamObjects ? `s/7-0-0-1-1` : `wal/${index}`, startOffset: index, endOffset: index + 1, position: 0, length })),
      writers: NO_WRITERS,
    },
  };
}

const LAKE: NonNullable<TableRecord['lake']> = { metadataKey: null, snapshotId: null, offsets: { '1': 40, '41579': 7 }, tieringEpoch: 1, round: null, tieredAtMs: 0 };
const DAILY: NonNullable<TableRecord['partition']> = { column: 'at', unit: 'day' };

const CASES: [string, Pick<TableRecord, 'partition' | 'buckets' | 'lake'>, Pick<BucketRecord, 'partition' | 'bucket' | 'stream'>, object][] = [
  ['a never-written bucket', { buckets: 2 }, bucket(null, 0, [], 0, 0), { startOffset: 0, endOffset: 0, bytes: 0, walSlices: 0 }],
  ['bytes sum the slices', { buckets: 2 }, bucket(null, 1, [100, 250, 3], 4, 90), { startOffset: 4, endOffset: 90, bytes: 353, walSlices: 3 }],
  ['slices in stream objects are not counted as in WAL', { buckets: 2 }, bucket(null, 1, [100, 250, 3], 4, 90, 2), { startOffset: 4, endOffset: 90, bytes: 353, walSlices: 1 }],
  [
    'the slices of the history count their bytes, never as in WAL',
    { buckets: 2 },
    (() => {
      const record = bucket(null, 1, [100, 250, 3], 4, 90, 2);
      return { ...record, stream: { ...record.stream, history: record.stream.slices.slice(0, 2), slices: record.stream.slices.slice(2) } };
    })(),
    { startOffset: 4, endOffset: 90, bytes: 353, walSlices: 1 },
  ],
  ['a lake offset of the bucket', { buckets: 2, lake: LAKE }, bucket(null, 1, [10], 0, 60), { startOffset: 0, endOffset: 60, bytes: 10, walSlices: 1, lakeOffset: 40 }],
  ['a bucket the lake has not reached yet', { buckets: 2, lake: LAKE }, bucket(null, 0, [10], 0, 60), { startOffset: 0, endOffset: 60, bytes: 10, walSlices: 1, lakeOffset: 0 }],
  // 2026-12-02 is day 20 789 since 1970: lake bucket 20 789 × 2 buckets + 1.
  ['a partitioned bucket under its lake bucket', { buckets: 2, partition: DAILY, lake: LAKE }, bucket('20261202', 1, [], 0, 9), { startOffset: 0, endOffset: 9, bytes: 0, walSlices: 0, lakeOffset: 7 }],
  ['a partition name no lake bucket carries', { buckets: 2, partition: DAILY, lake: LAKE }, bucket('not-a-day', 0, [], 0, 9), { startOffset: 0, endOffset: 9, bytes: 0, walSlices: 0, lakeOffset: 0 }],
];

describe('bucketFiguresOf', () => {
  it.each(CASES)('%s', (_name, table, record, expected) => {
    expect(bucketFiguresOf(table, record)).toEqual(expected);
  });
});

describe('servingState', () => {
  const states = new Map([['1', new Map([['7//0', 'open' as const]])]]);
  it.each<[string, string | null, string[], string]>([
    ['a bucket without a leader', null, ['1'], 'unavailable'],
    ['a leader that is not live', '1', ['2'], 'unavailable'],
    ['a live leader that did not answer the status query', '2', ['1', '2'], 'unavailable'],
    ['what the leader reports', '1', ['1'], 'open'],
  ])('%s', (_name, leader, live, expected) => {
    // Proves the state GET /v1/cluster gives a bucket from its leader's liveness and status answer.
    expect(servingState(leader, new Set(live), states, '7//0')).toBe(expected);
  });
  it('a bucket its live leader does not list yet is opening', () => {
    expect(servingState('1', new Set(['1']), states, '7//1')).toBe('opening');
  });
});

describe('clusterSummaryOf', () => {
  const TIERED = { ...LAKE, tieredAtMs: Date.UTC(2026, 11, 2, 10, 0, 0) };
  type Table = Parameters<typeof clusterSummaryOf>[0][number];
  const of = (tableId: number, leader: string | null, record: ReturnType<typeof bucket>) => ({ ...record, tableId, leader });
  const none = new Set<string>();
  it.each<[string, Table, Pick<BucketRecord, 'partition' | 'bucket' | 'stream'>[], object]>([
    ['a table without buckets yet', { id: 1, name: 't', buckets: 2 }, [], { table: 't', buckets: 0, endOffset: 0, bytes: 0 }],
    ['end offsets and bytes sum, no lake fields without a lake', { id: 1, name: 't', buckets: 2 }, [bucket(null, 0, [5, 6], 3, 10), bucket(null, 1, [100], 0, 90)], { table: 't', buckets: 2, endOffset: 100, bytes: 111 }],
    ['lake offsets sum; never tiered', { id: 1, name: 't', buckets: 2, lake: LAKE }, [bucket(null, 0, [], 0, 10), bucket(null, 1, [], 0, 60)], { table: 't', buckets: 2, endOffset: 70, bytes: 0, lakeOffset: 40, tieredAt: null }],
    [
      'partitions count as buckets; the last round as an ISO time',
      { id: 1, name: 'p', buckets: 2, partition: DAILY, lake: TIERED },
      [bucket('20261202', 1, [4], 0, 9), bucket('20261203', 1, [4], 0, 3)],
      { table: 'p', buckets: 2, endOffset: 12, bytes: 8, lakeOffset: 7, tieredAt: '2026-12-02T10:00:00.000Z' },
    ],
  ])('table totals: %s', (_name, table, buckets, expected) => {
    // Proves the per-table figures the summary of GET /v1/cluster carries are the sums of the bucket figures.
    expect(clusterSummaryOf([table], buckets.map((record) => of(table.id, null, record)), none, new Map()).totals).toEqual([expected]);
  });

  it("counts each node's buckets and each serving state, and each bucket for its own table, tables in the order given", () => {
    // Proves the one pass gives what the three passes it replaced gave: leaders' loads, states as servingState
    // gives them, and totals by table id whatever order the buckets come in.
    const states = new Map([
      ['1', new Map<string, 'open' | 'opening'>([['7//0', 'open'], ['8//0', 'open'], ['8//1', 'opening']])],
      ['2', new Map<string, 'open'>([['7//1', 'open']])],
    ]);
    const tables: Table[] = [{ id: 8, name: 'a', buckets: 3 }, { id: 7, name: 'b', buckets: 2 }];
    const buckets = [
      of(7, '1', bucket(null, 0, [10], 0, 5)),
      of(8, '1', bucket(null, 0, [1], 0, 1)),
      of(7, '2', bucket(null, 1, [20], 0, 6)),
      of(8, '1', bucket(null, 1, [], 0, 0)),
      of(8, null, bucket(null, 2, [3], 0, 2)),
      // A bucket of a table not among `tables` (dropped while the answer was built) counts in the states only.
      of(9, '3', bucket(null, 0, [50], 0, 50)),
    ];
    const summary = clusterSummaryOf(tables, buckets, new Set(['1', '2']), states);
    expect(summary.load).toEqual(new Map([['1', 3], ['2', 1], ['3', 1]]));
    expect(summary.bucketStates).toEqual({ open: 3, opening: 1, unavailable: 2 });
    expect(summary.totals).toEqual([
      { table: 'a', buckets: 3, endOffset: 3, bytes: 4 },
      { table: 'b', buckets: 2, endOffset: 11, bytes: 30 },
    ]);
  });
});
