import { bucketKey, durationTextMs, formatAge, formatBytes, formatLake, lakeFreshness, formatCount, formatRate, movedBuckets, recentScanOf, rowText, sparklinePoints, tableFigures, throughputSeries, type BucketStatus, type ClusterSample, type TableTotals } from './figures';

/**
 * The console's derivations from polls of GET /v1/cluster: per-table figures and the records/s rate between
 * two polls (none without an earlier poll, over no elapsed time, or when a table's sum went down), the
 * buckets whose leader changed, and the text forms of counts, rates and sizes.
 */

function bucket(table: string, number: number, endOffset: number, extra: Partial<BucketStatus> = {}): BucketStatus {
  return { table, bucket: number, leader: '1', leaderEpoch: 1, streamEpoch: 1, state: 'open', startOffset: 0, endOffset, bytes: endOffset * 10, ...extra };
}

function totals(table: string, buckets: number, endOffset: number, extra: Partial<TableTotals> = {}): TableTotals {
  return { table, buckets, endOffset, bytes: endOffset * 10, ...extra };
}

function sample(atMs: number, tables: TableTotals[]): ClusterSample {
  return { atMs, status: { tables } };
}

describe('tableFigures', () => {
  const CASES: [string, ClusterSample[], ClusterSample, object[]][] = [
    ['no earlier poll: the totals, no rate', [], sample(1000, [totals('a', 2, 12)]), [{ table: 'a', buckets: 2, records: 12, recordsPerSecond: null, bytes: 120, lakeOffset: null }]],
    [
      'a rate over two seconds, per table, in the order of the answer',
      [sample(1000, [totals('a', 1, 100), totals('b', 1, 10)])],
      sample(3000, [totals('b', 1, 30), totals('a', 1, 100)]),
      [
        { table: 'b', buckets: 1, records: 30, recordsPerSecond: 10, bytes: 300, lakeOffset: null },
        { table: 'a', buckets: 1, records: 100, recordsPerSecond: 0, bytes: 1000, lakeOffset: null },
      ],
    ],
    ['measured from the oldest poll of the window', [sample(0, [totals('a', 1, 0)]), sample(2000, [totals('a', 1, 80)])], sample(4000, [totals('a', 1, 100)]), [{ table: 'a', buckets: 1, records: 100, recordsPerSecond: 25, bytes: 1000, lakeOffset: null }]],
    [
      'a table new within the window is measured from the first poll that knew it',
      [sample(0, []), sample(2000, [totals('a', 1, 10)])],
      sample(3000, [totals('a', 1, 40)]),
      [{ table: 'a', buckets: 1, records: 40, recordsPerSecond: 30, bytes: 400, lakeOffset: null }],
    ],
    ['a table new since the last poll has no rate yet', [sample(1000, [])], sample(2000, [totals('a', 1, 4)]), [{ table: 'a', buckets: 1, records: 4, recordsPerSecond: null, bytes: 40, lakeOffset: null }]],
    ['a table whose sum went down (dropped, created again) has no rate', [sample(1000, [totals('a', 1, 50)])], sample(2000, [totals('a', 1, 3)]), [{ table: 'a', buckets: 1, records: 3, recordsPerSecond: null, bytes: 30, lakeOffset: null }]],
    ['no elapsed time, no rate', [sample(1000, [totals('a', 1, 1)])], sample(1000, [totals('a', 1, 9)]), [{ table: 'a', buckets: 1, records: 9, recordsPerSecond: null, bytes: 90, lakeOffset: null }]],
    ['a table with a lake', [], sample(1000, [totals('p', 2, 13, { lakeOffset: 5, tieredAt: null })]), [{ table: 'p', buckets: 2, records: 13, recordsPerSecond: null, bytes: 130, lakeOffset: 5 }]],
    ['half a second', [sample(0, [totals('a', 1, 0)])], sample(500, [totals('a', 1, 3)]), [{ table: 'a', buckets: 1, records: 3, recordsPerSecond: 6, bytes: 30, lakeOffset: null }]],
  ];
  it.each(CASES)('%s', (_name, earlier, current, expected) => {
    expect(tableFigures(earlier, current)).toEqual(expected);
  });
});

describe('movedBuckets', () => {
  it('names the buckets whose leader changed, by table, partition and number', () => {
    const earlier = [bucket('a', 0, 0, { leader: '1' }), bucket('a', 1, 0, { leader: '2' }), bucket('p', 0, 0, { partition: 'x', leader: '1' })];
    const current = [bucket('a', 0, 0, { leader: '3' }), bucket('a', 1, 0, { leader: '2' }), bucket('p', 0, 0, { partition: 'x', leader: null }), bucket('p', 0, 0, { partition: 'y', leader: '2' })];
    expect([...movedBuckets(earlier, current)].sort()).toEqual(['a//0', 'p/x/0']);
  });
  it('names none without an earlier poll', () => {
    expect(movedBuckets(null, [bucket('a', 0, 0)]).size).toBe(0);
  });
  it('keys a bucket by table, partition and number', () => {
    expect([bucketKey({ table: 't', bucket: 3 }), bucketKey({ table: 't', partition: '2026120213', bucket: 0 })]).toEqual(['t//3', 't/2026120213/0']);
  });
});

