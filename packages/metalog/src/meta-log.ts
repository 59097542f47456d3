import { performance } from 'node:perf_hooks';
import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  nanos,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
} from 'nats';
import { DEFAULTS, LIMITS } from '@mink/config';
import { UnavailableError } from '@mink/protocol';
import type { Command } from '@mink/meta';
import type { AppendResult, MetaLog, TailSubscription } from '@mink/meta';
import { isStreamNotFound, translateNatsError } from './nats-errors';

export interface JetStreamMetaLogOptions {
  /** JetStream stream name; `DEFAULTS.metaStream` ('MINK_META') when absent. */
  streamName?: string;
  /** The one subject of the stream; derived from the stream name ('MINK_META' → 'mink.meta.log') when absent. */
  subject?: string;
  /** Replicas of the stream when it is created here (1 for a single server). */
  replicas?: number;
  /** How long one append waits for its ack; `LIMITS.metaAppendTimeoutMs` when absent. */
  appendTimeoutMs?: number;
}

/**
 * A metadata log whose prefix can be purged once a snapshot of the view covers it (docs/architecture.md §3). The extra
 * calls live here rather than on the `MetaLog` port because only snapshotting needs them.
 *
 * - `firstSeq` is the lowest sequence a tail can still start from without missing an entry: every entry
 *   from it to `lastSeq` is held. It is 1 for a log that was never purged.
 * - `purgeBefore(seq)` removes every entry below `seq` and keeps all entries at or above it. It never
 *   renumbers: later appends continue from `lastSeq + 1`.
 * - A tail whose next entry was purged ends with `LogPurgedError` instead of skipping ahead, so a view is
 *   never built with a hole in it.
 */
export interface PurgeableMetaLog extends MetaLog {
  firstSeq(): Promise<number>;
  purgeBefore(seq: number): Promise<void>;
}

/**
 * A tail asked for entries that were purged (they are covered by a snapshot of the view). Expected when a
 * process starts from a snapshot while a newer one is written and the log purged under it: the process
 * loads the newer snapshot and tails again.
 */
export class LogPurgedError extends UnavailableError {
  constructor(
    /** The sequence the reader needed next. */
    readonly wantedSeq: number,
    /** The lowest sequence the log still held when this was noticed. */
    readonly firstSeq: number,
  ) {
    super(`entries ${wantedSeq}..${firstSeq - 1} of the metadata log were purged; start from a newer snapshot of the view`);
    this.name = 'LogPurgedError';
  }
}

