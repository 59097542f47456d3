import { NO_WRITERS, bucketId, emptyView, shardedFrom, type BucketRecord, type DataSlice, type TableRecord, type View } from '@mink/meta';
import { planStreamTrims, retentionPace, withEndSample, type EndSample } from './retention';

describe('withEndSample', () => {
  it.each<[string, EndSample[], number, number, EndSample[]]>([
    ['the first observation', [], 10, 1_000, [{ offset: 10, atMs: 1_000 }]],
    ['an end that has not moved keeps its older sample', [{ offset: 10, atMs: 1_000 }], 10, 5_000, [{ offset: 10, atMs: 1_000 }]],
    ['a moved end within the spacing waits', [{ offset: 10, atMs: 1_000 }], 20, 1_500, [{ offset: 10, atMs: 1_000 }]],
    ['a moved end after the spacing is sampled', [{ offset: 10, atMs: 1_000 }], 20, 2_000, [{ offset: 10, atMs: 1_000 }, { offset: 20, atMs: 2_000 }]],
    [
      'of the samples older than the TTL only the newest stays',
      [{ offset: 10, atMs: 1_000 }, { offset: 20, atMs: 2_000 }, { offset: 30, atMs: 3_000 }, { offset: 40, atMs: 9_000 }],
      50,
      13_500,
      [{ offset: 30, atMs: 3_000 }, { offset: 40, atMs: 9_000 }, { offset: 50, atMs: 13_500 }],
    ],
  ])('%s', (_case, samples, end, now, expected) => {
    // spacing 1 s, TTL 10 s
    expect(withEndSample(samples, end, now, 1_000, 10_000)).toEqual(expected);
  });
});

const SLICES: DataSlice[] = [
  { object: 'a', startOffset: 0, endOffset: 10, position: 0, length: 1 },
  { object: 'b', startOffset: 10, endOffset: 20, position: 0, length: 1 },
];

function tableOf(properties: Record<string, string>, kind: 'log' | 'pk' = 'log', lakeOffset?: number): TableRecord {
  return {
    id: 1,
    name: 't',
    kind,
    columns: [{ name: 'id', type: 'int64' }],
    primaryKey: kind === 'pk' ? ['id'] : [],
    bucketKey: [],
    buckets: 1,
    properties,
    createdAtMs: 0,
    partitions: [],
    ...(lakeOffset === undefined ? {} : { lake: { metadataKey: 'm', snapshotId: '1', offsets: { '0': lakeOffset }, tieringEpoch: 1, round: null, tieredAtMs: 1 } }),
  };
}

function viewOf(table: TableRecord, options: { startOffset?: number; kvOffset?: number; inHistory?: number } = {}): View {
  const startOffset = options.startOffset ?? 0;
  const slices = SLICES.filter((slice) => slice.endOffset > startOffset);
  const lists = options.inHistory === undefined ? { slices } : { history: slices.slice(0, options.inHistory), slices: slices.slice(options.inHistory) };
  const record: BucketRecord = {
    tableId: 1,
    table: 't',
    partition: null,
    bucket: 0,
    leader: '1',
    leaderEpoch: 1,
    stream: { state: 'open', epoch: 1, node: '1', nodeEpoch: 1, startOffset, endOffset: 20, ...lists, writers: NO_WRITERS },
    kvSnapshots: options.kvOffset === undefined ? [] : [{ object: 'kv', appliedOffset: options.kvOffset, bytes: 1, streamEpoch: 1 }],
  };
  return { ...emptyView(), tables: shardedFrom({ t: table }), buckets: shardedFrom({ [bucketId(1, null, 0)]: record }) };
}

