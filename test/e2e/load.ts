import type { MinkClient } from '@mink/client';
import type { ColumnSpec } from '@mink/meta';
import type { AppendTableResult } from '@mink/protocol';
import { bucketOfRow, validateRows } from '@mink/records';
import { http } from './helpers';

/** The columns of the tables `AppendLoad` writes to: its rows are `{id, lane}`, bucketed by `id`. */
export const LOAD_COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'lane', type: 'string' },
];

/** What AppendLoad appends through: a MinkClient, or any adapter of the same shape (the gateway's HTTP API). */
export interface RowAppender {
  table(name: string): { append(rows: Record<string, unknown>[]): Promise<Pick<AppendTableResult, 'buckets'>> };
}

/**
 * The gateway's HTTP API as a RowAppender, called as an HTTP user calls it (`token` as a bearer token when
 * given): any answer but 200 is a failed, unacknowledged call, whatever its status.
 */
export function gatewayAppender(gateway: string, token?: string): RowAppender {
  return {
    table: (name) => ({
      append: async (rows) => {
        const answer = await http(gateway, 'POST', `/v1/tables/${name}/append`, { rows }, token);
        if (answer.status !== 200) throw new Error(`append answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        return answer.body;
      },
    }),
  };
}

/** One acknowledged append call: the ids it sent, in call order, and where the cluster said it stored them. */
export interface AcknowledgedAppend {
  ids: number[];
  buckets: AppendTableResult['buckets'];
}

/**
 * Continuous append load for fault tests: batches of unique ids sent through the TypeScript client, one
 * call in flight per lane. Every id whose call resolved is recorded as acknowledged; a call that failed
 * is recorded as unacknowledged (its rows may or may not be stored, which is what a missing
 * acknowledgement means). Bounded by `callsMax` so it always ends.
 */
export class AppendLoad {
  readonly acknowledged = new Set<number>();
  readonly unacknowledged = new Set<number>();
  readonly errors: string[] = [];
  /** Every acknowledged call with the offsets its answer gave, for `expectAcknowledgedAtTheirOffsets`. */
  readonly acknowledgedAppends: AcknowledgedAppend[] = [];
  private nextId = 0;
  private running = false;
  private lanes: Promise<void>[] = [];
  private calls = 0;

  constructor(
    private readonly client: RowAppender,
    private readonly table: string,
    private readonly options: { lanes: number; batchRows: number; callsMax: number; pauseMs: number } = { lanes: 4, batchRows: 20, callsMax: 20_000, pauseMs: 20 },
  ) {}

  start(): void {
    this.running = true;
    this.lanes = Array.from({ length: this.options.lanes }, () => this.lane());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.lanes);
  }

  /**
   * Resolves once `rows` more rows than now are acknowledged: the load has demonstrably made progress, which
   * a fixed sleep would only hope for. Fails after `timeoutMs` with what was acknowledged and the last errors.
   */
  async advance(rows: number, timeoutMs = 60_000): Promise<void> {
    const target = this.acknowledged.size + rows;
    const deadline = Date.now() + timeoutMs;
    while (this.acknowledged.size < target) {
      if (Date.now() > deadline) {
        throw new Error(`the load acknowledged ${this.acknowledged.size} rows, not ${target}, within ${timeoutMs} ms; last errors: ${this.errors.slice(-3).join(' | ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  private async lane(): Promise<void> {
    while (this.running && this.calls < this.options.callsMax) {
      this.calls++;
      const ids = Array.from({ length: this.options.batchRows }, () => this.nextId++);
      try {
        const result = await this.client.table(this.table).append(ids.map((id) => ({ id, lane: 'load' })));
        for (const id of ids) this.acknowledged.add(id);
        this.acknowledgedAppends.push({ ids, buckets: result.buckets });
      } catch (error) {
        for (const id of ids) this.unacknowledged.add(id);
        if (this.errors.length < 50) this.errors.push(String(error));
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.pauseMs));
    }
  }
}

/**
 * How long `storedRows` keeps asking again while the gateway answers 503 Unavailable with a `retryAfterMs`
 * (a bucket whose leader is changing, a node catching up with the metadata log), as a client is told to.
 */
const STORED_ROWS_UNAVAILABLE_MS = 60_000;

/**
 * Every record of each bucket of the table, scanned to the high watermark: `records[bucket][offset]` is the
 * row at that offset (with `columns` only, when given). A page answered 503 with `retryAfterMs` is asked for
 * again after that wait, for at most STORED_ROWS_UNAVAILABLE_MS; any other answer but 200 fails.
 */
export async function storedRows(gateway: string, table: string, buckets: number, columns: string[] = [], token?: string): Promise<Record<string, unknown>[][]> {
  const projection = columns.length === 0 ? '' : `&columns=${columns.join(',')}`;
  const rows: Record<string, unknown>[][] = [];
  for (let bucket = 0; bucket < buckets; bucket++) {
    const bucketRows: Record<string, unknown>[] = [];
    for (;;) {
      const offset = bucketRows.length;
      const path = `/v1/tables/${table}/scan?bucket=${bucket}&offset=${offset}&limit=10000${projection}`;
      const unavailableUntil = Date.now() + STORED_ROWS_UNAVAILABLE_MS;
      let response = await http(gateway, 'GET', path, undefined, token);
      while (response.status === 503 && typeof response.body?.error?.retryAfterMs === 'number' && Date.now() < unavailableUntil) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(response.body.error.retryAfterMs as number, 100)));
        response = await http(gateway, 'GET', path, undefined, token);
      }
      if (response.status !== 200) throw new Error(`scan of bucket ${bucket} failed: ${JSON.stringify(response.body)}`);
      for (const record of response.body.records) {
        if (record.offset !== bucketRows.length) throw new Error(`bucket ${bucket}: offset ${record.offset} where ${bucketRows.length} was expected`);
        bucketRows.push(record.row);
      }
      if (bucketRows.length >= response.body.highWatermark) break;
    }
    rows.push(bucketRows);
  }
  return rows;
}

/** Every id stored in the table, with how often it occurs, scanned bucket by bucket to the high watermark. */
export async function storedIds(gateway: string, table: string, buckets: number, token?: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const bucketRows of await storedRows(gateway, table, buckets, ['id'], token)) {
    for (const row of bucketRows) {
      const id = Number(row.id);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
  }
  return counts;
}

/** Every acknowledged id is stored exactly once, and nothing is stored twice. */
export function expectAcknowledgedExactlyOnce(load: AppendLoad, stored: Map<number, number>): void {
  const missing = [...load.acknowledged].filter((id) => stored.get(id) !== 1);
  const doubled = [...stored.entries()].filter(([, count]) => count > 1).map(([id]) => id);
  const unknown = [...stored.keys()].filter((id) => !load.acknowledged.has(id) && !load.unacknowledged.has(id));
  expect({ missing: missing.slice(0, 20), doubled: doubled.slice(0, 20), unknown: unknown.slice(0, 20) }).toEqual({ missing: [], doubled: [], unknown: [] });
}

/**
 * Every row of every acknowledged append is stored at the offset its answer gave: the call's rows of one
 * bucket (in call order) fill that bucket's acknowledged ranges (in offset order), row for row.
 */
export function expectAcknowledgedAtTheirOffsets(load: AppendLoad, stored: Record<string, unknown>[][]): void {
  const buckets = stored.length;
  const misplaced: string[] = [];
  for (const append of load.acknowledgedAppends) {
    const idsByBucket = new Map<number, number[]>();
    for (const id of append.ids) {
      const bucket = bucketOfRow(validateRows(LOAD_COLUMNS, [{ id, lane: 'load' }])[0]!, ['id'], buckets);
      idsByBucket.set(bucket, [...(idsByBucket.get(bucket) ?? []), id]);
    }
    for (const [bucket, ids] of idsByBucket) {
      const offsets = append.buckets
        .filter((range) => range.bucket === bucket)
        .sort((a, b) => a.baseOffset - b.baseOffset)
        .flatMap((range) => Array.from({ length: range.count }, (_, index) => range.baseOffset + index));
      if (offsets.length !== ids.length) misplaced.push(`bucket ${bucket}: ${ids.length} rows acknowledged at ${offsets.length} offsets`);
      ids.forEach((id, index) => {
        const row = stored[bucket]?.[offsets[index] ?? -1];
        if (row === undefined || Number(row.id) !== id || row.lane !== 'load') misplaced.push(`id ${id}: bucket ${bucket} offset ${offsets[index]} holds ${JSON.stringify(row)}`);
      });
    }
  }
  expect({ acknowledgedAppends: load.acknowledgedAppends.length, misplaced: misplaced.slice(0, 20) }).toEqual({ acknowledgedAppends: load.acknowledgedAppends.length, misplaced: [] });
}

/** What a burst of table creates came to. */
export interface CreateBurst {
  /** Tables answered 201, in the order the answers came. */
  created: string[];
  /** 503 Unavailable answers with a Retry-After, each retried after it. */
  retriedUnavailable: number;
  /** Every other answer (and every failed request), one line each; those tables are not retried. */
  failures: string[];
}

/**
 * Creates `count` tables through `POST /v1/tables` of the gateway with `inFlight` creates at a time, as a
 * deployment script creating its topics would. A 503 Unavailable carrying Retry-After (admission control of
 * the coordinator) is retried after that many seconds; any other answer but 201 is recorded as a failure.
 * It never rejects, and starts no create (nor retry) once `stop` is aborted or `deadlineMs` (a `Date.now()`
 * time) has passed, so a test that fails elsewhere ends it quickly.
 */
export async function createTablesInFlight(
  gateway: string,
  options: { count: number; inFlight: number; body: (index: number) => { name: string }; deadlineMs: number; stop: AbortSignal },
): Promise<CreateBurst> {
  const burst: CreateBurst = { created: [], retriedUnavailable: 0, failures: [] };
  let next = 0;
  const stopped = (): boolean => options.stop.aborted || Date.now() >= options.deadlineMs;
  const createOne = async (index: number): Promise<void> => {
    const body = options.body(index);
    while (!stopped()) {
      const answer = await http(gateway, 'POST', '/v1/tables', body).catch((error: unknown) => error as Error);
      if (answer instanceof Error) {
        burst.failures.push(`${body.name}: ${answer.message}`);
        return;
      }
      if (answer.status === 201) {
        burst.created.push(body.name);
        return;
      }
      const retryAfterSeconds = Number(answer.headers.get('retry-after'));
      if (answer.status !== 503 || !(retryAfterSeconds > 0)) {
        burst.failures.push(`${body.name}: HTTP ${answer.status} (Retry-After ${answer.headers.get('retry-after')}) ${JSON.stringify(answer.body).slice(0, 300)}`);
        return;
      }
      burst.retriedUnavailable++;
      // The server's own backoff, not a synchronisation: it asked to be called again after this long.
      await new Promise((resolve) => setTimeout(resolve, retryAfterSeconds * 1_000));
    }
    burst.failures.push(`${body.name}: not created before the burst stopped`);
  };
  const lanes = Array.from({ length: options.inFlight }, async () => {
    while (next < options.count && !stopped()) await createOne(next++);
  });
  await Promise.all(lanes);
  return burst;
}

/** The columns of the PK tables `PutLoad` writes to: rows `{id, value}` keyed by `id`. */
export const PUT_LOAD_COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'int64' },
  { name: 'value', type: 'string' },
];

