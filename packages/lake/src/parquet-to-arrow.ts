/**
 * A lake data file read back into Arrow, for a primary-key table's copy-on-write round, which merges a
 * bucket's current file with the changelog tiered after it. parquet-wasm decodes the Parquet inside
 * WebAssembly and hands the table over as one Arrow IPC stream; apache-arrow reads that stream with its
 * buffers as views of it (no copy per column, no value per row in JavaScript).
 *
 * Columns are matched by Iceberg field id (`PARQUET:field_id`), as Iceberg readers match them, and laid
 * out in the lake schema's order, so the batches have exactly the layout `parquetOfLakeBatches` writes.
 */
import { type Data, RecordBatch, Struct, makeData, tableFromIPC } from 'apache-arrow';
import { parquetWasm } from './lazy-modules';

import type { IcebergSchema } from './iceberg-schema';
import { LAKE_LIMITS } from './lake-limits';
import { PARQUET_FIELD_ID_KEY, checkLakeLayout, lakeArrowSchemaOf } from './parquet-of-arrow';

/**
 * The rows of the Parquet data file `bytes` of a lake table with `schema`, as record batches of the lake
 * layout (one per row group or per LAKE_LIMITS.parquetRowGroupRowsMax rows). Throws a plain Error for a
 * file that is not one of this table's data files: unreadable, a field id missing, or a column of another
 * type. WebAssembly memory grows to hold the file and its decoded table once, and does not shrink.
 */
export function lakeBatchesOfParquet(schema: IcebergSchema, bytes: Uint8Array): RecordBatch[] {
  const arrowSchema = lakeArrowSchemaOf(schema);
  let table;
  try {
    table = tableFromIPC(parquetWasm().readParquet(bytes, { batchSize: LAKE_LIMITS.parquetRowGroupRowsMax }).intoIPCStream());
  } catch (error) {
    throw new Error(`a lake data file of ${bytes.byteLength} bytes is not readable Parquet: ${error instanceof Error ? error.message : String(error)}`);
  }
  const positionOfId = new Map(table.schema.fields.map((field, index) => [field.metadata.get(PARQUET_FIELD_ID_KEY), index]));
  const positions = schema.fields.map((field) => {
    const position = positionOfId.get(String(field.id));
    if (position === undefined) throw new Error(`the lake data file has no column with field id ${field.id} ('${field.name}')`);
    return position;
  });
  checkLakeLayout(
    arrowSchema,
    positions.map((position) => table.schema.fields[position]!),
  );
  return table.batches
    .filter((batch) => batch.numRows > 0)
    .map((batch) => {
      const children: Data[] = positions.map((position) => batch.data.children[position]!);
      return new RecordBatch(arrowSchema, makeData({ type: new Struct(arrowSchema.fields), length: batch.numRows, nullCount: 0, children }));
    });
}
