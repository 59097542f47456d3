import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { DiscardPolicy, RetentionPolicy, StorageType, connect, nanos, type JetStreamManager, type NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import type { ObjectStore } from '@mink/s3stream';
import { BENCH_BASELINES, BENCH_LIMITS } from './bench-limits';
import { runClosedLoop, type ClosedLoopOperation } from './closed-loop';
import { formatCount, formatSize } from './format';
import { RESPONDER_READY_LINE, requestAskingFor } from './nats-responder';
import type { BaselineResult } from './results';
import { ratePerSecond, summarizeLatencies } from './stats';

/** What every series needs besides its operation: how many, how parallel, and when to stop. */
export interface SeriesSettings {
  operations: number;
  concurrency: number;
  deadlineMs?: number;
  signal?: AbortSignal;
}

/**
 * Raw S3 PUTs of `bodyBytes` through the same `ObjectStore` adapter mink's WAL writer uses (pass one built
 * with `maxAttempts: 1`, so a retry never hides inside a latency). The keys are deleted afterwards so the
 * baseline does not fill the disk of the S3 server mink is using; `warn` hears of keys that could not be.
 */
export async function measureS3Put(store: ObjectStore, bodyBytes: number, settings: SeriesSettings, warn: (line: string) => void): Promise<BaselineResult | null> {
  // Random bytes, so no layer between here and the disk can make the body cheaper than a WAL object.
  const body = new Uint8Array(randomBytes(bodyBytes));
  const series = `${BENCH_BASELINES.s3KeyPrefix}${randomUUID()}/`;
  const keys: string[] = [];
  const operation: ClosedLoopOperation<string> = {
    prepare: (index) => {
      const key = `${series}${String(index).padStart(6, '0')}`;
      keys.push(key);
      return key;
    },
    send: (key) => store.put(key, body),
  };
  try {
    await warmUp(operation, settings);
    return await measureSeries('s3-put', `S3 PUT ${formatSize(bodyBytes)}`, bodyBytes, operation, settings);
  } finally {
    await deleteKeys(store, keys, warn);
  }
}

/**
 * Adds a temporary stream of `subject` shaped like mink's metadata log: file storage, one replica, limits
 * retention and a de-duplication window, as a `CommitWal` proposal finds it.
 */
export async function addMetaShapedStream(manager: JetStreamManager, name: string, subject: string): Promise<void> {
  await manager.streams.add({
    name,
    subjects: [subject],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(LIMITS.metaDuplicateWindowMs),
    num_replicas: 1,
  });
}

/**
 * Raw JetStream publishes of `payloadBytes` to a temporary stream shaped like mink's metadata log (file
 * storage, one replica, a de-duplication window, a message id per publish), each awaited until the server's
 * ack, as a `CommitWal` proposal is. The stream is deleted afterwards.
 */
export class JetStreamBaseline {
  private constructor(
    private readonly connection: NatsConnection,
    private readonly streamName: string,
    private readonly subject: string,
  ) {}

  static async open(natsUrl: string): Promise<JetStreamBaseline> {
    const connection = await connect({ servers: natsUrl, name: 'mink-bench' });
    const suffix = randomUUID().slice(0, 8);
    const streamName = `${BENCH_BASELINES.jetStreamStreamName}_${suffix}`;
    const subject = `${BENCH_BASELINES.jetStreamSubjectPrefix}.${suffix}`;
    try {
      await addMetaShapedStream(await connection.jetstreamManager(), streamName, subject);
    } catch (error) {
      await connection.close();
      throw error;
    }
    return new JetStreamBaseline(connection, streamName, subject);
  }

  async measure(payloadBytes: number, settings: SeriesSettings): Promise<BaselineResult | null> {
    const payload = new Uint8Array(randomBytes(payloadBytes));
    const jetStream = this.connection.jetstream();
    const operation: ClosedLoopOperation<string> = {
      prepare: () => randomUUID(),
      send: async (messageId) => {
        await jetStream.publish(this.subject, payload, { msgID: messageId, expect: { streamName: this.streamName } });
      },
    };
    await warmUp(operation, settings);
    return measureSeries('jetstream-publish', `JetStream publish ${formatSize(payloadBytes)}`, payloadBytes, operation, settings);
  }

  /** Deletes the stream and closes the connection; safe to call after a failure. */
  async close(): Promise<void> {
    try {
      await (await this.connection.jetstreamManager()).streams.delete(this.streamName);
    } finally {
      await this.connection.close();
    }
  }
}

/**
 * Raw S3 GETs of one object of `bodyBytes` random bytes (as incompressible as a gzip KV snapshot) through the
 * same `ObjectStore` adapter a data node downloads snapshots with, each read to its end. The object is
 * deleted afterwards.
 */
export async function measureS3Get(store: ObjectStore, bodyBytes: number, settings: SeriesSettings, warn: (line: string) => void): Promise<BaselineResult | null> {
  const key = `${BENCH_BASELINES.s3KeyPrefix}${randomUUID()}/get`;
  await store.put(key, new Uint8Array(randomBytes(bodyBytes)));
  const operation: ClosedLoopOperation<string> = {
    prepare: () => key,
    send: async (objectKey) => {
      const body = await store.get(objectKey);
      if (body.byteLength !== bodyBytes) throw new Error(`S3 GET returned ${body.byteLength} bytes of ${bodyBytes}`);
    },
  };
  try {
    await warmUp(operation, settings);
    return await measureSeries('s3-get', `S3 GET ${formatSize(bodyBytes)}`, bodyBytes, operation, settings);
  } finally {
    await deleteKeys(store, [key], warn);
  }
}

/**
 * Raw NATS request/reply round trips through the run's nats-server to a responder in a child process
 * (nats-responder.ts) that answers each request with a reply of the size it asks for and does nothing
 * else: the floor of a lookup, which is one such round trip per bucket plus the data node's work.
 */
export class NatsRequestBaseline {
  private constructor(
    private readonly responder: ChildProcess,
    private readonly connection: NatsConnection,
    private readonly subject: string,
  ) {}

  /** Starts the responder and connects; resolves once the responder has subscribed. */
  static async open(natsUrl: string): Promise<NatsRequestBaseline> {
    const subject = `${BENCH_BASELINES.natsRequestSubjectPrefix}.${randomUUID().slice(0, 8)}`;
    const responder = spawn(process.execPath, [join(__dirname, 'nats-responder.js'), natsUrl, subject], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await childReady(responder, 'NATS responder', RESPONDER_READY_LINE, BENCH_BASELINES.natsResponderReadyTimeoutMs);
      const connection = await connect({ servers: natsUrl, name: 'mink-bench' });
      return new NatsRequestBaseline(responder, connection, subject);
    } catch (error) {
      await stopChild(responder);
      throw error;
    }
  }

  async measure(requestBytes: number, replyBytes: number, settings: SeriesSettings): Promise<BaselineResult | null> {
    const request = requestAskingFor(requestBytes, replyBytes);
    const operation: ClosedLoopOperation<Uint8Array> = {
      prepare: () => request,
      send: async (body) => {
        const reply = await this.connection.request(this.subject, body, { timeout: LIMITS.requestTimeoutMs });
        if (reply.data.byteLength !== replyBytes) throw new Error(`the responder answered ${reply.data.byteLength} bytes instead of ${replyBytes}`);
      },
    };
    await warmUp(operation, settings);
    return measureSeries('nats-request', `NATS request/reply ${formatCount(requestBytes)} B → ${formatCount(replyBytes)} B`, requestBytes, operation, settings, replyBytes);
  }

  /** Closes the connection and stops the responder; safe to call after a failure. */
  async close(): Promise<void> {
    try {
      await this.connection.close();
    } finally {
      await stopChild(this.responder);
    }
  }
}

/** Resolves when the child process `name` prints `readyLine`; rejects when it exits or `timeoutMs` passes first. */
export function childReady(child: ChildProcess, name: string, readyLine: string, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => settle(new Error(`the ${name} exited before it was ready (${signal ?? `code ${code}`})`));
    const timer = setTimeout(() => settle(new Error(`the ${name} was not ready within ${timeoutMs} ms`)), timeoutMs);
    function settle(error: Error | null): void {
      clearTimeout(timer);
      lines.close();
      child.removeListener('exit', onExit);
      if (error) reject(error);
      else resolve();
    }
    lines.on('line', (line) => {
      if (line.trim() === readyLine) settle(null);
    });
    child.once('exit', onExit);
  });
}

