import type { ColumnSpec } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import { type Row, encodeBatch } from '@mink/records';
import { longOfBound } from './data-file';
import { type DuckReader, openDuckReader } from './duckdb.fixture';
import { icebergSchemaOf } from './iceberg-schema';
import { LAKE_LIMITS } from './lake-limits';
import { consecutiveLongs, millisToMicros, parquetOfArrow } from './parquet-of-arrow';
import { readParquetFooter } from './parquet-footer';

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
const BASE_TIME_MS = 1_700_000_000_000;

/** Row `n` of the test data: every third row has nulls in the nullable columns. */
function rowOf(n: number): Row {
  if (n % 3 === 2) return { id: BigInt(n), flag: null, count: null, ratio: null, label: null, blob: null, at: null };
  return { id: BigInt(n), flag: n % 2 === 0, count: n - 5, ratio: n / 4, label: `row-${n}`, blob: new Uint8Array([n & 0xff, 7]), at: BASE_TIME_MS + n * 1_001 };
}

function rows(from: number, count: number): Row[] {
  return Array.from({ length: count }, (_, index) => rowOf(from + index));
}

/** A deterministic PRNG (mulberry32), so a failing value can be reproduced from the seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('millisToMicros', () => {
  const edges = [0, 1, -1, 5, -5, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 2 ** 32 - 1, 2 ** 32, -(2 ** 32), 4_294_968, BASE_TIME_MS, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];

  it.each(edges)('multiplies %d by 1000 exactly', (millis) => {
    // Proves the word-wise multiplication at the carries and sign boundaries, against BigInt arithmetic.
    expect(millisToMicros(BigInt64Array.of(BigInt(millis)))[0]).toBe(BigInt(millis) * 1000n);
  });

  it('agrees with BigInt arithmetic on 20 000 random safe integers (seed 20261129)', () => {
    // Proves the conversion over the whole safe range, including subarrays that start inside a buffer.
    const random = seededRandom(20_261_129);
    const values = new BigInt64Array(20_001);
    for (let index = 0; index < values.length; index++) values[index] = BigInt(Math.round((random() * 2 - 1) * Number.MAX_SAFE_INTEGER));
    const view = values.subarray(1);
    const micros = millisToMicros(view);
    view.forEach((millis, index) => {
      if (micros[index] !== millis * 1000n) throw new Error(`${millis} ms became ${micros[index]} µs`);
    });
  });
});

describe('consecutiveLongs', () => {
  it.each([0, 17, 2 ** 32 - 3, 2 ** 53 - 10])('counts up from %d across word boundaries', (start) => {
    // Proves the generated __offset column, including offsets past 2^32.
    expect([...consecutiveLongs(start, 6)]).toEqual([0, 1, 2, 3, 4, 5].map((step) => BigInt(start) + BigInt(step)));
  });
});

describe('parquetOfArrow', () => {
  let duck: DuckReader;
  beforeAll(async () => {
    duck = await openDuckReader();
  });
  afterAll(() => duck.close());

  it('writes every record of every batch with its bucket, offset and append time, as DuckDB reads it', async () => {
    // Proves values of every type (nulls included) survive, timestamps become microseconds, and the system
    // columns follow from the batches: __offset = batch start + row, __timestamp = the batch's $ts.
    const batches = [
      { payload: encodeBatch(COLUMNS, rows(0, 40), BASE_TIME_MS + 1), startOffset: 1_000 },
      { payload: encodeBatch(COLUMNS, rows(40, 25), BASE_TIME_MS + 2), startOffset: 1_040 },
    ];
    const file = parquetOfArrow({ schema: SCHEMA, bucket: 5, batches });
    const path = duck.file('every-type.parquet', file.bytes);
    const read = await duck.js(
      `select id, flag, count, ratio, label, blob, epoch_us("at") as at_us, __bucket, __offset, epoch_us(__timestamp) as ts_us from read_parquet(${path}) order by __offset`,
    );
    expect(read).toHaveLength(65);
    read.forEach((row, index) => {
      const expected = rowOf(index);
      expect(row).toEqual({
        id: BigInt(index),
        flag: expected.flag,
        count: expected.count,
        ratio: expected.ratio,
        label: expected.label,
        blob: expected.blob === null ? null : Buffer.from(expected.blob as Uint8Array),
        at_us: expected.at === null ? null : BigInt(expected.at as number) * 1000n,
        __bucket: 5,
        __offset: BigInt(1_000 + index),
        ts_us: BigInt(BASE_TIME_MS + (index < 40 ? 1 : 2)) * 1000n,
      });
    });
    expect(file.offsets).toEqual({ first: 1_000, last: 1_064 });
  });

  it('carries every Iceberg field id into the Parquet schema, with ZSTD and the nullability of the schema', async () => {
    // Proves Iceberg readers can map the file's columns by id: the ids, types and repetition DuckDB sees.
    const file = parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [{ payload: encodeBatch(COLUMNS, rows(0, 10), BASE_TIME_MS), startOffset: 0 }] });
    const path = duck.file('ids.parquet', file.bytes);
    const schema = await duck.json(`select name, field_id, repetition_type, logical_type from parquet_schema(${path}) where name <> 'arrow_schema'`);
    expect(schema.map((column) => [column.name, Number(column.field_id), column.repetition_type])).toEqual(
      SCHEMA.fields.map((field) => [field.name, field.id, field.required ? 'REQUIRED' : 'OPTIONAL']),
    );
    for (const name of ['at', '__timestamp']) {
      expect(schema.find((column) => column.name === name)?.logical_type).toMatch(/isAdjustedToUTC=1.*MICROS=MicroSeconds/);
    }
    const codecs = await duck.json(`select distinct compression from parquet_metadata(${path})`);
    expect(codecs).toEqual([{ compression: 'ZSTD' }]);
  });

  it('reports the metrics of the file as its footer has them, across row groups', async () => {
    // Proves the manifest metrics (counts, sizes, bounds, split offsets) match what DuckDB reads from the
    // file, including bounds merged over three row groups.
    const batches = [{ payload: encodeBatch(COLUMNS, rows(0, 50), BASE_TIME_MS), startOffset: 200 }];
    const file = parquetOfArrow({ schema: SCHEMA, bucket: 2, batches, rowGroupRowsMax: 20 });
    const path = duck.file('metrics.parquet', file.bytes);
    const chunks = await duck.json(
      `select path_in_schema as name, sum(num_values) as values, sum(stats_null_count) as nulls, sum(total_compressed_size) as bytes, count(*) as row_groups
       from parquet_metadata(${path}) group by path_in_schema`,
    );
    expect(chunks).toHaveLength(SCHEMA.fields.length);
    for (const chunk of chunks) {
      const field = SCHEMA.fields.find((candidate) => candidate.name === chunk.name)!;
      expect([field.name, file.metrics.valueCounts.get(field.id), file.metrics.nullValueCounts.get(field.id), file.metrics.columnSizes.get(field.id)]).toEqual([
        field.name,
        Number(chunk.values),
        Number(chunk.nulls),
        Number(chunk.bytes),
      ]);
      expect(Number(chunk.row_groups)).toBe(3);
    }
    expect(file.metrics.recordCount).toBe(50);
    expect(file.metrics.fileSizeBytes).toBe(file.bytes.byteLength);
    expect(file.metrics.splitOffsets).toHaveLength(3);
    const offsetField = SCHEMA.fields.find((field) => field.name === '__offset')!.id;
    expect([longOfBound(file.metrics.lowerBounds.get(offsetField)!), longOfBound(file.metrics.upperBounds.get(offsetField)!)]).toEqual([200, 249]);
    const countField = SCHEMA.fields.find((field) => field.name === 'count')!.id;
    const countBounds = [file.metrics.lowerBounds.get(countField)!, file.metrics.upperBounds.get(countField)!].map((bytes) => Buffer.from(bytes).readInt32LE(0));
    const [{ low, high }] = await duck.json(`select min("count") as low, max("count") as high from read_parquet(${path})`);
    expect(countBounds).toEqual([low, high]);
    // Strings and bytes get no bounds (see metricsOf); every other column does.
    const bounded = SCHEMA.fields.filter((field) => file.metrics.lowerBounds.has(field.id)).map((field) => field.name);
    expect(bounded).toEqual(['id', 'flag', 'count', 'ratio', 'at', '__bucket', '__offset', '__timestamp']);
  });

  it('reads a column an older batch does not hold as null', async () => {
    // Proves batches written before a column was added still tier: the missing column is null in the file.
    const older = COLUMNS.filter((column) => column.name !== 'label');
    const batches = [
      { payload: encodeBatch(older, rows(0, 3), BASE_TIME_MS), startOffset: 0 },
      { payload: encodeBatch(COLUMNS, [rowOf(3)], BASE_TIME_MS), startOffset: 3 },
    ];
    const path = duck.file('older.parquet', parquetOfArrow({ schema: SCHEMA, bucket: 0, batches }).bytes);
    expect(await duck.json(`select label from read_parquet(${path}) order by __offset`)).toEqual([{ label: null }, { label: null }, { label: null }, { label: 'row-3' }]);
  });

  it('keeps only the offsets a range asks for when it starts and ends inside batches', async () => {
    // Proves a tiering range off batch boundaries: rows are sliced as Arrow data (nulls, strings, bytes,
    // timestamps and booleans at bit offsets included), offsets stay those of the stream, and each batch
    // gives exactly the records its range names (the head, the tail, one in the middle).
    const batches = [
      { payload: encodeBatch(COLUMNS, rows(0, 40), BASE_TIME_MS + 1), startOffset: 1_000, keep: { fromOffset: 1_013, endOffset: 1_040 } },
      { payload: encodeBatch(COLUMNS, rows(40, 25), BASE_TIME_MS + 2), startOffset: 1_040, keep: { fromOffset: 1_040, endOffset: 1_058 } },
      { payload: encodeBatch(COLUMNS, rows(65, 5), BASE_TIME_MS + 3), startOffset: 1_065, keep: { fromOffset: 1_067, endOffset: 1_068 } },
    ];
    const file = parquetOfArrow({ schema: SCHEMA, bucket: 3, batches });
    const path = duck.file('kept.parquet', file.bytes);
    const read = await duck.js(
      `select id, flag, count, ratio, label, blob, epoch_us("at") as at_us, __offset, epoch_us(__timestamp) as ts_us from read_parquet(${path}) order by __offset`,
    );
    const expectedIndexes = [...Array.from({ length: 45 }, (_, index) => 13 + index), 67];
    expect(read.map((row) => Number(row.__offset) - 1_000)).toEqual(expectedIndexes);
    read.forEach((row, position) => {
      const index = expectedIndexes[position]!;
      const expected = rowOf(index);
      expect(row).toEqual({
        id: BigInt(index),
        flag: expected.flag,
        count: expected.count,
        ratio: expected.ratio,
        label: expected.label,
        blob: expected.blob === null ? null : Buffer.from(expected.blob as Uint8Array),
        at_us: expected.at === null ? null : BigInt(expected.at as number) * 1000n,
        __offset: BigInt(1_000 + index),
        ts_us: BigInt(BASE_TIME_MS + (index < 40 ? 1 : index < 65 ? 2 : 3)) * 1000n,
      });
    });
    expect(file.offsets).toEqual({ first: 1_013, last: 1_067 });
    expect(file.metrics.recordCount).toBe(46);
    const atField = SCHEMA.fields.find((field) => field.name === 'at')!.id;
    expect(file.metrics.nullValueCounts.get(atField)).toBe(read.filter((row) => row.at_us === null).length);
  });

  it('takes one offset per record for merged rows of a primary-key table', async () => {
    // Proves the merged-state input: each row keeps the offset of the change that last wrote it.
    const batches = [{ payload: encodeBatch(COLUMNS, rows(0, 3), BASE_TIME_MS), rowOffsets: [40, 7, 19] }];
    const file = parquetOfArrow({ schema: SCHEMA, bucket: 1, batches });
    const path = duck.file('merged.parquet', file.bytes);
    expect(await duck.json(`select id, __offset from read_parquet(${path})`)).toEqual([
      { id: '0', __offset: '40' },
      { id: '1', __offset: '7' },
      { id: '2', __offset: '19' },
    ]);
    expect(file.offsets).toEqual({ first: 7, last: 40 });
  });

  it.each<[string, () => unknown, RegExp]>([
    ['no records', () => parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [] }), /at least one record/],
    ['a negative bucket', () => parquetOfArrow({ schema: SCHEMA, bucket: -1, batches: [{ payload: encodeBatch(COLUMNS, rows(0, 1), 0), startOffset: 0 }] }), /bucket -1/],
    ['a fractional start offset', () => parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [{ payload: encodeBatch(COLUMNS, rows(0, 1), 0), startOffset: 0.5 }] }), /start offset/],
    ['too few row offsets', () => parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [{ payload: encodeBatch(COLUMNS, rows(0, 2), 0), rowOffsets: [1] }] }), /row offsets/],
    ...(
      [
        ['an empty range to keep', { fromOffset: 12, endOffset: 12 }, /not a range of offsets/],
        ['a range to keep starting before its batch', { fromOffset: 9, endOffset: 12 }, /before its batch/],
        ['a range to keep ending after its batch', { fromOffset: 11, endOffset: 13 }, /does not hold the offsets up to 13/],
        ['a fractional range to keep', { fromOffset: 10.5, endOffset: 12 }, /not a range of offsets/],
      ] as const
    ).map(([name, keep, message]): [string, () => unknown, RegExp] => [
      name,
      () => parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [{ payload: encodeBatch(COLUMNS, rows(0, 2), 0), startOffset: 10, keep }] }),
      message,
    ]),
    [
      'more bytes than one file is written from',
      // Only the length is looked at before anything is parsed, so a stand-in saves allocating 256 MiB.
      () => parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [{ payload: { byteLength: LAKE_LIMITS.parquetSourceBytesMax + 1 } as Uint8Array, startOffset: 0 }] }),
      /write several files/,
    ],
    [
      "a batch of a PK table's changelog",
      () => parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [{ payload: encodeBatch(COLUMNS, rows(0, 2), 0, ['+I', '-D']), startOffset: 0 }] }),
      /changelog/,
    ],
  ])('refuses %s as InvalidArgumentError', (_case, write, message) => {
    // Proves what a caller can get wrong is refused as an expected outcome, before anything is written.
    expect(write).toThrow(InvalidArgumentError);
    expect(write).toThrow(message);
  });

  it.each<[string, ColumnSpec[], Row[], RegExp]>([
    ['a column of another type', COLUMNS.map((column) => (column.name === 'count' ? { name: 'count', type: 'int64' } : column)), [{ ...rowOf(0), count: 3n }], /'count' is stored as Int64/],
    ['a null in a primary key column', COLUMNS, [{ ...rowOf(0), id: null }], /primary key holds 1 nulls/],
    ['no primary key column at all', COLUMNS.filter((column) => column.name !== 'id'), [rowOf(0)], /requires/],
  ])('fails on stored data with %s', (_case, columns, stored, message) => {
    // Proves stored data that is not what mink writes fails loudly instead of producing a wrong file.
    const write = () => parquetOfArrow({ schema: SCHEMA, bucket: 0, batches: [{ payload: encodeBatch(columns, stored, 0), startOffset: 0 }] });
    expect(write).toThrow(message);
  });
});

describe('readParquetFooter', () => {
  it.each<[string, Uint8Array, RegExp]>([
    ['a file without the magic', new TextEncoder().encode('not a parquet file at all'), /PAR1/],
    ['a footer longer than the file', Uint8Array.of(...new TextEncoder().encode('PAR1'), 0, 0xff, 0xff, 0xff, 0x7f, ...new TextEncoder().encode('PAR1')), /does not fit/],
    ['a truncated footer', Uint8Array.of(...new TextEncoder().encode('PAR1'), 0x15, 0x02, 2, 0, 0, 0, ...new TextEncoder().encode('PAR1')), /ends in the middle|missing/],
  ])('refuses %s', (_case, bytes, message) => {
    // Proves a malformed footer fails with a plain Error rather than yielding made-up metrics.
    expect(() => readParquetFooter(bytes)).toThrow(message);
  });
});
