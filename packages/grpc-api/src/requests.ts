/**
 * gRPC requests (as @grpc/proto-loader decodes them: camelCase fields, uint64 as decimal strings, proto3
 * defaults for absent fields) turned into what GatewayService takes: the bodies and scan parameters of the
 * HTTP API. Each reader throws InvalidArgumentError naming the field that is wrong; what the rows, keys and
 * properties hold is checked further in, by the same code as for HTTP.
 */
import { LIMITS } from '@mink/config';
import type { ScanParameters } from '@mink/http-api';
import { InvalidArgumentError } from '@mink/protocol';
import { parseJsonBody } from '@mink/runtime';

export interface ColumnMessage {
  name: string;
  type: string;
}

export interface PartitionMessage {
  column: string;
  unit: string;
  retain: number;
  precreate?: number;
}

export interface CreateTableMessage {
  name: string;
  columns: ColumnMessage[];
  primaryKey: string[];
  bucketKey: string[];
  buckets: number;
  partition?: PartitionMessage;
  properties: Record<string, string>;
}

export interface AlterTableMessage {
  name: string;
  set: Record<string, string>;
  remove: string[];
}

export interface ScanMessage {
  table: string;
  bucket: number;
  partition: string;
  offset: string;
  limit: string;
  columns: string[];
  waitMs: number;
  follow: boolean;
  format: 'SCAN_FORMAT_JSON' | 'SCAN_FORMAT_ARROW';
}

/** A table name a request must carry (`field`: how the proto calls it). */
export function readTableName(value: string | undefined, field = 'table'): string {
  if (value === undefined || value === '') throw new InvalidArgumentError(`${field} is required`);
  return value;
}

/**
 * A JSON array carried as text (`rows_json`, `keys_json`, `prefixes_json`), read as strictly as an HTTP
 * body: valid JSON, at most `LIMITS.jsonBodyDepthMax` levels deep, and an array.
 */
export function readJsonArray(text: string | undefined, field: string): unknown[] {
  if (text === undefined || text.trim() === '') throw new InvalidArgumentError(`${field} is required: a JSON array`);
  let value: unknown;
  try {
    value = parseJsonBody(Buffer.from(text, 'utf8'));
  } catch (error) {
    // parseJsonBody names an HTTP body; here the field is what was wrong.
    throw new InvalidArgumentError(`${field}: ${(error as Error).message.replace(/^request body /, '')}`);
  }
  if (!Array.isArray(value)) throw new InvalidArgumentError(`${field} must be a JSON array, got ${value === null ? 'null' : typeof value}`);
  return value;
}

/** The body of `POST /v1/tables` from a CreateTableRequest: empty lists and zero counts are left to the table's defaults. */
export function createTableBody(request: CreateTableMessage): Record<string, unknown> {
  const body: Record<string, unknown> = { name: readTableName(request.name, 'name'), columns: request.columns.map(({ name, type }) => ({ name, type })) };
  if (request.primaryKey.length > 0) body.primaryKey = request.primaryKey;
  if (request.bucketKey.length > 0) body.bucketKey = request.bucketKey;
  if (request.buckets > 0) body.buckets = request.buckets;
  if (request.partition !== undefined) {
    const { column, unit, retain, precreate } = request.partition;
    body.partition = { column, unit, ...(retain > 0 ? { retain } : {}), ...(precreate === undefined ? {} : { precreate }) };
  }
  if (Object.keys(request.properties).length > 0) body.properties = { ...request.properties };
  return body;
}

/** The body of `PATCH /v1/tables/{name}`: `set` as values, `remove` as nulls; a property in both is refused. */
export function alterTableBody(request: AlterTableMessage): { properties: Record<string, string | null> } {
  const both = request.remove.find((key) => Object.hasOwn(request.set, key));
  if (both !== undefined) throw new InvalidArgumentError(`property '${both}' is both in set and in remove`);
  if (Object.keys(request.set).length === 0 && request.remove.length === 0) throw new InvalidArgumentError('set or remove must name at least one property');
  const properties: Record<string, string | null> = { ...request.set };
  for (const key of request.remove) properties[key] = null;
  return { properties };
}

/** A projection: an empty list projects nothing away. */
export function columnsOf(columns: string[]): { columns?: string[] } {
  return columns.length === 0 ? {} : { columns };
}

/** A uint64 field (a decimal string from proto-loader) that must fit a JavaScript safe integer. */
export function readSafeInteger(text: string, field: string): number {
  const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value)) throw new InvalidArgumentError(`${field} must be a non-negative integer of at most ${Number.MAX_SAFE_INTEGER}, got '${text.slice(0, 32)}'`);
  return value;
}

/** What a Scan call reads, and how it goes on: `follow` keeps tailing; `recordsMax` is the total to send (Infinity: no limit). */
export interface ScanPlan {
  table: string;
  parameters: ScanParameters;
  follow: boolean;
  recordsMax: number;
  format: 'json' | 'arrow';
}

/**
 * A ScanRequest. Without `follow` it is the HTTP scan (`limit` 0 means the default, `wait_ms` the long poll);
 * with `follow` `limit` counts every record sent (0: no limit), each read asks for at most
 * `LIMITS.scanRecordsMax`, and each wait at the high watermark lasts `wait_ms` (0: `LIMITS.scanWaitMsMax`),
 * at least `LIMITS.scanFollowWaitMsMin`.
 */
export function readScanRequest(request: ScanMessage): ScanPlan {
  const table = readTableName(request.table);
  const offset = readSafeInteger(request.offset, 'offset');
  const limit = readSafeInteger(request.limit, 'limit');
  if (request.waitMs > LIMITS.scanWaitMsMax) throw new InvalidArgumentError(`wait_ms may be at most ${LIMITS.scanWaitMsMax}, got ${request.waitMs}`);
  if (!request.follow && limit > LIMITS.scanRecordsMax) throw new InvalidArgumentError(`limit may be at most ${LIMITS.scanRecordsMax} without follow, got ${limit}`);
  if (request.format !== 'SCAN_FORMAT_JSON' && request.format !== 'SCAN_FORMAT_ARROW') throw new InvalidArgumentError(`format ${String(request.format)} is not a ScanFormat`);
  const recordsMax = request.follow ? (limit === 0 ? Number.POSITIVE_INFINITY : limit) : limit === 0 ? LIMITS.scanRecordsDefault : limit;
  const waitMs = !request.follow ? request.waitMs : request.waitMs === 0 ? LIMITS.scanWaitMsMax : Math.max(request.waitMs, LIMITS.scanFollowWaitMsMin);
  const parameters: ScanParameters = {
    bucket: request.bucket,
    offset,
    limit: Math.min(recordsMax, LIMITS.scanRecordsMax),
    waitMs,
    ...(request.partition === '' ? {} : { partition: request.partition }),
    ...columnsOf(request.columns),
  };
  return { table, parameters, follow: request.follow, recordsMax, format: request.format === 'SCAN_FORMAT_ARROW' ? 'arrow' : 'json' };
}
