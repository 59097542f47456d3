import type { ColumnSpec } from '@mink/meta';
import { icebergSchemaOf } from './iceberg-schema';
import { streamBatch } from './lake.fixture';
import { type CompactionFile, checkOffsetRun, planLogBucketCompaction } from './log-compaction';
import { parquetOfArrow } from './parquet-of-arrow';
import { lakeBatchesOfParquet } from './parquet-to-arrow';

const BOUNDS = { smallFileBytes: 100, smallFilesMax: 3 };

/** A file `[first, last, size]`, named by its first offset. */
function files(...specs: [first: number, last: number, size: number][]): CompactionFile[] {
  return specs.map(([first, last, size]) => ({ id: `f${first}`, firstOffset: first, lastOffset: last, records: last - first + 1, sizeBytes: size }));
}

describe('planLogBucketCompaction', () => {
  it.each<[string, CompactionFile[], string[][], string | null]>([
    ['no file', [], [], '0 small files, at most 3 kept'],
    ['as many small files as are kept', files([0, 9, 10], [10, 19, 10], [20, 29, 10]), [], '3 small files, at most 3 kept'],
    ['one small file too many: all of them, adjacent, into one', files([0, 9, 10], [10, 19, 10], [20, 29, 10], [30, 39, 10]), [['f0', 'f10', 'f20', 'f30']], null],
    ['files given out of order', files([30, 39, 10], [0, 9, 10], [20, 29, 10], [10, 19, 10]), [['f0', 'f10', 'f20', 'f30']], null],
    ['large files, which stay, cutting the runs', files([0, 9, 10], [10, 19, 10], [20, 29, 500], [30, 39, 10], [40, 49, 10]), [['f0', 'f10'], ['f30', 'f40']], null],
    ['a file exactly at the small size, which is large', files([0, 9, 10], [10, 19, 100], [20, 29, 10], [30, 39, 10], [40, 49, 99]), [['f20', 'f30', 'f40']], null],
    ['a run of one small file between large ones, left out', files([0, 9, 10], [10, 19, 500], [20, 29, 10], [30, 39, 10], [40, 49, 10]), [['f20', 'f30', 'f40']], null],
    ['a gap in the offsets, which also cuts a run', files([0, 9, 10], [10, 19, 10], [25, 29, 10], [30, 39, 10]), [['f0', 'f10'], ['f25', 'f30']], null],
    ['no small file next to another', files([0, 9, 10], [10, 19, 500], [20, 29, 10], [30, 39, 500], [40, 49, 10], [50, 59, 500], [60, 69, 10]), [], '4 small files, none next to another'],
  ])('plans %s', (_case, input, runs, reason) => {
    // Proves the rule: more small files than kept triggers a rewrite of every run of adjacent small files (two or more), in offset order.
    const plan = planLogBucketCompaction(input, BOUNDS);
    expect(plan.runs.map((run) => run.map((file) => file.id))).toEqual(runs);
    expect(plan.reason).toBe(reason);
    // Every run holds a contiguous range of offsets, so its output does too.
    for (const run of plan.runs) for (let index = 1; index < run.length; index++) expect(run[index]!.firstOffset).toBe(run[index - 1]!.lastOffset + 1);
  });

  it.each<[string, CompactionFile[], RegExp]>([
    ['two files sharing an offset', files([0, 9, 10], [9, 19, 10]), /f0 and f9 both hold offset 9/],
    ['a file with fewer records than offsets', [{ id: 'f0', firstOffset: 0, lastOffset: 9, records: 9, sizeBytes: 10 }], /f0 holds 9 records at offsets 0..9/],
    ['a file ending before it starts', [{ id: 'f5', firstOffset: 5, lastOffset: 4, records: 0, sizeBytes: 10 }], /f5 holds 0 records at offsets 5..4/],
    ['a negative offset', [{ id: 'f', firstOffset: -1, lastOffset: 0, records: 2, sizeBytes: 10 }], /holds 2 records at offsets -1..0/],
  ])('refuses %s: not a log bucket', (_case, input, message) => {
    // Proves a lake that breaks the log layout fails loudly instead of being rewritten into something worse.
    expect(() => planLogBucketCompaction(input, BOUNDS)).toThrow(message);
  });

  it.each([
    [{ smallFileBytes: 0, smallFilesMax: 3 }],
    [{ smallFileBytes: 100, smallFilesMax: 0 }],
    [{ smallFileBytes: 1.5, smallFilesMax: 3 }],
  ])('refuses the bounds %j', (bounds) => {
    // Proves a caller cannot turn the rule into "rewrite everything every round" by mistake.
    expect(() => planLogBucketCompaction([], bounds)).toThrow();
  });
});

describe('checkOffsetRun', () => {
  const columns: ColumnSpec[] = [{ name: 'id', type: 'int64' }];
  const schema = icebergSchemaOf(columns);
  /** A data file's rows read back, one stored batch per entry of `batches` ([start offset, records]). */
  function readBack(...batches: [start: number, records: number][]) {
    const file = parquetOfArrow({
      schema,
      bucket: 0,
      batches: batches.map(([start, records]) => streamBatch(columns, Array.from({ length: records }, (_, index) => ({ id: BigInt(start + index) })), start)),
    });
    return lakeBatchesOfParquet(schema, file.bytes);
  }

  it('returns the offset after a run that holds exactly its offsets, above 2^32 too', () => {
    // Proves the 64-bit offsets are read exactly from their two words, within and across batches.
    expect(checkOffsetRun(schema, readBack([0, 10], [10, 5]), 0, 'file')).toBe(15);
    const high = 5_000_000_000;
    expect(checkOffsetRun(schema, [...readBack([high, 3]), ...readBack([high + 3, 2])], high, 'file')).toBe(high + 5);
    expect(checkOffsetRun(schema, [], 7, 'file')).toBe(7);
  });

  it.each<[string, [number, number][], number, RegExp]>([
    ['a gap', [[0, 5], [6, 5]], 0, /file holds offset 6 where 5 was expected/],
    ['another start', [[3, 5]], 0, /file holds offset 3 where 0 was expected/],
  ])('names the first offset out of place: %s', (_case, batches, first, message) => {
    // Proves a compaction cannot write a file that loses or repeats a record.
    expect(() => checkOffsetRun(schema, readBack(...batches), first, 'file')).toThrow(message);
  });

  it('refuses a repeated offset', () => {
    // Proves two copies of one record (two files holding it) are caught.
    expect(() => checkOffsetRun(schema, [...readBack([0, 5]), ...readBack([4, 3])], 0, 'file')).toThrow('file holds offset 4 where 5 was expected');
  });
});
