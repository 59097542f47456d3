import type { RecordBatch } from 'apache-arrow';
import type { ColumnSpec } from '@mink/meta';
import { type ChangeType, type Row, encodeBatch } from '@mink/records';
import { gatherRows } from './arrow-gather';
import { type DuckReader, openDuckReader } from './duckdb.fixture';
import { LakeBucketTooLargeError } from './errors';
import { icebergSchemaOf } from './iceberg-schema';
import { MergedBucketState } from './merged-state';
import { type LakeChangelogBatch, changelogOfStoredBatch, lakeArrowSchemaOf, parquetOfArrow, parquetOfLakeBatches } from './parquet-of-arrow';
import { lakeBatchesOfParquet } from './parquet-to-arrow';

/** A table with a column of every type; `id` is its primary key. */
const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'flag', type: 'boolean' },
  { name: 'count', type: 'int32' },
  { name: 'ratio', type: 'float64' },
  { name: 'label', type: 'string' },
  { name: 'blob', type: 'bytes' },
  { name: 'at', type: 'timestamp' },
];
const SCHEMA = icebergSchemaOf(COLUMNS, ['id']);
const BUCKET = 4;
const TIME_MS = 1_700_000_000_000;

/** Row of key `id` in version `version`; odd versions have nulls in every nullable column. */
function rowOf(id: number, version = 0): Row {
  if (version % 2 === 1) return { id: BigInt(id), flag: null, count: null, ratio: null, label: null, blob: null, at: null };
  return { id: BigInt(id), flag: id % 2 === 0, count: id * 10 + version, ratio: id / 4 + version, label: `k${id}-v${version}`, blob: Uint8Array.of(id, version), at: TIME_MS + id };
}

/** One stored changelog batch at `startOffset` with `changes` as [change type, key, version]. */
function changelogBatch(startOffset: number, changes: [ChangeType, number, number?][], timeMs = TIME_MS + startOffset): LakeChangelogBatch {
  const payload = encodeBatch(
    COLUMNS,
    changes.map(([, id, version]) => rowOf(id, version ?? 0)),
    timeMs,
    changes.map(([changeType]) => changeType),
  );
  const batches = changelogOfStoredBatch(SCHEMA, BUCKET, payload, startOffset);
  expect(batches).toHaveLength(1);
  return batches[0]!;
}

/** The lake file of live rows [key, version, offset], read back into Arrow as a round reads it. */
function lakeFile(rows: [number, number, number][]): RecordBatch[] {
  if (rows.length === 0) return [];
  const payload = encodeBatch(
    COLUMNS,
    rows.map(([id, version]) => rowOf(id, version)),
    TIME_MS,
  );
  const file = parquetOfArrow({ schema: SCHEMA, bucket: BUCKET, batches: [{ payload, rowOffsets: rows.map(([, , offset]) => offset) }] });
  return lakeBatchesOfParquet(SCHEMA, file.bytes);
}

/** The version `keysOf` reports for a row of an odd version, whose columns but the key are all null. */
const NULLS = -1;

/** [key, version, offset] of each row of a merged state, in its order. */
function keysOf(state: RecordBatch | null): [number, number, number][] {
  if (state === null) return [];
  return state.toArray().map((row) => {
    const json = row.toJSON() as Record<string, unknown>;
    const id = Number(json.id);
    const count = json.count as number | null;
    return [id, count === null ? NULLS : count - id * 10, Number(json.__offset)];
  });
}