describe('planStreamTrims', () => {
  // TTL 10 s; the bucket was seen at end 10 at t=1 s and at end 20 at t=8 s; now is t=15 s.
  const SAMPLES: EndSample[] = [
    { offset: 10, atMs: 1_000 },
    { offset: 20, atMs: 8_000 },
  ];
  const TTL = { 'table.log.ttl': '10s' };

  it.each<[string, View, number, number | null]>([
    ['trims up to the end seen one TTL ago', viewOf(tableOf(TTL)), 15_000, 10],
    ['trims up to the newer end once it is a TTL old', viewOf(tableOf(TTL)), 18_000, 20],
    ['asks nothing before any sample is a TTL old', viewOf(tableOf(TTL)), 10_999, null],
    ['asks nothing of a table that keeps its stream forever', viewOf(tableOf({ 'table.log.ttl': '0' })), 99_000, null],
    ['asks nothing when the stream already starts there', viewOf(tableOf(TTL), { startOffset: 10 }), 15_000, null],
    ['stops at the lake offset', viewOf(tableOf({ ...TTL, 'table.datalake.enabled': 'true' }, 'log', 10)), 18_000, 10],
    ['asks nothing of a lake table whose lake holds nothing yet', viewOf(tableOf({ ...TTL, 'table.datalake.enabled': 'true' })), 18_000, null],
    ['stops at the newest KV snapshot of a PK bucket', viewOf(tableOf(TTL, 'pk'), { kvOffset: 12 }), 18_000, 12],
    ['asks nothing when the first slice would stay whole', viewOf(tableOf(TTL, 'pk'), { kvOffset: 5 }), 18_000, null],
    ['finds the first slice in the history of a stream that has one', viewOf(tableOf(TTL), { inHistory: 1 }), 15_000, 10],
    ['asks nothing when the first slice of the history would stay whole', viewOf(tableOf(TTL, 'pk'), { kvOffset: 5, inHistory: 1 }), 18_000, null],
  ])('%s', (_case, view, nowMs, expected) => {
    const trims = planStreamTrims(view, () => SAMPLES, nowMs);
    expect(trims).toEqual(expected === null ? [] : [{ tableId: 1, partition: null, bucket: 0, startOffset: expected }]);
  });

  it('uses the default TTL of 7 days', () => {
    expect(planStreamTrims(viewOf(tableOf({})), () => [{ offset: 20, atMs: 0 }], 7 * 86_400_000 - 1)).toEqual([]);
    expect(planStreamTrims(viewOf(tableOf({})), () => [{ offset: 20, atMs: 0 }], 7 * 86_400_000)).toEqual([{ tableId: 1, partition: null, bucket: 0, startOffset: 20 }]);
  });
});

describe('planStreamTrims of the tables looked at this round', () => {
  it('plans only the tables named, and skips a name the view no longer has', () => {
    // Proves the retention loop can plan trims for the tables it visited without looking at the others.
    const view = viewOf(tableOf({ 'table.log.ttl': '10s' }));
    expect(planStreamTrims(view, () => [{ offset: 20, atMs: 0 }], 15_000, ['t'])).toEqual([{ tableId: 1, partition: null, bucket: 0, startOffset: 20 }]);
    expect(planStreamTrims(view, () => [{ offset: 20, atMs: 0 }], 15_000, [])).toEqual([]);
    expect(planStreamTrims(view, () => [{ offset: 20, atMs: 0 }], 15_000, ['dropped'])).toEqual([]);
  });
});

describe('retentionPace (loop every 5 s, 16 samples per TTL)', () => {
  it.each<[string, number, number, number]>([
    ['the default TTL of 7 days: a sample every 10.5 h, a visit every 2.6 h', 7 * 86_400_000, 37_800_000, 9_450_000],
    ['a TTL of 1 hour: a sample every 225 s, a visit every 56 s', 3_600_000, 225_000, 56_250],
    ['a short TTL: both at the loop period', 10_000, 5_000, 5_000],
  ])('%s', (_case, ttlMs, sampleSpacingMs, visitEveryMs) => {
    // Proves a table is looked at often enough for its samples and no more, never more often than the loop runs.
    expect(retentionPace(ttlMs, 5_000, 16)).toEqual({ sampleSpacingMs, visitEveryMs });
  });
});
