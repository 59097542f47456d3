import { Int64, Utf8, makeData, RecordBatch, Table, tableToIPC, vectorFromArray } from 'apache-arrow';
import { streamObjectKey } from '@mink/s3stream';
import { BENCH_SCAN } from './bench-limits';
import type { BaselineResult, ScanSeriesResult } from './results';
import {
  checkBucketScan,
  compactedBucket,
  compactionComplete,
  countReplyRows,
  countRows,
  describeCompaction,
  judgeLongPoll,
  offsetHeader,
  parseStreamObjectKey,
  scanGoalMinimum,
  scanRatios,
  servesFormat,
  tileBatches,
  type LongPollReply,
  type ScannedPage,
  type StreamObjectRange,
} from './scan-figures';
import { summarizeLatencies } from './stats';

const MIB = 1024 * 1024;
const bytes = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));

describe('servesFormat', () => {
  it.each<[Parameters<typeof servesFormat>[0], string | null, boolean]>([
    ['json', 'application/json; charset=utf-8', true],
    ['json', 'Application/JSON', true],
    ['ndjson', 'application/x-ndjson', true],
    ['ndjson', 'application/json; charset=utf-8', false],
    ['arrow', 'application/vnd.apache.arrow.stream', true],
    ['arrow', 'application/octet-stream', false],
    ['json', null, false],
  ])('%s answered with %p: %p', (format, contentType, expected) => {
    // Proves a gateway that answers another format than asked (before the new formats land) is caught, not measured.
    expect(servesFormat(format, contentType)).toBe(expected);
  });
});

describe('offsetHeader', () => {
  const headers = (value: string | null) => ({ get: (name: string) => (name === 'Mink-Next-Offset' ? value : null) });

  it('reads an offset, and is null without the header', () => {
    // Proves paging reads the header as a whole number, and tells "absent" apart from "zero".
    expect(offsetHeader(headers('42'), 'Mink-Next-Offset')).toBe(42);
    expect(offsetHeader(headers(' 0 '), 'Mink-Next-Offset')).toBe(0);
    expect(offsetHeader(headers(null), 'Mink-Next-Offset')).toBeNull();
  });

  it.each(['-1', '1.5', 'abc', '', '99999999999999999999'])('refuses %p', (value) => {
    // Proves a malformed header stops the series instead of paging to a wrong offset.
    expect(() => offsetHeader(headers(value), 'Mink-Next-Offset')).toThrow(/not an offset/);
  });
});

describe('countRows', () => {
  const record = (offset: number) => ({ offset, timestamp: 1, row: { id: String(offset), payload: 'x' } });

  it('counts the records of a JSON reply', () => {
    // Proves JSON rows are records.length, and a body that is not a scan reply is an error rather than zero rows.
    expect(countRows('json', bytes(JSON.stringify({ records: [record(0), record(1)], nextOffset: 2, highWatermark: 9 })))).toBe(2);
    expect(countRows('json', bytes(JSON.stringify({ records: [], nextOffset: 9, highWatermark: 9 })))).toBe(0);
    expect(() => countRows('json', bytes('{"error":{"code":"Unavailable"}}'))).toThrow(/records array/);
    expect(() => countRows('json', bytes('{"records":['))).toThrow();
  });

  it.each<[string, string, number]>([
    ['lines ending in a newline', '{"offset":0}\n{"offset":1}\n', 2],
    ['a last line without one', '{"offset":0}\n{"offset":1}', 2],
    ['CRLF line ends and blank lines', '{"offset":0}\r\n\r\n{"offset":1}\r\n\n', 2],
    ['an empty body', '', 0],
  ])('counts NDJSON %s', (_case, text, expected) => {
    // Proves NDJSON rows are the non-empty lines, however the lines end.
    expect(countRows('ndjson', bytes(text))).toBe(expected);
  });

  it('counts the rows of every record batch of an Arrow IPC stream', () => {
    // Proves Arrow rows are the numRows of the whole stream read by apache-arrow, over several batches.
    const batch = (ids: number[]) =>
      new RecordBatch({
        payload: vectorFromArray(ids.map((id) => `p${id}`), new Utf8()).data[0]!,
        _offset: makeData({ type: new Int64(), length: ids.length, data: BigInt64Array.from(ids, BigInt) }),
      });
    const stream = tableToIPC(new Table([batch([0, 1, 2]), batch([3, 4])]), 'stream');
    expect(countRows('arrow', stream)).toBe(5);
    // A page the client read is one IPC stream too.
    expect(countRows('client-arrow', stream)).toBe(5);
    expect(() => countRows('arrow', new Uint8Array(0))).toThrow(/schema/);
  });
});

