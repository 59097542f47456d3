import { tableFromIPC } from 'apache-arrow';
import fc from 'fast-check';

import { CHANGE_TYPES, type ChangeType, decodeBatch, encodeBatch } from './arrow-codec';
import { rowToJson } from './json';
import type { Row } from './row';
import { scanJsonRecords } from './scan-json';
import { type ScanLayout, type ScanPage, type StoredBatch, encodeScanPage } from './scan-stream';
import { EVERY_TYPE_COLUMNS } from './every-type.fixture';

const COLUMNS = EVERY_TYPE_COLUMNS;

/** Row `index`: every third value null, int64 beyond 2^53 and negative, multi-byte text, empty bytes. */
function rowOf(index: number): Row {
  const nullHere = (column: number) => (index + column) % 3 === 0;
  return {
    id: nullHere(0) ? null : index % 5 === 0 ? -(2n ** 63n) + BigInt(index) : 2n ** 60n + BigInt(index) * 7n,
    flag: nullHere(1) ? null : index % 2 === 0,
    count: nullHere(2) ? null : index * 1000 - 2 ** 31 + 1,
    score: nullHere(3) ? null : index / 7,
    name: nullHere(4) ? null : `naïve ${'é'.repeat(index % 4)} "q" ${index}`,
    payload: nullHere(5) ? null : Uint8Array.from({ length: index % 4 }, (_, byte) => (index + byte) % 256),
    at: nullHere(6) ? null : 1_700_000_000_000 + index,
  };
}

/** Stored batches of the given sizes, back to back from offset `start`, with change types when `changelog`. */
function storedBatches(sizes: number[], start: number, changelog: boolean): StoredBatch[] {
  let offset = start;
  return sizes.map((size) => {
    const rows = Array.from({ length: size }, (_, index) => rowOf(offset + index));
    const times = rows.map((_, index) => 1_600_000_000_000 + offset + index);
    const changes: ChangeType[] | undefined = changelog ? rows.map((_, index) => CHANGE_TYPES[(offset + index) % 4]!) : undefined;
    const batch = { startOffset: offset, payload: encodeBatch(COLUMNS, rows, times, changes) };
    offset += size;
    return batch;
  });
}

/** What the row-by-row path (decodeBatch, rowToJson) makes of the same records: the oracle. */
function expectedRecords(layout: ScanLayout, projection: string[] | undefined, batches: StoredBatch[], fromOffset: number): object[] {
  const records: object[] = [];
  for (const batch of batches) {
    const decoded = decodeBatch(COLUMNS, batch.payload, projection);
    decoded.rows.forEach((row, index) => {
      const offset = batch.startOffset + index;
      if (offset < fromOffset) return;
      const changeType = decoded.changeTypes?.[index];
      records.push({ offset, timestamp: decoded.timestampsMs[index], ...(changeType ? { changeType } : {}), row: rowToJson(layout.columns, row) });
    });
  }
  return records;
}

/** The page's stream as one array, as it travels; its parts must add up to the byte count the page states. */
function streamOf(page: ScanPage): Buffer {
  const bytes = Buffer.concat(page.stream);
  expect(bytes.byteLength).toBe(page.byteLength);
  return bytes;
}

function layoutOf(projection: string[] | undefined, changelog: boolean): ScanLayout {
  return { columns: projection ? projection.map((name) => COLUMNS.find((column) => column.name === name)!) : COLUMNS, changelog };
}

describe('encodeScanPage and scanJsonRecords', () => {
  it('return exactly the records the row-by-row decode gives, from any offset, projected, within limits', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
        fc.nat(200),
        fc.integer({ min: 1, max: 300 }),
        fc.boolean(),
        fc.option(fc.shuffledSubarray(COLUMNS.map((column) => column.name), { minLength: 1 }), { nil: undefined }),
        (sizes, skip, limit, changelog, projection) => {
          const batches = storedBatches(sizes, 1_000, changelog);
          const total = sizes.reduce((sum, size) => sum + size, 0);
          const fromOffset = 1_000 + (skip % total);
          const layout = layoutOf(projection, changelog);
          const page = encodeScanPage(layout, batches, fromOffset, limit, 1 << 30);
          const expected = expectedRecords(layout, projection, batches, fromOffset).slice(0, limit);

          expect(page.records).toBe(expected.length);
          expect(page.nextOffset).toBe(fromOffset + expected.length);
          // The text is byte for byte what JSON.stringify makes of the oracle's objects.
          expect(scanJsonRecords(streamOf(page))).toEqual(expected.map((record) => JSON.stringify(record)));

          const table = tableFromIPC(streamOf(page));
          expect(table.numRows).toBe(expected.length);
          expect(table.schema.fields.map((field) => field.name)).toEqual([...layout.columns.map((column) => column.name), '_offset', '_timestamp', ...(changelog ? ['_change'] : [])]);
          expect(Array.from(table.getChild('_offset')!.toArray() as BigInt64Array, Number)).toEqual(expected.map((record) => (record as { offset: number }).offset));
          if (changelog) expect(table.getChild('_change')!.toArray()).toEqual(expected.map((record) => (record as { changeType: string }).changeType));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('keeps the stream within the byte bound by cutting batches, but returns at least one record', () => {
    const batches = storedBatches([100, 100], 0, false);
    const whole = encodeScanPage(layoutOf(undefined, false), batches, 0, 1_000, 1 << 30);
    expect(whole.records).toBe(200);

    const bound = Math.floor(streamOf(whole).byteLength / 3);
    const page = encodeScanPage(layoutOf(undefined, false), batches, 0, 1_000, bound);
    expect(streamOf(page).byteLength).toBeLessThanOrEqual(bound);
    expect(page.records).toBeGreaterThan(30);
    expect(page.records).toBeLessThan(100);
    const rest = encodeScanPage(layoutOf(undefined, false), batches, page.nextOffset, 1_000, 1 << 30);
    expect([...scanJsonRecords(streamOf(page)), ...scanJsonRecords(streamOf(rest))]).toEqual(scanJsonRecords(streamOf(whole)));

    const tiny = encodeScanPage(layoutOf(undefined, false), batches, 7, 1_000, 10);
    expect(tiny.records).toBe(1);
    expect(tiny.nextOffset).toBe(8);
  });

  it('reads a column the stored batch lacks as null, and skips batches before the offset', () => {
    const batches = storedBatches([3, 4], 10, false);
    const layout: ScanLayout = { columns: [{ name: 'id', type: 'int64' }, { name: 'added', type: 'string' }], changelog: false };
    const page = encodeScanPage(layout, batches, 13, 10, 1 << 30);
    expect(page.records).toBe(4);
    const records = scanJsonRecords(streamOf(page)).map((text) => JSON.parse(text));
    expect(records.map((record) => record.offset)).toEqual([13, 14, 15, 16]);
    expect(records.every((record) => record.row.added === null)).toBe(true);
  });

  it('returns an empty stream, readable by Arrow, when there is nothing from the offset', () => {
    const page = encodeScanPage(layoutOf(['id'], false), [], 5, 10, 1 << 20);
    expect(page).toMatchObject({ records: 0, nextOffset: 5 });
    expect(scanJsonRecords(streamOf(page))).toEqual([]);
    expect(tableFromIPC(streamOf(page)).numRows).toBe(0);
  });
});
