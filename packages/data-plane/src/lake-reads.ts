import { LIMITS } from '@mink/config';
import type { TableRecord } from '@mink/meta';
import { NotFoundError, UnavailableError } from '@mink/protocol';
import { encodeBatch, setField, type Row } from '@mink/records';
import type { StreamBatch } from '@mink/s3stream';
import { IcebergTable, LAKE_OFFSET_COLUMN, LAKE_TIMESTAMP_COLUMN, fieldNamed, icebergSchemaOf, lakeBatchesOfParquet, type DataFile, type LakeObjectStore } from '@mink/lake';
import type { CacheSize } from './node-metrics';

/**
 * The union read's lake side (docs/architecture.md §9): the records of a log table's bucket below its stream's start,
 * read from the table's Iceberg lake, which holds every record below its lake offset (retention never trims
 * a stream above it). The data files of the lake's current metadata are listed once per metadata object;
 * a bucket's files are pruned by their `__offset` bounds, fetched whole and kept in a small cache by bytes,
 * and the rows in the range are encoded as the stream stores them (the table's columns and the append
 * time), so a scan serves them exactly as it serves stream batches.
 */
export class LakeReads {
  /** Data files by metadata key; a new round's metadata is a new key. */
  private readonly filesByMetadata = new Map<string, Promise<DataFile[]>>();
  /** Parquet bytes by file path, least recently used first. */
  private readonly fileCache = new Map<string, Uint8Array>();
  private fileCacheBytes = 0;

  /** `fileCacheBytesMax`: bytes of Parquet files kept for later reads (`MINK_LAKE_FILE_CACHE_BYTES`), 0 for none. */
  constructor(
    private readonly store: LakeObjectStore,
    private readonly storeUri: string,
    private readonly fileCacheBytesMax: number = LIMITS.lakeReadCacheBytesMax,
  ) {}

  /** Bytes of Parquet files the file cache holds, and its bound. */
  get cacheSize(): CacheSize {
    return { cache: 'lake_files', bytes: this.fileCacheBytes, bytesMax: this.fileCacheBytesMax };
  }

  /**
   * The records of `bucket` in [fromOffset, untilOffset) as stored batches, at most `maxRecords` (at least
   * one when the range holds any). Throws Unavailable when the lake does not hold the range (it ends before,
   * or a file of it is gone because a newer round replaced it: the caller reads again with a newer view).
   */
  async read(table: TableRecord, bucket: number, fromOffset: number, untilOffset: number, maxRecords: number): Promise<StreamBatch[]> {
    const lake = table.lake;
    const tiered = lake?.offsets[String(bucket)] ?? 0;
    if (!lake?.metadataKey || tiered < untilOffset) {
      throw new UnavailableError(`the lake of '${table.name}' holds bucket ${bucket} up to ${tiered}, not up to ${untilOffset}`);
    }
    const schema = icebergSchemaOf(table.columns, table.primaryKey);
    const offsetField = fieldNamed(schema, LAKE_OFFSET_COLUMN).id;
    const timestampField = fieldNamed(schema, LAKE_TIMESTAMP_COLUMN).id;
    const files = (await this.filesOf(table, schema, lake.metadataKey))
      .filter((file) => file.bucket === bucket && boundOf(file.upperBounds, offsetField) >= fromOffset && boundOf(file.lowerBounds, offsetField) < untilOffset)
      .sort((a, b) => boundOf(a.lowerBounds, offsetField) - boundOf(b.lowerBounds, offsetField));
    const batches: StreamBatch[] = [];
    let next = fromOffset;
    let records = 0;
    for (const file of files) {
      if (records >= maxRecords || next >= untilOffset) break;
      for (const batch of lakeBatchesOfParquet(schema, await this.fileBytes(file))) {
        const offsets = batch.getChildAt(schema.fields.findIndex((field) => field.id === offsetField))!;
        const times = batch.getChildAt(schema.fields.findIndex((field) => field.id === timestampField))!;
        const rows: Row[] = [];
        const timestampsMs: number[] = [];
        let start = -1;
        for (let index = 0; index < batch.numRows && records + rows.length < maxRecords; index++) {
          const offset = Number(offsets.get(index) as bigint);
          if (offset < next || offset >= untilOffset) continue;
          if (start === -1) start = offset;
          // A log table's lake holds every offset once, in order: a gap means this is not the file we think.
          if (offset !== start + rows.length) throw new Error(`lake file ${file.path} of '${table.name}' skips from offset ${start + rows.length - 1} to ${offset}`);
          const row: Row = {};
          table.columns.forEach((column, position) => setField(row, column.name, valueOf(batch.getChildAt(position)!.get(index), column.type)));
          rows.push(row);
          // apache-arrow reads a microsecond timestamp as milliseconds already.
          timestampsMs.push(Math.floor(Number(times.get(index))));
        }
        if (rows.length === 0) continue;
        batches.push({ startOffset: start, endOffset: start + rows.length, payload: encodeBatch(table.columns, rows, timestampsMs) });
        records += rows.length;
        next = start + rows.length;
      }
    }
    if (records === 0 && fromOffset < untilOffset) throw new UnavailableError(`the lake of '${table.name}' has no file holding bucket ${bucket} at offset ${fromOffset}`);
    return batches;
  }