describe('countReplyRows', () => {
  it('checks that a JSON body states the next offset its header does', () => {
    // Proves a JSON reply whose body and header disagree on where it ends is not counted as a good page.
    const body = bytes(JSON.stringify({ records: [{ offset: 0 }, { offset: 1 }], nextOffset: 2, highWatermark: 9 }));
    expect(countReplyRows('json', body, 2)).toBe(2);
    expect(() => countReplyRows('json', body, 3)).toThrow(/body says nextOffset 2, its header 3/);
    expect(countReplyRows('ndjson', bytes('{"offset":0}\n'), 1)).toBe(1);
  });
});

describe('checkBucketScan', () => {
  const pages = (...spans: [number, number, number][]): ScannedPage[] => spans.map(([offset, nextOffset, rows]) => ({ offset, nextOffset, rows }));

  it('accepts pages that follow each other and hold one row per offset, up to the records appended', () => {
    // Proves a correct scan passes, including a bucket with nothing appended.
    expect(checkBucketScan(3, pages([0, 100, 100], [100, 250, 150]), 250)).toBeNull();
    expect(checkBucketScan(3, pages([0, 0, 0]), 0)).toBeNull();
  });

  it.each<[string, ScannedPage[], number, RegExp]>([
    ['a first page past offset 0', pages([5, 100, 95]), 100, /asked for offset 5 instead of 0/],
    ['a page that does not follow the one before', pages([0, 100, 100], [120, 250, 130]), 250, /asked for offset 120 instead of 100/],
    ['a reply holding fewer rows than it advanced', pages([0, 100, 99]), 100, /held 99 rows but advanced 100 offsets/],
    ['a reply holding more rows than it advanced', pages([0, 100, 101]), 100, /held 101 rows/],
    ['a scan that stops short of the records appended', pages([0, 100, 100]), 250, /100 rows received up to offset 100, but 250 were appended/],
    ['a scan that runs past them', pages([0, 300, 300]), 250, /300 rows received/],
    ['a next offset that goes back', pages([0, 100, 100], [100, 50, 0]), 250, /went back to 50/],
  ])('refuses %s', (_case, scanned, records, message) => {
    // Proves every way a scan can count wrong is named, so its figures are not trusted.
    expect(checkBucketScan(3, scanned, records)).toMatch(message);
  });
});

describe('tileBatches', () => {
  it('orders the acknowledged batches and keeps one of a repeated acknowledgement', () => {
    // Proves the rows of a bucket are known exactly from the acknowledgements, in whatever order they came.
    expect(
      tileBatches(0, [
        { baseOffset: 10, count: 5 },
        { baseOffset: 0, count: 10 },
        { baseOffset: 10, count: 5 },
      ]),
    ).toEqual([
      { baseOffset: 0, count: 10 },
      { baseOffset: 10, count: 5 },
    ]);
    expect(tileBatches(0, [])).toEqual([]);
  });

  it.each<[string, { baseOffset: number; count: number }[], RegExp]>([
    ['a gap (a call failed after writing to this bucket)', [{ baseOffset: 0, count: 10 }, { baseOffset: 12, count: 5 }], /gap at offset 10/],
    ['a first batch past offset 0', [{ baseOffset: 3, count: 5 }], /gap at offset 0/],
    ['an overlap', [{ baseOffset: 0, count: 10 }, { baseOffset: 8, count: 5 }], /overlap at offset 10/],
    ['two batches at one offset', [{ baseOffset: 0, count: 10 }, { baseOffset: 0, count: 9 }], /two batches at offset 0/],
    ['an empty batch', [{ baseOffset: 0, count: 0 }], /of 0 records/],
  ])('refuses %s', (_case, batches, message) => {
    // Proves a bucket whose rows are not known exactly stops the scan figures before they are taken.
    expect(() => tileBatches(2, batches)).toThrow(message);
  });
});

describe('parseStreamObjectKey', () => {
  it.each<[number, string | null, number, number, number, number, number]>([
    [7, null, 3, 0, 25_000, 2, 1],
    [12, '2024-05-01', 0, 100, 200, 1, 4_711],
    [1, 'a-b-c', 1023, 5, 6, 9, 3],
  ])('reads back the key streamObjectKey writes for table %p, partition %p, bucket %p', (tableId, partition, bucket, startOffset, endOffset, nodeEpoch, streamEpoch) => {
    // Proves the bench's reading of stream object keys agrees with the compactor that writes them, partitions with '-' included.
    expect(parseStreamObjectKey(streamObjectKey(tableId, partition, bucket, startOffset, endOffset, nodeEpoch, streamEpoch))).toEqual({ tableId, partition, bucket, startOffset, endOffset, nodeEpoch, streamEpoch });
  });

  it('reads keys written before stream epochs were part of them', () => {
    expect(parseStreamObjectKey('streams/7-_-3/0-25000-2')).toEqual({ tableId: 7, partition: null, bucket: 3, startOffset: 0, endOffset: 25_000, nodeEpoch: 2 });
  });

  it.each(['wal/0000/abc', 'streams/7-_-3', 'streams/7-_-3/0-10', 'streams/x-_-3/0-10-1', 'streams/7-_-3/10-10-1', 'meta/snapshots/1'])('is null for %p', (key) => {
    // Proves WAL objects, snapshots and malformed or empty ranges are never taken for compacted data.
    expect(parseStreamObjectKey(key)).toBeNull();
  });
});