describe('formats', () => {
  it.each([
    [0, '0'],
    [999, '999'],
    [1234, '1 234'],
    [1234567.4, '1 234 567'],
    [-45000, '-45 000'],
  ])('formatCount(%p) = %p', (value, text) => expect(formatCount(value)).toBe(text));

  it.each([
    [null, '–'],
    [0, '0/s'],
    [0.25, '0.3/s'],
    [9.5, '9.5/s'],
    [12.4, '12/s'],
    [250_000, '250 000/s'],
  ])('formatRate(%p) = %p', (value, text) => expect(formatRate(value)).toBe(text));

  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1536, '1.50 KiB'],
    [10 * 1024 * 1024, '10.0 MiB'],
    [300 * 1024 ** 3, '300 GiB'],
    [2 * 1024 ** 6, '2048 PiB'],
  ])('formatBytes(%p) = %p', (value, text) => expect(formatBytes(value)).toBe(text));
});

describe('recentScanOf', () => {
  it.each<[string, number, number, number, { offset: number; limit: number } | null]>([
    ['an empty bucket', 0, 0, 20, null],
    ['a bucket whose records were all trimmed', 40, 40, 20, null],
    ['fewer records than asked for', 0, 7, 20, { offset: 0, limit: 7 }],
    ['the last 20 of many', 0, 1000, 20, { offset: 980, limit: 20 }],
    ['never below the stored start', 990, 1000, 20, { offset: 990, limit: 10 }],
    ['no records asked for', 0, 10, 0, null],
  ])('%s: [%p, %p) last %p', (_name, startOffset, endOffset, count, expected) => {
    // Proves the recent-records preview reads exactly the newest records the bucket still stores.
    expect(recentScanOf({ startOffset, endOffset }, count)).toEqual(expected);
  });
});

describe('rowText', () => {
  const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  it.each<[string, Record<string, unknown>, boolean, string]>([
    ['a table row as its JSON', { id: '7', name: '<b>x</b>' }, false, '{"id":"7","name":"<b>x</b>"}'],
    [
      'a topic record with UTF-8 key, value and header',
      { key: base64('k1'), value: base64('{"n":1}'), headers: JSON.stringify([{ key: 'h', value: base64('é') }]) },
      true,
      '{"key":"k1","value":"{\\"n\\":1}","headers":[{"key":"h","value":"é"}]}',
    ],
    ['a null key stays null', { key: null, value: base64('v'), headers: '[]' }, true, '{"key":null,"value":"v","headers":[]}'],
    ['bytes that are not UTF-8 stay base64', { key: null, value: btoa(String.fromCharCode(0xff, 0xfe)), headers: '[]' }, true, '{"key":null,"value":"base64://4=","headers":[]}'],
    ['headers that are not JSON are shown as they came', { key: null, value: null, headers: 'oops' }, true, '{"key":null,"value":null,"headers":"oops"}'],
  ])('%s', (_name, row, kafkaFormat, expected) => {
    expect(rowText(row, kafkaFormat)).toBe(expected);
  });
});

describe('throughputSeries', () => {
  it.each<[string, ClusterSample[], number, object[]]>([
    ['no polls', [], 60_000, []],
    ['one poll has no rate yet', [sample(0, [totals('a', 1, 5)])], 60_000, []],
    [
      'the rate between each two polls, at the later one',
      [sample(0, [totals('a', 1, 0)]), sample(1000, [totals('a', 1, 10)]), sample(3000, [totals('a', 1, 10)]), sample(3500, [totals('a', 1, 30)])],
      60_000,
      [
        { atMs: 1000, recordsPerSecond: 10 },
        { atMs: 3000, recordsPerSecond: 0 },
        { atMs: 3500, recordsPerSecond: 40 },
      ],
    ],
    [
      'only the polls within the window before the newest',
      [sample(0, [totals('a', 1, 0)]), sample(1000, [totals('a', 1, 10)]), sample(2000, [totals('a', 1, 20)]), sample(3000, [totals('a', 1, 50)])],
      1000,
      [
        { atMs: 2000, recordsPerSecond: 10 },
        { atMs: 3000, recordsPerSecond: 30 },
      ],
    ],
    [
      'no point across a drop and re-create, a poll without the table, or no elapsed time',
      [sample(0, [totals('a', 1, 50)]), sample(1000, [totals('a', 1, 2)]), sample(2000, []), sample(3000, [totals('a', 1, 4)]), sample(3000, [totals('a', 1, 6)]), sample(4000, [totals('a', 1, 8)])],
      60_000,
      [{ atMs: 4000, recordsPerSecond: 2 }],
    ],
    ['another table’s polls give this one no points', [sample(0, [totals('b', 1, 0)]), sample(1000, [totals('b', 1, 10)])], 60_000, []],
  ])('%s', (_name, history, windowMs, expected) => {
    // Proves the sparkline's series: records/s per poll interval, only where the table's records are comparable.
    expect(throughputSeries(history, 'a', windowMs)).toEqual(expected);
  });
});