/** SIGTERM to a child process, resolved once it has exited (at once when it already has). */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Runs one measured series and summarizes it; null when the signal stopped it before any operation
 * succeeded. `replyBytes` is given for request/reply series only.
 */
async function measureSeries<Input>(
  kind: BaselineResult['kind'],
  label: string,
  payloadBytes: number,
  operation: ClosedLoopOperation<Input>,
  settings: SeriesSettings,
  replyBytes?: number,
): Promise<BaselineResult | null> {
  const result = await runClosedLoop(operation, { ...settings, failuresMax: BENCH_LIMITS.failedCallsMax });
  if (result.latenciesMs.length === 0 && settings.signal?.aborted) return null;
  if (result.latenciesMs.length === 0) throw new Error(`${label}: no operation succeeded (${result.firstFailureMessage ?? 'none ran'})`);
  const operationsPerSecond = ratePerSecond(result.latenciesMs.length, result.elapsedMs);
  return {
    kind,
    label,
    payloadBytes,
    ...(replyBytes === undefined ? {} : { replyBytes }),
    concurrency: settings.concurrency,
    operations: result.latenciesMs.length,
    failures: result.failures,
    elapsedMs: result.elapsedMs,
    operationsPerSecond,
    bytesPerSecond: operationsPerSecond * (payloadBytes + (replyBytes ?? 0)),
    latency: summarizeLatencies(result.latenciesMs),
  };
}