describe('compactedBucket and compactionComplete', () => {
  const batches = Array.from({ length: 20 }, (_, index) => ({ baseOffset: index * 10, count: 10 }));
  const object = (bucket: number, startOffset: number, endOffset: number, partition: string | null = null): StreamObjectRange => ({
    tableId: 7,
    partition,
    bucket,
    startOffset,
    endOffset,
    nodeEpoch: 1,
  });

  it('counts the batches a stream object of the bucket covers whole', () => {
    // Proves only the bucket's own objects count, and a batch half covered is still in the WAL.
    const bucket = compactedBucket(3, batches, [object(3, 0, 100), object(3, 100, 125), object(4, 0, 200), object(3, 0, 200, 'p')], 8);
    expect(bucket).toEqual({ bucket: 3, records: 200, batches: 20, recordsInStreamObjects: 120, walBatches: 8, walSlices: 8, streamObjects: 2 });
    expect(compactionComplete([bucket], 8)).toBe(false);
    expect(describeCompaction([bucket])).toBe('120 of 200 records in 2 stream objects, at most 8 slices (8 appended batches) left in WAL objects per bucket');
  });

  it('is complete once every bucket has fewer slices in WAL objects than a compaction round takes', () => {
    // Proves the wait ends at what compaction will do without more appends: the last few slices stay in the WAL.
    const almost = compactedBucket(0, batches, [object(0, 0, 130)], 7);
    expect(compactionComplete([almost, compactedBucket(1, [], [], 0)], 8)).toBe(true);
    expect(compactionComplete([almost, compactedBucket(1, batches, [], 20)], 8)).toBe(false);
  });

  it('counts slices, not appended batches: the client merges the batches of calls waiting for one bucket into one slice', () => {
    // Proves the bench waited 120 s for nothing before: 30 batches merged into 5 slices are left in the WAL for good, as compaction wants.
    const merged = compactedBucket(2, batches, [object(2, 0, 50)], 5);
    expect(merged.walBatches).toBe(15);
    expect(compactionComplete([merged], 8)).toBe(true);
    expect(describeCompaction([merged])).toBe('50 of 200 records in 1 stream objects, at most 5 slices (15 appended batches) left in WAL objects per bucket');
  });
});

function getBaseline(concurrency: number, bytesPerSecond: number): BaselineResult {
  return {
    kind: 's3-get',
    label: 'S3 GET 1 MiB',
    payloadBytes: MIB,
    concurrency,
    operations: 200,
    failures: 0,
    elapsedMs: 1_000,
    operationsPerSecond: 200,
    bytesPerSecond,
    latency: summarizeLatencies([5, 9]),
  };
}

function series(format: ScanSeriesResult['format'], cache: ScanSeriesResult['cache'], bytesPerSecond: number, rowCheckFailure: string | null = null): ScanSeriesResult {
  return {
    format,
    cache,
    accept: 'application/json',
    contentType: 'application/json',
    scansInFlight: 4,
    pageRecords: 100_000,
    buckets: 8,
    requests: 16,
    bodyBytes: bytesPerSecond * 2,
    rows: 200_000,
    rowsExpected: 200_000,
    elapsedMs: 2_000,
    bytesPerSecond,
    rowsPerSecond: 100_000,
    countMs: 300,
    rowCheckFailure,
    parsedWhileTimed: false,
  };
}