describe('sparklinePoints', () => {
  it.each<[string, { atMs: number; recordsPerSecond: number }[], string]>([
    ['no points', [], ''],
    [
      'time across the window, the peak at the top',
      [
        { atMs: 40_000, recordsPerSecond: 0 },
        { atMs: 70_000, recordsPerSecond: 50 },
        { atMs: 100_000, recordsPerSecond: 100 },
      ],
      '40,20 70,10 100,0',
    ],
    [
      'zeros along the bottom',
      [
        { atMs: 50_000, recordsPerSecond: 0 },
        { atMs: 100_000, recordsPerSecond: 0 },
      ],
      '50,20 100,20',
    ],
    ['one decimal', [{ atMs: 33_333, recordsPerSecond: 1 }, { atMs: 66_667, recordsPerSecond: 3 }], '33.3,13.3 66.7,0'],
  ])('%s', (_name, series, expected) => {
    // A 100 × 20 box over the 100 s up to t = 100 s.
    expect(sparklinePoints(series, 100_000, 100_000, 100, 20)).toBe(expected);
  });
});

describe('durationTextMs', () => {
  it.each<[string, number | null]>([
    ['1s', 1_000],
    ['500ms', 500],
    ['3m', 180_000],
    ['1h', 3_600_000],
    ['7d', 604_800_000],
    ['250', 250],
    [' 2 s ', 2_000],
    ['1.5s', 1_500],
    ['soon', null],
    ['-1s', null],
    ['', null],
  ])('%p -> %p', (text, expected) => {
    expect(durationTextMs(text)).toBe(expected);
  });
});

describe('lakeFreshness', () => {
  const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
  it.each<[string, Partial<TableTotals>, object | null]>([
    ['a table without a lake', { endOffset: 10 }, null],
    ['never tiered, records waiting: stale', { endOffset: 10, lakeOffset: 0, tieredAt: null }, { behind: 10, ageMs: null, stale: true }],
    ['never tiered, nothing to tier', { endOffset: 0, lakeOffset: 0, tieredAt: null }, { behind: 0, ageMs: null, stale: false }],
    ['tiered 5 s ago, within twice the target', { endOffset: 10, lakeOffset: 4, tieredAt: '2026-12-07T11:59:55.000Z' }, { behind: 6, ageMs: 5_000, stale: false }],
    ['tiered long ago, records waiting: stale', { endOffset: 10, lakeOffset: 4, tieredAt: '2026-12-07T11:00:00.000Z' }, { behind: 6, ageMs: 3_600_000, stale: true }],
    ['tiered long ago, nothing waiting: not stale', { endOffset: 10, lakeOffset: 10, tieredAt: '2026-12-07T11:00:00.000Z' }, { behind: 0, ageMs: 3_600_000, stale: false }],
    ['a round stamped ahead of this clock counts as just now', { endOffset: 1, lakeOffset: 0, tieredAt: '2026-12-07T12:00:03.000Z' }, { behind: 1, ageMs: 0, stale: false }],
  ])('%s', (_name, figures, expected) => {
    // Proves what the tables' lake column says of a table's lake against a 3 s freshness target.
    expect(lakeFreshness({ endOffset: 0, ...figures }, NOW, 3_000)).toEqual(expected);
  });
});

describe('formatAge', () => {
  it.each([
    [0, '0 s'],
    [999, '0 s'],
    [59_999, '59 s'],
    [65_000, '1 min 5 s'],
    [7_500_000, '2 h 5 min'],
    [2 * 86_400_000, '2 d 0 h'],
  ])('formatAge(%p) = %p', (value, text) => expect(formatAge(value)).toBe(text));
});

describe('formatLake', () => {
  it.each<[string, number | null, { behind: number; ageMs: number | null; stale: boolean } | null, string]>([
    ['no lake', null, null, 'no lake'],
    ['never tiered', 0, { behind: 1200, ageMs: null, stale: true }, '0 (1 200 behind), never tiered, target 1 s'],
    ['tiered a moment ago', 1500, { behind: 0, ageMs: 2_400, stale: false }, '1 500 (0 behind), tiered 2 s ago, target 1 s'],
  ])('%s', (_name, lakeOffset, freshness, text) => {
    expect(formatLake(lakeOffset, freshness, 1_000)).toBe(text);
  });
});
