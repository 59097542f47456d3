import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import type { ColumnSpec } from '@mink/meta';
import { encodeBatch, splitByBucket, validateRows } from '@mink/records';
import type { ObjectStore } from '@mink/s3stream';
import { addMetaShapedStream, childReady, deleteKeys, stopChild } from './baselines';
import { BENCH_FLOOR, BENCH_TABLE } from './bench-limits';
import { FLOOR_LEADER_READY_LINE } from './floor-leader';
import type { AppendResult } from './results';
import { runWriteScenario, type BatchWriter, type BenchRow, type WriteScenarioSettings } from './write-scenario';

/** Where the floor path's servers are: the run's own NATS and S3 servers, with the settings a mink service gets. */
export interface FloorServers {
  natsUrl: string;
  s3Endpoint: string;
  s3Bucket: string;
  s3Region: string;
  s3AccessKeyId: string;
  s3SecretAccessKey: string;
}

/** One call of the floor path: each leader's share of the call's rows, as the batches its buckets store, one after the other. */
export interface FloorCall {
  requests: Uint8Array[];
}

/**
 * A call's rows as the floor path sends them: split by bucket with mink's bucketing, each bucket's rows
 * encoded as the stamped Arrow batch a leader stores, and the batches of the buckets of leader `i`
 * (bucket % leaders, as assignment spreads a table's buckets) joined into that leader's one request.
 * Every leader gets a request, empty when none of its buckets got rows.
 */
export function floorCallOf(columns: ColumnSpec[], bucketKey: string[], buckets: number, leaders: number, rows: BenchRow[], appendTimeMs: number): FloorCall {
  const byBucket = splitByBucket(validateRows(columns, rows), bucketKey, buckets, 0);
  const parts: Uint8Array[][] = Array.from({ length: leaders }, () => []);
  for (const [bucket, bucketRows] of [...byBucket].sort(([a], [b]) => a - b)) parts[bucket % leaders]!.push(encodeBatch(columns, bucketRows, appendTimeMs));
  return { requests: parts.map((leaderParts) => Buffer.concat(leaderParts)) };
}

/**
 * The floor write path: `BENCH_FLOOR.leaders` leader processes (floor-leader.ts) on the run's NATS and S3
 * servers, each committing to a temporary stream shaped like the metadata log. A call sends each leader its
 * share at once and is acknowledged when every leader has answered. Run through the same write scenario as
 * mink's append paths, it says what the machine allows any design that keeps mink's write contract at the
 * bench's load; mink's paths are then also compared with it.
 */
export class FloorWritePath {
  private constructor(
    private readonly leaders: ChildProcess[],
    private readonly connection: NatsConnection,
    private readonly streamName: string,
    private readonly subjectPrefix: string,
    readonly keyPrefix: string,
  ) {}

  /** Starts the leaders (`leaderScript`: the built floor-leader.js beside this file unless given) and the stream. */
  static async open(servers: FloorServers, leaderScript: string = join(__dirname, 'floor-leader.js')): Promise<FloorWritePath> {
    const suffix = randomUUID().slice(0, 8);
    const streamName = `${BENCH_FLOOR.streamName}_${suffix}`;
    const commitSubject = `${BENCH_FLOOR.subjectPrefix}.${suffix}.commit`;
    const subjectPrefix = `${BENCH_FLOOR.subjectPrefix}.${suffix}.leader`;
    const keyPrefix = `${BENCH_FLOOR.keyPrefix}${suffix}/`;
    const connection = await connect({ servers: servers.natsUrl, name: 'mink-bench-floor' });
    const leaders: ChildProcess[] = [];
    try {
      await addMetaShapedStream(await connection.jetstreamManager(), streamName, commitSubject);
      const env = {
        ...process.env,
        MINK_NATS_URL: servers.natsUrl,
        MINK_S3_ENDPOINT: servers.s3Endpoint,
        MINK_S3_BUCKET: servers.s3Bucket,
        MINK_S3_REGION: servers.s3Region,
        MINK_S3_ACCESS_KEY_ID: servers.s3AccessKeyId,
        MINK_S3_SECRET_ACCESS_KEY: servers.s3SecretAccessKey,
      };
      for (let index = 0; index < BENCH_FLOOR.leaders; index++) {
        const args = [leaderScript, `${subjectPrefix}.${index}`, commitSubject, `${keyPrefix}${index}/`, String(BENCH_FLOOR.commitBytes)];
        leaders.push(spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'inherit'] }));
      }
      await Promise.all(leaders.map((leader) => childReady(leader, 'floor leader', FLOOR_LEADER_READY_LINE, BENCH_FLOOR.leaderReadyTimeoutMs)));
      return new FloorWritePath(leaders, connection, streamName, subjectPrefix, keyPrefix);
    } catch (error) {
      await Promise.all(leaders.map(stopChild));
      await connection.close();
      throw error;
    }
  }

  /** The leader processes' ids, whose CPU the scenario reports in place of mink's processes. */
  get processIds(): number[] {
    return this.leaders.flatMap((leader) => (leader.pid === undefined ? [] : [leader.pid]));
  }

  /** Sends one call: each leader's request (unless empty) at once; resolves when all are acknowledged, rejects with the first failure. */
  async send(call: FloorCall): Promise<void> {
    await Promise.all(
      call.requests.map(async (request, index) => {
        // A leader none of whose buckets got rows has nothing to write.
        if (request.byteLength === 0) return;
        const reply = await this.connection.request(`${this.subjectPrefix}.${index}`, request, { timeout: LIMITS.requestTimeoutMs });
        if (reply.data.byteLength > 0) throw new Error(`floor leader ${index}: ${new TextDecoder().decode(reply.data)}`);
      }),
    );
  }

  /** Commits in the stream so far: one per object the leaders wrote. */
  async commits(): Promise<number> {
    const info = await (await this.connection.jetstreamManager()).streams.info(this.streamName);
    return info.state.messages;
  }

  /** Stops the leaders, deletes the stream, and deletes the objects (failures are reported through `warn`, not thrown). */
  async close(store: ObjectStore, warn: (line: string) => void): Promise<void> {
    try {
      await Promise.all(this.leaders.map(stopChild));
      await (await this.connection.jetstreamManager()).streams.delete(this.streamName);
    } finally {
      await this.connection.close();
    }
    await deleteKeys(store, (await store.list(this.keyPrefix)).map((entry) => entry.key), warn);
  }
}

/** The floor path under the append scenarios' load: the same rows, calls, concurrency and figures as mink's append paths. */
export async function runFloorAppend(floor: FloorWritePath, settings: WriteScenarioSettings): Promise<AppendResult | null> {
  const columns = BENCH_TABLE.columns as unknown as ColumnSpec[];
  const bucketKey = [...BENCH_TABLE.bucketKey];
  const writer: BatchWriter<FloorCall> = {
    encode: (rows) => ({
      payload: floorCallOf(columns, bucketKey, BENCH_TABLE.buckets, BENCH_FLOOR.leaders, rows, Date.now()),
      rowCount: rows.length,
      jsonBytes: Buffer.byteLength(JSON.stringify({ rows })),
    }),
    send: (batch) => floor.send(batch.payload),
  };
  const outcome = await runWriteScenario('floor append', writer, { ...settings, walKeyPrefix: floor.keyPrefix });
  return outcome === null ? null : { path: 'floor', ...outcome.result };
}