describe('scanRatios', () => {
  it('divides each series by raw S3 GET MB/s with as many in flight, with the goal where the issue set one', () => {
    // Proves the baseline is the 1 MiB GET at the series' in-flight count, and each goal is judged on the ratio.
    const ratios = scanRatios(
      [series('arrow', 'cold', 60_000_000), series('json', 'cold', 5_000_000), series('json', 'hot', 20_000_000), series('ndjson', 'cold', 30_000_000)],
      [getBaseline(1, 1), getBaseline(4, 100_000_000)],
      MIB,
    );
    expect(ratios.map((entry) => [entry.value, entry.baseline, entry.ratio, entry.goal])).toEqual([
      [60_000_000, 100_000_000, 0.6, { minimum: 0.5, met: true }],
      [5_000_000, 100_000_000, 0.05, { minimum: 0.1, met: false }],
      [20_000_000, 100_000_000, 0.2, { minimum: 0.1, met: true }],
      [30_000_000, 100_000_000, 0.3, undefined],
    ]);
    expect(ratios[0]!.text).toBe('scan Arrow cold: 60.0 MB/s, 100 000 rows/s = 0.60 × raw S3 GET MB/s (1 MiB, 4 in flight); goal ≥ 0.50 ×: met');
    expect(ratios[1]!.text).toBe('scan JSON cold: 5.0 MB/s, 100 000 rows/s = 0.05 × raw S3 GET MB/s (1 MiB, 4 in flight); goal ≥ 0.10 ×: not met');
    expect(ratios[3]!.text).toBe('scan NDJSON cold: 30.0 MB/s, 100 000 rows/s = 0.30 × raw S3 GET MB/s (1 MiB, 4 in flight)');
  });

  it('says how far below the goal a ratio is when it prints as the goal itself', () => {
    // Proves "= 0.10 × …; goal ≥ 0.10 ×: not met" never appears without the unrounded ratio that explains it.
    const [ratio] = scanRatios([series('json', 'cold', 9_680_000)], [getBaseline(4, 100_000_000)], MIB);
    expect(ratio!.text).toBe('scan JSON cold: 9.7 MB/s, 100 000 rows/s = 0.10 × raw S3 GET MB/s (1 MiB, 4 in flight); goal ≥ 0.10 ×: not met (0.097 ×)');
  });

  it('gives no ratio to a series whose rows did not check out, or without its baseline', () => {
    // Proves a scan that counted wrong never prints a figure, and a partial run prints only what it measured.
    expect(scanRatios([series('arrow', 'cold', 60_000_000, 'bucket 1: 9 rows received up to offset 9, but 10 were appended')], [getBaseline(4, 1)], MIB)).toEqual([]);
    expect(scanRatios([series('arrow', 'cold', 60_000_000)], [getBaseline(1, 1)], MIB)).toEqual([]);
  });

  it('sets the goals of the issues: Arrow cold at least 0.5 ×, Arrow hot 0.8 ×, JSON 0.1 ×, none for the rest', () => {
    // Proves which series carry a goal line.
    expect(
      [
        scanGoalMinimum('arrow', 'cold'),
        scanGoalMinimum('arrow', 'hot'),
        scanGoalMinimum('json', 'cold'),
        scanGoalMinimum('json', 'hot'),
        scanGoalMinimum('ndjson', 'cold'),
        scanGoalMinimum('client-arrow', 'cold'),
      ],
    ).toEqual([0.5, 0.8, 0.1, 0.1, null, null]);
  });
});

describe('judgeLongPoll', () => {
  const reply = (answeredAtMs: number, records: number[], status = 200): LongPollReply => ({
    answeredAtMs,
    status,
    text: status === 200 ? JSON.stringify({ records: records.map((offset) => ({ offset, timestamp: 1, row: {} })), nextOffset: 0, highWatermark: 0 }) : '{"error":{}}',
  });
  const ten = Array.from({ length: 10 }, (_, index) => 500 + index);

  it.each<[string, LongPollReply, LongPollReturn]>([
    ['the appended records after the append was sent', reply(120, ten), { kind: 'delivered' }],
    ['no records before the append was sent', reply(5, []), { kind: 'not-held', message: expect.stringMatching(/does not hold scans/) }],
    ['no records after the append', reply(30_100, []), { kind: 'failed', message: expect.stringMatching(/answered no records although 10 were appended/) }],
    ['records before the append was sent', reply(50, ten), { kind: 'failed', message: expect.stringMatching(/before the append was sent/) }],
    ['records from another offset', reply(120, ten.map((offset) => offset + 1)), { kind: 'failed', message: expect.stringMatching(/from offset 501 instead of 10 from 500/) }],
    ['part of the batch', reply(120, ten.slice(0, 4)), { kind: 'failed', message: expect.stringMatching(/answered 4 records/) }],
    ['an error status', reply(120, [], 503), { kind: 'failed', message: expect.stringMatching(/HTTP 503/) }],
    ['no answer at all', { answeredAtMs: 120, status: 0, text: 'fetch failed' }, { kind: 'failed', message: expect.stringMatching(/answered nothing: fetch failed/) }],
    ['a body that is not a scan reply', { answeredAtMs: 120, status: 200, text: 'null' }, { kind: 'failed', message: expect.stringMatching(/not a scan reply/) }],
  ])('judges %s', (_case, answered, expected) => {
    // Proves a poll counts as delivered only with exactly the appended batch, and a gateway that does not wait is told apart.
    expect(judgeLongPoll(answered, 100, 500, 10)).toEqual(expected);
  });
});

type LongPollReturn = ReturnType<typeof judgeLongPoll>;