/** A few untimed operations first, so the series does not measure opening connections. */
async function warmUp<Input>(operation: ClosedLoopOperation<Input>, settings: SeriesSettings): Promise<void> {
  if (settings.signal?.aborted) return;
  // Warm-up indexes follow the measured ones, so inputs derived from the index (object keys) stay unique.
  const warmupOperation: ClosedLoopOperation<Input> = { prepare: (index) => operation.prepare(settings.operations + index), send: (input) => operation.send(input) };
  await runClosedLoop(warmupOperation, {
    operations: BENCH_BASELINES.warmupOperations,
    concurrency: Math.min(settings.concurrency, BENCH_BASELINES.warmupOperations),
    failuresMax: BENCH_LIMITS.failedCallsMax,
    signal: settings.signal,
  });
}

/**
 * Removes the baseline's objects one key per request. s3rver 3.7 answers 500 to a DeleteObjects of more
 * than two keys, and this cleanup must not end a run: a key left behind only costs disk until the
 * temporary folder is removed, so failures are counted and reported rather than thrown.
 */
export async function deleteKeys(store: ObjectStore, keys: readonly string[], warn: (line: string) => void): Promise<void> {
  const results = await Promise.allSettled(keys.map((key) => store.delete([key])));
  const failed = results.filter((result) => result.status === 'rejected');
  if (failed.length > 0) warn(`  could not delete ${failed.length} of ${keys.length} baseline objects: ${String((failed[0] as PromiseRejectedResult).reason)}`);
}

/** `performance.now()` a time cap from now, or undefined for none. */
export function deadlineAfter(seconds: number | null): number | undefined {
  return seconds === null ? undefined : performance.now() + seconds * 1_000;
}
