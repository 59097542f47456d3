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
import type { Command } from '../state/commands';
import type { AppendResult, MetaLog, TailSubscription } from '../state/ports';
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
export class JetStreamMetaLog implements MetaLog {
  private constructor(
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
    const run = async (): Promise<void> => {
      try {
        const consumer = await this.jetStream.consumers.get(this.streamName, { opt_start_seq: fromSeq });
        if (stopped) return;
        messages = await consumer.consume({
          max_messages: LIMITS.metaTailBatchMessagesMax,
          idle_heartbeat: LIMITS.metaTailIdleHeartbeatMs,
        });
        if (stopped) return;
        for await (const message of messages) {
          if (stopped) break;
          onEntry(message.seq, decodeCommand(message.data));
        }
        // The iterator ends by itself only when the connection is closed for good: the tail cannot go on.
        if (!stopped) onError?.(new UnavailableError(`the tail of ${this.streamName} ended: the NATS connection is closed`));
      } catch (error) {
        if (!stopped) onError?.(error instanceof Error ? error : new Error(String(error)));
      } finally {
        await messages?.close();
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