/** 'MINK_META' → 'mink.meta.log': the stream's words as subject tokens, then `log`. */
export function metaLogSubject(streamName: string): string {
  return `${streamName.toLowerCase().replace(/_/g, '.')}.log`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The metadata log on one JetStream stream with one subject. Each entry is one command as JSON, published
 * with its message id as `Nats-Msg-Id` so JetStream drops repeats within `LIMITS.metaDuplicateWindowMs`.
 * The stream denies deleting single messages, so sequences stay gap-free; only a purge of a prefix (after a
 * snapshot) removes entries.
 *
 * Tails use ordered consumers: nats.js recreates them from the last delivered sequence when the server
 * loses them, heartbeats stop or a delivery is out of order, so a tail survives server restarts and
 * reconnects and still delivers each entry once, in order.
 */
export class JetStreamMetaLog implements PurgeableMetaLog {
  private constructor(
    private readonly connection: NatsConnection,
    private readonly jetStream: JetStreamClient,
    private readonly manager: JetStreamManager,
    readonly streamName: string,
    readonly subject: string,
    private readonly appendTimeoutMs: number,
  ) {}

  /** Connects to the stream, creating it if it does not exist yet (several processes may race to do so). */
  static async create(connection: NatsConnection, options: JetStreamMetaLogOptions = {}): Promise<JetStreamMetaLog> {
    const streamName = options.streamName ?? DEFAULTS.metaStream;
    const subject = options.subject ?? metaLogSubject(streamName);
    const manager = await connection.jetstreamManager();
    await ensureStream(manager, streamName, subject, options.replicas ?? 1);
    return new JetStreamMetaLog(
      connection,
      connection.jetstream(),
      manager,
      streamName,
      subject,
      options.appendTimeoutMs ?? LIMITS.metaAppendTimeoutMs,
    );
  }

  async append(command: Command, messageId: string): Promise<AppendResult> {
    try {
      const ack = await this.jetStream.publish(this.subject, encoder.encode(JSON.stringify(command)), {
        msgID: messageId,
        expect: { streamName: this.streamName },
        timeout: this.appendTimeoutMs,
      });
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      throw translateNatsError(error, `append to ${this.streamName}`);
    }
  }

  tail(fromSeq: number, onEntry: (seq: number, command: Command) => void, onError?: (error: Error) => void): TailSubscription {
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 1) throw new Error(`a tail starts at a sequence >= 1, not ${fromSeq}`);
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    let ended = false;
    /** Reports the end of the tail once, unless it was stopped on purpose. */
    const end = (error: Error): void => {
      if (stopped || ended) return;
      ended = true;
      onError?.(error);
      if (messages) {
        cancelHeartbeatMonitor(messages);
        messages.stop();
      }
    };
    // An ordered consumer waits forever on a closed connection, so the tail watches the connection itself.
    void this.connection.closed().then(() => {
      end(new UnavailableError(`the tail of ${this.streamName} ended: the NATS connection is closed`));
    });
    const run = async (): Promise<void> => {
      try {
        const consumer = await this.jetStream.consumers.get(this.streamName, { opt_start_seq: fromSeq });
        if (stopped || ended) return;
        messages = await consumer.consume({
          max_messages: LIMITS.metaTailBatchMessagesMax,
          idle_heartbeat: LIMITS.metaTailIdleHeartbeatMs,
        });
        if (stopped || ended) return;
        // JetStream starts a consumer below the first held entry at that first entry, silently; the tail
        // checks every sequence so a purged prefix (or a purge that overtakes a slow tail) is reported.
        let expectedSeq = fromSeq;
        let sliceStartedAtMs = performance.now();
        for await (const message of messages) {
          if (stopped || ended) break;
          if (message.seq > expectedSeq) {
            end(new LogPurgedError(expectedSeq, message.seq));
            break;
          }
          expectedSeq = message.seq + 1;
          onEntry(message.seq, decodeCommand(message.data));
          // Buffered entries are delivered through resolved promises, which never let timers run: after a
          // slice of applying, yield a whole turn of the event loop so heartbeats and requests go on.
          if (performance.now() - sliceStartedAtMs >= LIMITS.metaApplySliceMs) {
            await yieldToEventLoop();
            sliceStartedAtMs = performance.now();
          }
        }
        end(new UnavailableError(`the tail of ${this.streamName} ended without being stopped`));
      } catch (error) {
        end(error instanceof Error ? error : new Error(String(error)));
      } finally {
        if (messages) {
          cancelHeartbeatMonitor(messages);
          await messages.close();
        }
      }
    };
    const running = run();
    return {
      stop: async () => {
        stopped = true;
        messages?.stop();
        await running;
      },
    };
  }

  async lastSeq(): Promise<number> {
    try {
      const info = await this.manager.streams.info(this.streamName);
      return info.state.last_seq;
    } catch (error) {
      throw translateNatsError(error, `read the last sequence of ${this.streamName}`);
    }
  }

  async firstSeq(): Promise<number> {
    try {
      const info = await this.manager.streams.info(this.streamName);
      // A stream that never held an entry reports 0; one purged empty reports last_seq + 1.
      return Math.max(1, info.state.first_seq);
    } catch (error) {
      throw translateNatsError(error, `read the first sequence of ${this.streamName}`);
    }
  }

  /**
   * Purges with JetStream's `seq` option, which keeps every message at or above it. The stream's
   * `deny_delete` forbids deleting single messages only, not purges, so sequences stay gap-free above the
   * purge point.
   */
  async purgeBefore(seq: number): Promise<void> {
    if (!Number.isSafeInteger(seq) || seq < 1) throw new Error(`a purge keeps entries from a sequence >= 1, not ${seq}`);
    try {
      await this.manager.streams.purge(this.streamName, { seq });
    } catch (error) {
      throw translateNatsError(error, `purge ${this.streamName} below entry ${seq}`);
    }
  }
}

/**
 * nats.js 2.29.3 keeps the idle-heartbeat timer of a pull consumer running when the connection closes
 * under it (the pull is already marked done, so stopping it skips clearing its timers); the timer then
 * fires forever and keeps the process alive. Cancel it by hand. Harmless when the internals differ.
 */
function cancelHeartbeatMonitor(messages: ConsumerMessages): void {
  const internals = messages as unknown as { src?: { monitor?: { cancel?: () => void } } };
  internals.src?.monitor?.cancel?.();
}

/** Resolves after timers and I/O callbacks that are due have run. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A payload that is not JSON is still an entry of the log: it is delivered as `null`, which `apply` turns
 * into an InvalidArgument rejection, so every process skips it the same way and sequences stay gap-free.
 */
function decodeCommand(data: Uint8Array): Command {
  try {
    return JSON.parse(decoder.decode(data)) as Command;
  } catch {
    return null as unknown as Command;
  }
}

async function ensureStream(manager: JetStreamManager, streamName: string, subject: string, replicas: number): Promise<void> {
  const existing = await streamInfoOrNull(manager, streamName);
  if (existing === null) {
    try {
      await manager.streams.add({
        name: streamName,
        subjects: [subject],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        duplicate_window: nanos(LIMITS.metaDuplicateWindowMs),
        num_replicas: replicas,
        deny_delete: true,
      });
      return;
    } catch (error) {
      // Another process may have created it between our look-up and our add; then use theirs.
      if ((await streamInfoOrNull(manager, streamName)) === null) throw translateNatsError(error, `create stream ${streamName}`);
    }
  }
  const info = existing ?? (await manager.streams.info(streamName));
  if (!info.config.subjects?.includes(subject)) {
    throw new Error(`stream ${streamName} exists with subjects ${JSON.stringify(info.config.subjects)}, not '${subject}'`);
  }
}

async function streamInfoOrNull(manager: JetStreamManager, streamName: string) {
  try {
    return await manager.streams.info(streamName);
  } catch (error) {
    if (isStreamNotFound(error)) return null;
    throw translateNatsError(error, `look up stream ${streamName}`);
  }
}