  private filesOf(table: TableRecord, schema: ReturnType<typeof icebergSchemaOf>, metadataKey: string): Promise<DataFile[]> {
    let files = this.filesByMetadata.get(metadataKey);
    if (!files) {
      const iceberg = new IcebergTable({ store: this.store, tableName: table.name, storeUri: this.storeUri, schema });
      files = iceberg.load(metadataKey).then(() => iceberg.dataFiles());
      files.catch(() => this.filesByMetadata.delete(metadataKey));
      this.filesByMetadata.set(metadataKey, files);
      // Only the newest few metadata objects are worth their listing.
      for (const key of this.filesByMetadata.keys()) {
        if (this.filesByMetadata.size <= LIMITS.lakeReadMetadataCachedMax) break;
        this.filesByMetadata.delete(key);
      }
    }
    return files;
  }

  private async fileBytes(file: DataFile): Promise<Uint8Array> {
    const cached = this.fileCache.get(file.path);
    if (cached) {
      this.fileCache.delete(file.path);
      this.fileCache.set(file.path, cached);
      return cached;
    }
    const key = file.path.startsWith(`${this.storeUri}/`) ? file.path.slice(this.storeUri.length + 1) : file.path;
    let bytes: Uint8Array;
    try {
      bytes = await this.store.get(key);
    } catch (error) {
      if (error instanceof NotFoundError) throw new UnavailableError(`lake file ${file.path} is gone (a newer round replaced it); read again`);
      throw error;
    }
    if (bytes.byteLength <= this.fileCacheBytesMax) {
      this.fileCache.set(file.path, bytes);
      this.fileCacheBytes += bytes.byteLength;
      for (const [path, held] of this.fileCache) {
        if (this.fileCacheBytes <= this.fileCacheBytesMax) break;
        this.fileCache.delete(path);
        this.fileCacheBytes -= held.byteLength;
      }
    }
    return bytes;
  }
}

/** A `long` bound of the file's column `fieldId` (Iceberg's single-value serialization, little-endian). */
function boundOf(bounds: ReadonlyMap<number, Uint8Array>, fieldId: number): number {
  const bytes = bounds.get(fieldId);
  if (!bytes || bytes.byteLength !== 8) throw new Error(`a lake data file has no ${LAKE_OFFSET_COLUMN} bound`);
  return Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0, true));
}

/** A lake value as a stored row holds it (apache-arrow reads the lake's microsecond timestamps as milliseconds). */
function valueOf(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'timestamp') return Math.floor(Number(value));
  return value;
}