describe('MergedBucketState', () => {
  it.each<[string, [number, number, number][], LakeChangelogBatch[], [number, number], [number, number, number][]]>([
    ['inserts into an empty bucket', [], [changelogBatch(0, [['+I', 1], ['+I', 2]])], [0, 2], [[1, 0, 0], [2, 0, 1]]],
    ['an update: the +U row at its offset, the -U skipped', [[1, 0, 0], [2, 0, 1]], [changelogBatch(2, [['-U', 1], ['+U', 1, 2]])], [2, 4], [[2, 0, 1], [1, 2, 3]]],
    ['a delete removes the key', [[1, 0, 0], [2, 0, 1]], [changelogBatch(2, [['-D', 1]])], [2, 3], [[2, 0, 1]]],
    ['a re-insert after a delete', [[1, 0, 0]], [changelogBatch(1, [['-D', 1], ['+I', 1, 4]])], [1, 3], [[1, 4, 2]]],
    ['a row with nulls replaces one with values', [[1, 0, 0]], [changelogBatch(1, [['-U', 1], ['+U', 1, 1]])], [1, 3], [[1, NULLS, 2]]],
    ['a range that starts and ends inside a batch', [], [changelogBatch(0, [['+I', 1], ['+I', 2], ['-D', 1], ['+I', 3]])], [1, 3], [[2, 0, 1]]],
    ['every key deleted', [[1, 0, 0], [2, 0, 1]], [changelogBatch(2, [['-D', 2], ['-D', 1]])], [2, 4], []],
    ['a delete of a key not in the state changes nothing (as the KV tablet folds it)', [[1, 0, 0]], [changelogBatch(1, [['-D', 9]])], [1, 2], [[1, 0, 0]]],
    ['an insert of a live key replaces it (as the KV tablet folds it)', [[1, 0, 0]], [changelogBatch(1, [['+I', 1, 6]])], [1, 2], [[1, 6, 1]]],
    [
      'several batches, keys kept in the order of their last change',
      [[1, 0, 0], [2, 0, 1], [3, 0, 2]],
      [changelogBatch(3, [['-U', 1], ['+U', 1, 2]]), changelogBatch(5, [['-D', 2], ['+I', 4]]), changelogBatch(7, [['-U', 3], ['+U', 3, 4], ['+I', 2, 6]])],
      [3, 10],
      [[1, 2, 4], [4, 0, 6], [3, 4, 8], [2, 6, 9]],
    ],
  ])('%s', (_case, lakeRows, changelog, [fromOffset, endOffset], expected) => {
    // Proves one row of the fold's table: the state after the lake rows and the range's changes, with each
    // live key's offset of last change, in that order; with and without folding after every batch.
    for (const foldBytes of [undefined, 1]) {
      const state = new MergedBucketState({ schema: SCHEMA, tableName: 'accounts', bucket: BUCKET, foldBytes });
      state.addLakeRows(lakeFile(lakeRows), 'old.parquet');
      for (const batch of changelog) state.applyChangelog(batch, fromOffset, endOffset);
      expect(state.keys).toBe(expected.length);
      expect(keysOf(state.finish())).toEqual(expected);
    }
  });

  it('keeps every column of the winning change, nulls included, and its append time in microseconds', () => {
    // Proves the gathered row is the change's row as a whole (every type), not a mix of versions.
    const state = new MergedBucketState({ schema: SCHEMA, tableName: 'accounts', bucket: BUCKET });
    state.addLakeRows(lakeFile([[1, 0, 0], [2, 0, 1]]), 'old.parquet');
    state.applyChangelog(changelogBatch(2, [['-U', 1], ['+U', 1, 1], ['-U', 2], ['+U', 2, 2]], 1_800_000_000_000), 2, 6);
    const merged = state.finish()!;
    expect(merged.toArray().map((row) => row.toJSON())).toEqual([
      { id: 1n, flag: null, count: null, ratio: null, label: null, blob: null, at: null, __bucket: BUCKET, __offset: 3n, __timestamp: expect.anything() },
      { id: 2n, flag: true, count: 22, ratio: 2.5, label: 'k2-v2', blob: Uint8Array.of(2, 2), at: expect.anything(), __bucket: BUCKET, __offset: 5n, __timestamp: expect.anything() },
    ]);
    // Timestamps in the lake's microseconds: the row's own column and the change's append time.
    const micros = (name: string) => [...(merged.getChild(name)!.data[0]!.values as BigInt64Array)];
    expect(micros('__timestamp')).toEqual([1_800_000_000_000_000n, 1_800_000_000_000_000n]);
    expect(micros('at')[1]).toBe(BigInt(TIME_MS + 2) * 1000n);
  });

  it.each<[string, (state: MergedBucketState) => void, RegExp]>([
    ['an unknown change type', (state) => state.applyChangelog({ ...changelogBatch(0, [['+I', 1]]), changeCodes: Int8Array.of(9) }, 0, 1), /change type code 9 at offset 0/],
    [
      'changes with a gap',
      (state) => {
        state.applyChangelog(changelogBatch(0, [['+I', 1]]), 0, 1);
        state.applyChangelog(changelogBatch(2, [['+I', 2]]), 2, 3);
      },
      /changes at offset 2 follow those up to 1/,
    ],
    [
      'lake rows after the changelog',
      (state) => {
        state.applyChangelog(changelogBatch(0, [['+I', 1]]), 0, 1);
        state.addLakeRows(lakeFile([[2, 0, 0]]), 'late.parquet');
      },
      /come before the changelog/,
    ],
    [
      'a key live twice in the lake',
      (state) => {
        state.addLakeRows(lakeFile([[1, 0, 0]]), 'a.parquet');
        state.addLakeRows(lakeFile([[1, 2, 5]]), 'b.parquet');
      },
      /key "1" of bucket 4 of 'accounts' is live twice in the lake \(again in b.parquet\)/,
    ],
    [
      'a second finish',
      (state) => {
        state.finish();
        state.finish();
      },
      /finished/,
    ],
  ])('fails on %s', (_case, act, message) => {
    // Proves broken invariants of the input are loud plain Errors, never a silently wrong state.
    expect(() => act(new MergedBucketState({ schema: SCHEMA, tableName: 'accounts', bucket: BUCKET }))).toThrow(message);
  });

  it('refuses a schema without identifier fields', () => {
    // Proves a log table's lake schema cannot be merged by key by mistake.
    expect(() => new MergedBucketState({ schema: icebergSchemaOf(COLUMNS), tableName: 'events', bucket: 0 })).toThrow(/no identifier fields/);
  });

  it.each<[string, { keysMax?: number; stateBytesMax?: number }, (state: MergedBucketState) => void, RegExp]>([
    ['too many keys from the lake', { keysMax: 2 }, (state) => state.addLakeRows(lakeFile([[1, 0, 0], [2, 0, 1], [3, 0, 2]]), 'old.parquet'), /3 live keys .* more than the 2/],
    ['too many keys from the changelog', { keysMax: 2 }, (state) => state.applyChangelog(changelogBatch(0, [['+I', 1], ['+I', 2], ['+I', 3]]), 0, 3), /3 live keys/],
    ['too many bytes from the lake', { stateBytesMax: 100 }, (state) => state.addLakeRows(lakeFile([[1, 0, 0], [2, 0, 1]]), 'old.parquet'), /bytes of merged state .* more than the 100/],
    [
      'too many bytes once folded',
      { stateBytesMax: 300 },
      (state) => {
        state.applyChangelog(changelogBatch(0, Array.from({ length: 40 }, (_, index): [ChangeType, number] => ['+I', index])), 0, 40);
        state.finish();
      },
      /bytes of merged state .* more than the 300/,
    ],
  ])('refuses %s with LakeBucketTooLargeError', (_case, bounds, act, message) => {
    // Proves the memory bounds are enforced where the state grows, as a typed refusal naming the bound.
    const state = new MergedBucketState({ schema: SCHEMA, tableName: 'accounts', bucket: BUCKET, ...bounds });
    let error: unknown;
    try {
      act(state);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(LakeBucketTooLargeError);
    expect(String(error)).toMatch(message);
  });

  it('leaves a key a delete removes within the bound: a transient key count is what counts', () => {
    // Proves the key bound is on live keys at any moment, so deletes make room for later inserts.
    const state = new MergedBucketState({ schema: SCHEMA, tableName: 'accounts', bucket: BUCKET, keysMax: 2 });
    state.applyChangelog(changelogBatch(0, [['+I', 1], ['+I', 2], ['-D', 1], ['+I', 3]]), 0, 4);
    expect(keysOf(state.finish())).toEqual([[2, 0, 1], [3, 0, 3]]);
  });
});

describe('lake data files read back and rewritten', () => {
  let duck: DuckReader;
  beforeAll(async () => {
    duck = await openDuckReader();
  });
  afterAll(() => duck.close());

  it('reads a data file back into the lake layout and writes it again unchanged, every type and nulls included', async () => {
    // Proves the copy-on-write path loses nothing: what DuckDB reads from a rewritten file is what it read
    // from the original, including microsecond timestamps, bytes, nulls and the per-row offsets.
    const rows = Array.from({ length: 9 }, (_, index) => rowOf(index, index % 3));
    const original = parquetOfArrow({ schema: SCHEMA, bucket: BUCKET, batches: [{ payload: encodeBatch(COLUMNS, rows, TIME_MS), rowOffsets: rows.map((_, index) => 100 + index * 7) }] });
    const batches = lakeBatchesOfParquet(SCHEMA, original.bytes);
    expect(batches.map((batch) => batch.schema.fields.map((field) => `${field.name}:${field.type}`))).toEqual([lakeArrowSchemaOf(SCHEMA).fields.map((field) => `${field.name}:${field.type}`)]);
    const rewritten = parquetOfLakeBatches({ schema: SCHEMA, bucket: BUCKET, batches });
    expect(rewritten.metrics.recordCount).toBe(9);
    expect(rewritten.offsets).toEqual(original.offsets);
    const read = async (bytes: Uint8Array, name: string) => duck.json(`select * from read_parquet(${duck.file(name, bytes)}) order by __offset`);
    expect(await read(rewritten.bytes, 'rewritten.parquet')).toEqual(await read(original.bytes, 'original.parquet'));
  });

  it("refuses a file that is not of the table's schema, and batches of another bucket", () => {
    // Proves a mismatched file fails loudly instead of being merged under the wrong columns.
    const other = icebergSchemaOf([{ name: 'id', type: 'int64' }], ['id']);
    const file = parquetOfArrow({ schema: other, bucket: 0, batches: [{ payload: encodeBatch([{ name: 'id', type: 'int64' }], [{ id: 1n }], TIME_MS), startOffset: 0 }] });
    expect(() => lakeBatchesOfParquet(SCHEMA, file.bytes)).toThrow(/field id|is '.*', the lake table's is/);
    expect(() => lakeBatchesOfParquet(SCHEMA, Uint8Array.of(1, 2, 3))).toThrow(/not readable Parquet/);
    const batches = lakeBatchesOfParquet(SCHEMA, parquetOfArrow({ schema: SCHEMA, bucket: 2, batches: [{ payload: encodeBatch(COLUMNS, [rowOf(1)], TIME_MS), startOffset: 0 }] }).bytes);
    expect(() => parquetOfLakeBatches({ schema: SCHEMA, bucket: 3, batches })).toThrow(/rows of bucket 2 given for a data file of bucket 3/);
  });

  it('refuses a stored batch without change types as a changelog', () => {
    // Proves a log table's batch is never merged as if it were a changelog.
    expect(() => changelogOfStoredBatch(SCHEMA, 0, encodeBatch(COLUMNS, [rowOf(1)], TIME_MS), 0)).toThrow(/no '\$change' column/);
  });
});

describe('gatherRows', () => {
  it('gathers rows of sliced batches: validity and boolean bits read at the slice offset, values at the row', () => {
    // Proves the Arrow slicing rule the gather depends on, for every lake type, against apache-arrow's own reading.
    const rows = Array.from({ length: 20 }, (_, index) => rowOf(index, index % 3));
    const [whole] = changelogOfStoredBatch(
      SCHEMA,
      BUCKET,
      encodeBatch(
        COLUMNS,
        rows,
        TIME_MS,
        rows.map(() => '+I'),
      ),
      0,
    );
    const sources = [whole!.rows.slice(3, 17), whole!.rows.slice(9, 20)];
    const picks: [number, number][] = [[0, 0], [1, 10], [0, 13], [1, 0], [0, 5], [0, 6], [1, 3]];
    const gathered = gatherRows(lakeArrowSchemaOf(SCHEMA), sources, Uint32Array.from(picks.map(([segment]) => segment)), Uint32Array.from(picks.map(([, row]) => row)));
    const expected = picks.map(([segment, row]) => sources[segment]!.get(row)!.toJSON());
    expect(gathered.toArray().map((row) => row.toJSON())).toEqual(expected);
    expect(gathered.numRows).toBe(picks.length);
  });
});