/**
 * Continuous put load on a PK table for fault tests. Each lane owns its own keys and puts them again and
 * again with a new value (`<lane>-<generation>`); a put that fails is sent again, with the same values,
 * until it is acknowledged, so every key's last acknowledged value is what the table must hold. Only a put
 * still failing when the load is stopped (after `stopRetryMs` of retries) may leave its keys with either
 * their last acknowledged value or the one it tried: those keys are listed in `unsettled`.
 */
export class PutLoad {
  /** Every key's last acknowledged value. */
  readonly acknowledged = new Map<number, string>();
  /** Keys whose last put was never acknowledged, with the value it tried. */
  readonly unsettled = new Map<number, string>();
  readonly errors: string[] = [];
  /** Acknowledged put calls so far. */
  acknowledgedCalls = 0;
  private running = false;
  private lanes: Promise<void>[] = [];

  constructor(
    private readonly client: MinkClient,
    private readonly table: string,
    private readonly options: { lanes: number; keysPerLane: number; batchKeys: number; pauseMs: number; stopRetryMs: number } = {
      lanes: 2,
      keysPerLane: 200,
      batchKeys: 25,
      pauseMs: 20,
      stopRetryMs: 30_000,
    },
  ) {}

  start(): void {
    this.running = true;
    this.lanes = Array.from({ length: this.options.lanes }, (_, lane) => this.lane(lane));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.lanes);
  }

  /** Resolves once `calls` more put calls than now are acknowledged; fails after `timeoutMs` quoting the last errors. */
  async advance(calls: number, timeoutMs = 60_000): Promise<void> {
    const target = this.acknowledgedCalls + calls;
    const deadline = Date.now() + timeoutMs;
    while (this.acknowledgedCalls < target) {
      if (Date.now() > deadline) {
        throw new Error(`the put load acknowledged ${this.acknowledgedCalls} calls, not ${target}, within ${timeoutMs} ms; last errors: ${this.errors.slice(-3).join(' | ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Every key's value by lookups through the client, compared with what the load acknowledged: the keys that differ. */
  async mismatches(): Promise<string[]> {
    const keys = [...new Set([...this.acknowledged.keys(), ...this.unsettled.keys()])].sort((a, b) => a - b);
    const found = new Map<number, unknown>();
    for (let start = 0; start < keys.length; start += 500) {
      const slice = keys.slice(start, start + 500);
      const { rows } = await this.client.table(this.table).lookup(slice.map((id) => ({ id })));
      slice.forEach((id, index) => found.set(id, rows[index]?.value ?? null));
    }
    const wrong: string[] = [];
    for (const id of keys) {
      const allowed = [this.acknowledged.get(id), this.unsettled.get(id)].filter((value) => value !== undefined);
      if (!allowed.includes(found.get(id) as string)) wrong.push(`key ${id}: ${JSON.stringify(found.get(id))}, expected ${allowed.join(' or ')}`);
    }
    return wrong;
  }

  private async lane(lane: number): Promise<void> {
    const { keysPerLane, batchKeys } = this.options;
    for (let generation = 0; this.running; generation++) {
      const first = (generation * batchKeys) % keysPerLane;
      const ids = Array.from({ length: batchKeys }, (_, index) => lane * keysPerLane + ((first + index) % keysPerLane));
      const value = `${lane}-${generation}`;
      const stopRetryingAt = { ms: Number.POSITIVE_INFINITY };
      for (;;) {
        try {
          await this.client.table(this.table).put(ids.map((id) => ({ id, value })));
          for (const id of ids) {
            this.acknowledged.set(id, value);
            this.unsettled.delete(id);
          }
          this.acknowledgedCalls++;
          break;
        } catch (error) {
          if (this.errors.length < 50) this.errors.push(String(error));
          if (!this.running && stopRetryingAt.ms === Number.POSITIVE_INFINITY) stopRetryingAt.ms = Date.now() + this.options.stopRetryMs;
          if (Date.now() >= stopRetryingAt.ms) {
            for (const id of ids) this.unsettled.set(id, value);
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.pauseMs));
    }
  }
}

/**
 * Samples a counter of acknowledged writes every `intervalMs` and remembers when it last grew, so a fault
 * test can tell how long writes stalled: the longest time between two increases within a window.
 */
export class AcknowledgementClock {
  private readonly increases: number[] = [];
  private last = -1;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly count: () => number,
    intervalMs = 20,
  ) {
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    const now = this.count();
    if (now > this.last) {
      this.increases.push(Date.now());
      this.last = now;
    }
  }

  /**
   * The longest gap (ms) between two increases from the last one at or before `fromMs` (a fault) up to
   * `toMs`, including the gap still open at `toMs`.
   */
  longestStallMs(fromMs: number, toMs: number = Date.now()): number {
    const before = this.increases.filter((time) => time <= fromMs).at(-1) ?? fromMs;
    const times = [before, ...this.increases.filter((time) => time > before && time <= toMs), toMs];
    let longest = 0;
    for (let index = 1; index < times.length; index++) longest = Math.max(longest, times[index]! - times[index - 1]!);
    return longest;
  }

  /** When the counter first grew after `fromMs`; null when it has not yet. */
  firstIncreaseAfter(fromMs: number): number | null {
    return this.increases.find((time) => time > fromMs) ?? null;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
