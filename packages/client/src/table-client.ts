import { randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import type { ColumnSpec } from '@mink/meta';
import {
  MinkError,
  SUBJECTS,
  type AppendBucketRequest,
  type AppendBucketResult,
  type AppendTableResult,
  type ScanRequest,
  type ScanResult,
  type TableRoute,
} from '@mink/protocol';
import { rowsToJson, splitByBucket, validateRows, type Row } from '@mink/records';
import { requestJson } from '@mink/transport';
import { backoffDelayMs, sleep } from './backoff';

export interface ScanOptions {
  bucket: number;
  offset?: number;
  limit?: number;
  columns?: string[];
}

/**
 * One table, as the client sees it: its schema and where each bucket's leader is. Writes are validated
 * here first (a bad row fails the whole call before anything is sent), split by bucket key, and sent to
 * each bucket's leader; `NotLeader` updates the cached leader from the redirect and retries there,
 * `Unavailable` retries with bounded backoff. Every bucket write carries this client's writer id and a
 * per-bucket sequence, so a retry after a lost reply is answered with the original offsets and never
 * stores the rows twice.
 */
export class TableClient {
  private route: TableRoute | null = null;
  private readonly writerId = randomUUID();
  private readonly nextSeqByBucket = new Map<number, number>();
  /** Appends to one bucket go out one at a time, in call order, so sequences commit in order. */
  private readonly bucketQueues = new Map<number, Promise<unknown>>();
  private spreadCounter = Math.floor(Math.random() * 1024);

  constructor(
    private readonly nc: NatsConnection,
    readonly name: string,
    private readonly random: () => number = Math.random,
  ) {}

  /** Appends rows to a log table; resolves once every row is durable. */
  async append(rows: unknown[]): Promise<AppendTableResult> {
    const route = await this.describe();
    const canonical = validateRows(route.columns as ColumnSpec[], rows);
    const parts = splitByBucket(canonical, route.bucketKey, route.buckets, this.spreadCounter++);
    const results = await Promise.all([...parts.entries()].map(([bucket, bucketRows]) => this.appendToBucket(route, bucket, bucketRows)));
    const buckets = results.flat().sort((a, b) => a.bucket - b.bucket || a.baseOffset - b.baseOffset);
    return { appended: canonical.length, buckets };
  }

  async scan(options: ScanOptions): Promise<ScanResult> {
    const route = await this.describe();
    const request: ScanRequest = {
      op: 'scan',
      table: this.name,
      tableId: route.tableId,
      partition: null,
      bucket: options.bucket,
      offset: options.offset ?? 0,
      limit: options.limit ?? LIMITS.scanRecordsDefault,
      ...(options.columns ? { columns: options.columns } : {}),
    };
    return this.sendToBucket<ScanResult>(options.bucket, request);
  }

  /** The table's schema and leaders, from any data node's view; cached until a request proves it stale. */
  async describe(refresh = false): Promise<TableRoute> {
    if (this.route && !refresh) return this.route;
    this.route = await this.retryUnavailable(() => requestJson<TableRoute>(this.nc, SUBJECTS.anyNodeRpc, { op: 'describeTable', table: this.name }));
    return this.route;
  }

  private appendToBucket(route: TableRoute, bucket: number, rows: Row[]): Promise<AppendBucketResult[]> {
    const previous = this.bucketQueues.get(bucket) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(async () => {
      const results: AppendBucketResult[] = [];
      for (const chunk of chunksOf(route.columns as ColumnSpec[], rows)) {
        const seq = this.nextSeqByBucket.get(bucket) ?? 0;
        this.nextSeqByBucket.set(bucket, seq + 1);
        const request: AppendBucketRequest = {
          op: 'append',
          table: this.name,
          tableId: route.tableId,
          partition: null,
          bucket,
          rows: chunk,
          writer: { id: this.writerId, seq },
        };
        results.push(await this.sendToBucket<AppendBucketResult>(bucket, request));
      }
      return results;
    });
    this.bucketQueues.set(bucket, next);
    return next;
  }

  /** Sends a bucket request to its leader, following redirects and retrying what is safe to retry. */
  private async sendToBucket<T>(bucket: number, request: AppendBucketRequest | ScanRequest): Promise<T> {
    let lastError: unknown;
    for (let attempt = 0; attempt < LIMITS.clientAttemptsMax; attempt++) {
      const route = await this.describe();
      const leader = route.leaders[bucket];
      if (bucket < 0 || bucket >= route.buckets || !Number.isInteger(bucket)) {
        throw new MinkError('InvalidArgument', `bucket must be an integer in [0, ${route.buckets}), got ${bucket}`);
      }
      if (!leader) {
        await sleep(backoffDelayMs(attempt, this.random));
        await this.describe(true);
        continue;
      }
      try {
        return await requestJson<T>(this.nc, SUBJECTS.nodeRpc(leader.address), { ...request, tableId: route.tableId });
      } catch (error) {
        if (!(error instanceof MinkError)) throw error;
        lastError = error;
        const redirect = error.details?.redirect;
        if (error.code === 'NotLeader' && redirect) {
          // Seed, "Redirects": update the route from the answer and retry at the leader it names.
          route.leaders[bucket] = { node: redirect.node, address: redirect.to, leaderEpoch: redirect.leaderEpoch };
          continue;
        }
        if (error.code === 'Unavailable' || error.code === 'Timeout') {
          await sleep(error.details?.retryAfterMs ?? backoffDelayMs(attempt, this.random));
          // The leader may be gone: refresh the route from any node's view.
          await this.describe(true).catch(() => undefined);
          continue;
        }
        if (error.code === 'NotFound' && attempt === 0) {
          await this.describe(true);
          continue;
        }
        throw error;
      }
    }
    throw lastError;
  }

  private async retryUnavailable<T>(call: () => Promise<T>): Promise<T> {
    let lastError: unknown;
    for (let attempt = 0; attempt < LIMITS.clientAttemptsMax; attempt++) {
      try {
        return await call();
      } catch (error) {
        // A table created a moment ago may not have reached the answering node's view yet.
        const justCreated = error instanceof MinkError && error.code === 'NotFound' && attempt < LIMITS.clientNotFoundAttemptsMax;
        if (!(error instanceof MinkError) || (error.code !== 'Unavailable' && error.code !== 'Timeout' && !justCreated)) throw error;
        lastError = error;
        await sleep(backoffDelayMs(attempt, this.random));
      }
    }
    throw lastError;
  }
}

/** Splits one bucket's rows into requests that stay under the row and byte bounds of one append. */
function chunksOf(columns: ColumnSpec[], rows: Row[]): Record<string, unknown>[][] {
  const chunks: Record<string, unknown>[][] = [];
  let current: Record<string, unknown>[] = [];
  let currentBytes = 0;
  for (const row of rowsToJson(columns, rows)) {
    const bytes = JSON.stringify(row).length + 1;
    if (current.length > 0 && (current.length >= LIMITS.appendRowsPerRequestMax || currentBytes + bytes > LIMITS.appendRequestBytesMax)) {
      chunks.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(row);
    currentBytes += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
