import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import {
  AckPolicy,
  ConsumerEvents,
  DeliverPolicy,
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
import { connectionWatch } from './nats-connection';
import { creationError, isStreamNotFound, translateNatsError } from './nats-errors';
import { pullAvailable } from './pull-available';
import { appendedEntryAction } from './tail-watch';

export interface JetStreamMetaLogOptions {
  /** JetStream stream name; `DEFAULTS.metaStream` ('MINK_META') when absent. */
  streamName?: string;
  /** The one subject of the stream; derived from the stream name ('MINK_META' → 'mink.meta.log') when absent. */
  subject?: string;
  /**
   * Replicas of the stream when it is created here (1 for a single server, `MINK_META_REPLICAS` in a
   * service). An existing stream is used as it is: its replicas are never changed here.
   */
  replicas?: number;
  /** How long one append waits for its ack; `LIMITS.metaAppendTimeoutMs` when absent. */
  appendTimeoutMs?: number;
  /**
   * Idle heartbeat of the tail's pulls; `LIMITS.metaTailIdleHeartbeatMs` when absent. Tests set it longer to
   * see what else recovers a tail; the server refuses pulls whose heartbeat is not well below their expiry.
   */
  tailIdleHeartbeatMs?: number;
  /**
   * 0 (the default): the tail takes each entry as the server sends it. Above 0: the tail asks for what the log
   * holds every this many milliseconds, and at once after this log appended an entry, so a process that needs
   * no entry the moment it is written (the gateway, the coordinators, the tiering worker) wakes a few times a
   * second instead of once per entry, while its own proposals, and whoever waits for an entry through the
   * tail's `catchUp`, still see their entry as soon as it is there.
   */
  tailPaceMs?: number;
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
    /** The same API with a short timeout, for the tail's consumers (see `LIMITS.jetStreamFollowRequestTimeoutMs`). */
    private readonly tailManager: JetStreamManager,
    readonly streamName: string,
    readonly subject: string,
    private readonly appendTimeoutMs: number,
    /** Replicas of the stream as the server reported them when this log was created (an existing stream keeps its own). */
    readonly replicas: number,
    private readonly tailIdleHeartbeatMs: number,
    private readonly tailPaceMs: number,
  ) {}

  /** The running tails, told the sequence of each entry this log appended (see `appendedEntryAction`). */
  private readonly appendWatchers = new Set<(seq: number) => void>();

  /** Connects to the stream, creating it if it does not exist yet (several processes may race to do so). */
  static async create(connection: NatsConnection, options: JetStreamMetaLogOptions = {}): Promise<JetStreamMetaLog> {
    const streamName = options.streamName ?? DEFAULTS.metaStream;
    const subject = options.subject ?? metaLogSubject(streamName);
    const manager = await connection.jetstreamManager();
    const replicas = await ensureStream(manager, streamName, subject, options.replicas ?? 1);
    return new JetStreamMetaLog(
      connection,
      connection.jetstream(),
      manager,
      await connection.jetstreamManager({ timeout: LIMITS.jetStreamFollowRequestTimeoutMs, checkAPI: false }),
      streamName,
      subject,
      options.appendTimeoutMs ?? LIMITS.metaAppendTimeoutMs,
      replicas,
      options.tailIdleHeartbeatMs ?? LIMITS.metaTailIdleHeartbeatMs,
      checkedPace(options.tailPaceMs ?? 0),
    );
  }

  async append(command: Command, messageId: string): Promise<AppendResult> {
    try {
      const ack = await this.jetStream.publish(this.subject, encoder.encode(JSON.stringify(command)), {
        msgID: messageId,
        expect: { streamName: this.streamName },
        timeout: this.appendTimeoutMs,
      });
      for (const watcher of this.appendWatchers) watcher(ack.seq);
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      throw translateNatsError(error, `append to ${this.streamName}`);
    }
  }

  /**
   * Delivers every entry from `fromSeq` on, once each and in order, until stopped; ends (with `onError`)
   * only when the connection closes or entries it needs were purged (`LogPurgedError`).
   *
   * The tail runs its own consumers rather than a nats.js ordered consumer, because it must outlive any
   * server: a consumer lives on one server (memory storage, one replica), and nats.js 2.29 does not always
   * replace one lost with its server (it may pull from it forever, or wait 30 s between attempts). Each
   * consumer starts at the next entry the tail has not delivered. It is replaced, from that entry:
   * - at once after a reconnect of the connection (the server may have restarted empty, or be another one);
   * - when nats.js reports its idle heartbeats missed, or the consumer deleted or not found;
   * - when it delivers a later entry than the next one (a delivery lost on the way) while the log still
   *   holds the next one (otherwise that entry was purged: `LogPurgedError`);
   * - when the log has held the next entry for `LIMITS.metaTailStallMs` without it being delivered (checked
   *   every `LIMITS.metaTailCheckIntervalMs` while nothing arrives, every `LIMITS.metaTailIdleCheckIntervalMs`
   *   while the last check found the tail up to date), whatever the reason;
   * - when this log appended an entry the tail has not delivered and nothing at all arrived for
   *   `LIMITS.metaTailAppendedEntryWaitMs` (`appendedEntryAction`): a proposer waits for its own entry, so
   *   this bounds how long a consumer that stopped delivering holds up the process's own proposals.
   * Creating a consumer fails while JetStream elects leaders; it is retried after a short pause.
   */
  tail(fromSeq: number, onEntry: (seq: number, command: Command) => void, onError?: (error: Error) => void): TailSubscription {
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 1) throw new Error(`a tail starts at a sequence >= 1, not ${fromSeq}`);
    let stopped = false;
    let ended = false;
    let messages: ConsumerMessages | undefined;
    /** The next entry to deliver: every consumer starts here. */
    let expectedSeq = fromSeq;
    /** When an entry (or the start of a consumer) was last seen; the stall check looks at it. */
    let lastProgressAtMs = performance.now();
    /** Set to end the current consumer and start another from `expectedSeq`. */
    let replaceRequested = false;
    /** Ends the pause of a paced tail between two polls, when one is waiting. */
    let wakePaced: (() => void) | undefined;
    /**
     * The poll of a paced tail that is out. A poll of a consumer the server no longer has is never answered,
     * so replacing the consumer (the stall check, the appended-entry watch) or stopping ends it here.
     */
    let pollOut: { stop(): void } | undefined;
    const replace = (): void => {
      if (stopped || ended || replaceRequested) return;
      replaceRequested = true;
      messages?.stop();
      pollOut?.stop();
      wakePaced?.();
    };
    let cleanUp: () => void = () => undefined;
    /** Reports the end of the tail once, unless it was stopped on purpose. */
    const end = (error: Error): void => {
      if (stopped || ended) return;
      ended = true;
      cleanUp();
      onError?.(error);
      if (messages) {
        cancelHeartbeatMonitor(messages);
        messages.stop();
      }
    };
    // A consumer waits forever on a closed connection, so the tail watches the connection itself.
    void this.connection.closed().then(() => {
      end(new UnavailableError(`the tail of ${this.streamName} ended: the NATS connection is closed`));
    });
    const stopReplacingOnReconnect = connectionWatch(this.connection)?.onReconnect(replace) ?? (() => undefined);
    // The stall check: the log has held the next entry for a while, and it has not arrived. While the tail is
    // up to date (the last check found nothing held) it asks every metaTailIdleCheckIntervalMs only: an idle
    // cluster's processes asked the stream's info twice a second each.
    let checking = false;
    let heldSince: { seq: number; atMs: number } | null = null;
    let upToDateUntilMs = 0;
    const stallCheck = setInterval(() => {
      if (checking || stopped || ended || performance.now() - lastProgressAtMs < LIMITS.metaTailStallMs) {
        heldSince = null;
        upToDateUntilMs = 0;
        return;
      }
      if (heldSince === null && performance.now() < upToDateUntilMs) return;
      checking = true;
      void this.lastSeq()
        .then((lastSeq) => {
          if (lastSeq < expectedSeq) {
            heldSince = null;
            upToDateUntilMs = performance.now() + LIMITS.metaTailIdleCheckIntervalMs;
          } else if (heldSince === null || heldSince.seq !== expectedSeq) {
            heldSince = { seq: expectedSeq, atMs: performance.now() };
          } else if (performance.now() - heldSince.atMs >= LIMITS.metaTailStallMs) {
            heldSince = null;
            replace();
          }
        }, () => undefined)
        .finally(() => {
          checking = false;
        });
    }, LIMITS.metaTailCheckIntervalMs);
    // The appended-entry watch: the log holds `appendedSeq` (this process appended it), so it must arrive.
    let appendedSeq = 0;
    let appendedLook: NodeJS.Timeout | undefined;
    let progressAtLastLookMs = lastProgressAtMs;
    const lookAgainLater = (): void => {
      if (appendedLook !== undefined || stopped || ended || appendedSeq < expectedSeq) return;
      progressAtLastLookMs = lastProgressAtMs;
      // The look runs after the I/O that is due, so an entry already on the socket counts as arrived.
      appendedLook = setTimeout(() => setImmediate(look), LIMITS.metaTailAppendedEntryWaitMs);
    };
    const look = (): void => {
      appendedLook = undefined;
      if (stopped || ended) return;
      const action = appendedEntryAction({
        appendedSeq,
        expectedSeq,
        // A paced tail consumes while a poll is out or it pauses between two (it has no `messages`).
        consuming: (messages !== undefined || pollOut !== undefined || wakePaced !== undefined) && !replaceRequested,
        progressedSinceLastLook: lastProgressAtMs !== progressAtLastLookMs,
      });
      if (action === 'delivered') return;
      if (action === 'replace') replace();
      lookAgainLater();
    };
    /** The newest entry this process appended or waits for: a paced tail asks at once when it is not delivered yet. */
    let wantedSeq = 0;
    const want = (seq: number): void => {
      if (seq > wantedSeq) wantedSeq = seq;
      if (seq >= expectedSeq) wakePaced?.();
    };
    const watchAppended = (seq: number): void => {
      if (seq > appendedSeq) appendedSeq = seq;
      want(seq);
      lookAgainLater();
    };
    this.appendWatchers.add(watchAppended);
    cleanUp = () => {
      clearInterval(stallCheck);
      if (appendedLook !== undefined) clearTimeout(appendedLook);
      this.appendWatchers.delete(watchAppended);
      stopReplacingOnReconnect();
    };
    const consumerPrefix = `mink_tail_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    let consumerCount = 0;

    /**
     * One delivered message: an entry delivered again is skipped, a later entry than the next one ends this
     * consumer (see above), the next one goes to `onEntry`. 'stop' when this consumer is done.
     */
    const takeEntry = async (message: { seq: number; data: Uint8Array }, slices: ApplySlices): Promise<'next' | 'stop'> => {
      lastProgressAtMs = performance.now();
      // An entry delivered again was applied already.
      if (message.seq < expectedSeq) return 'next';
      if (message.seq > expectedSeq) {
        // JetStream starts a consumer below the first held entry at that first entry, silently; the tail
        // checks every sequence so a purged prefix (or a purge that overtakes a slow tail) is reported.
        const firstSeq = await this.firstSeq().catch(() => null);
        if (firstSeq !== null && firstSeq > expectedSeq) end(new LogPurgedError(expectedSeq, firstSeq));
        // Otherwise the next entry is still held and was lost on its way: a new consumer starts at it.
        else replace();
        return 'stop';
      }
      let command = decodeCommand(message.data);
      if (command === null) {
        // Not JSON as delivered: read it again from the stream, so that an entry damaged on its way to this
        // process (not in the log) is applied as every other process applies it. Until that read answers,
        // the entry is not taken: a new consumer delivers it again.
        const stored = await this.storedEntry(message.seq).catch(() => undefined);
        if (stored === undefined) {
          replace();
          return 'stop';
        }
        command = decodeCommand(stored);
      }
      expectedSeq = message.seq + 1;
      onEntry(message.seq, command);
      await slices.yieldWhenDue();
      return 'next';
    };

    /**
     * The paced tail: asks for whatever the consumer holds (up to a batch, not waiting for more), then
     * pauses `tailPaceMs` unless it got a whole batch, or an entry was appended here or asked for
     * (`catchUp`) while the poll was out; either of those during the pause ends it. A poll that finds
     * nothing held waits on the server for the next entry, up to `LIMITS.metaTailPollWaitMs`, and is asked
     * again at once when that wait was its pause: an idle tail asks once per wait, not ten times a second,
     * and takes a new entry as it is stored.
     * A poll that fails ends the consumer, and a new one is made; one that stays silent for its wait and
     * `LIMITS.metaTailPollTimeoutMs` more (its consumer is gone) replaces the consumer.
     */
    const pollPaced = async (consumerName: string): Promise<void> => {
      lastProgressAtMs = performance.now();
      const slices = new ApplySlices();
      while (!stopped && !ended && !replaceRequested) {
        let delivered = 0;
        const wantedBeforePoll = wantedSeq;
        const polledAtMs = performance.now();
        const batch = pullAvailable(this.connection, this.streamName, consumerName, LIMITS.metaTailBatchMessagesMax, LIMITS.metaTailPollWaitMs);
        pollOut = batch;
        const silence = new SilenceWatch(LIMITS.metaTailPollWaitMs + LIMITS.metaTailPollTimeoutMs, replace);
        try {
          for await (const message of batch.entries) {
            // The bound is on silence: a poll delivering a long batch (a catch-up) is answered, however long it takes.
            silence.heard();
            delivered += 1;
            if (stopped || ended || replaceRequested || (await takeEntry(message, slices)) === 'stop') return;
            silence.heard();
          }
        } finally {
          silence.stop();
          pollOut = undefined;
          batch.stop();
        }
        // Stopped or replaced while the poll was out: wakePaced had nothing to wake.
        if (stopped || ended || replaceRequested) return;
        // More may be held (a whole batch came), or an entry was appended here or asked for while the poll was
        // out: ask again. One wanted before the poll and still not delivered waits for the pause (or the
        // appended-entry watch replaces the consumer), so a consumer that delivers nothing is never polled in a tight loop.
        if (delivered >= LIMITS.metaTailBatchMessagesMax || (wantedSeq > wantedBeforePoll && wantedSeq >= expectedSeq)) continue;
        // Nothing came while the poll waited at least a pause on the server: that wait was the pause.
        if (delivered === 0 && performance.now() - polledAtMs >= this.tailPaceMs) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            wakePaced = undefined;
            resolve();
          }, this.tailPaceMs);
          wakePaced = () => {
            wakePaced = undefined;
            clearTimeout(timer);
            resolve();
          };
        });
      }
    };

    const consumeOne = async (): Promise<void> => {
      const info = await this.tailManager.consumers.add(this.streamName, {
        name: `${consumerPrefix}_${++consumerCount}`,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: expectedSeq,
        ack_policy: AckPolicy.None,
        mem_storage: true,
        num_replicas: 1,
        // Left behind when this process dies or its server goes away: the server removes it after this long.
        inactive_threshold: nanos(LIMITS.metaTailConsumerInactiveMs),
      });
      try {
        if (stopped || ended || replaceRequested) return;
        if (this.tailPaceMs > 0) {
          await pollPaced(info.name);
          return;
        }
        messages = await this.jetStream.consumers.getPullConsumerFor(info).consume({
          max_messages: LIMITS.metaTailBatchMessagesMax,
          idle_heartbeat: this.tailIdleHeartbeatMs,
          expires: LIMITS.metaTailPullExpiresMs,
        });
        lastProgressAtMs = performance.now();
        void watchConsumerStatus(messages, replace);
        const slices = new ApplySlices();
        for await (const message of messages) {
          if (stopped || ended || replaceRequested) break;
          if ((await takeEntry(message, slices)) === 'stop') break;
        }
      } finally {
        if (messages) {
          cancelHeartbeatMonitor(messages);
          // Not close(): nats.js 2.29 never settles it once the loop above has left the iterator (its stop is
          // queued behind the iterator). stop() unsubscribes and clears the consumer's timers at once.
          messages.stop();
          messages = undefined;
        }
        // Best effort: a consumer on a server that is gone cannot be deleted, and expires by itself.
        void this.tailManager.consumers.delete(this.streamName, info.name).catch(() => undefined);
      }
    };

    const run = async (): Promise<void> => {
      let failures = 0;
      while (!stopped && !ended) {
        replaceRequested = false;
        try {
          await consumeOne();
          failures = 0;
        } catch (error) {
          if (this.connection.isClosed()) break;
          failures += 1;
          if (failures >= LIMITS.metaTailReportFailuresAfter && failures % LIMITS.metaTailReportFailuresAfter === 0) {
            onTailTrouble?.(error instanceof Error ? error : new Error(String(error)));
          }
        }
        if (stopped || ended) break;
        if (failures > 0) await sleepMs(Math.min(LIMITS.metaTailRetryMaxMs, LIMITS.metaTailRetryInitialMs * failures));
      }
      cleanUp();
    };
    const onTailTrouble = this.onTailTrouble;
    const running = run();
    return {
      catchUp: want,
      stop: async () => {
        stopped = true;
        cleanUp();
        messages?.stop();
        pollOut?.stop();
        wakePaced?.();
        await running;
      },
    };
  }

  /** Called now and then while a tail cannot create a consumer (JetStream unreachable); the tail keeps trying. */
  onTailTrouble: ((error: Error) => void) | undefined = undefined;

  async lastSeq(): Promise<number> {
    try {
      const info = await this.manager.streams.info(this.streamName);
      return info.state.last_seq;
    } catch (error) {
      throw translateNatsError(error, `read the last sequence of ${this.streamName}`);
    }
  }

  /** The bytes of entry `seq` as the stream holds them (a message get, not a consumer's delivery). */
  private async storedEntry(seq: number): Promise<Uint8Array> {
    return (await this.tailManager.streams.getMessage(this.streamName, { seq })).data;
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

/**
 * Replaces the consumer when nats.js says it is gone or silent: idle heartbeats missed (the server holding
 * it stopped answering), deleted, or not found. Ends with the consumer's messages.
 */
async function watchConsumerStatus(messages: ConsumerMessages, replace: () => void): Promise<void> {
  try {
    for await (const status of await messages.status()) {
      if (
        status.type === ConsumerEvents.HeartbeatsMissed ||
        status.type === ConsumerEvents.ConsumerDeleted ||
        status.type === ConsumerEvents.ConsumerNotFound ||
        status.type === ConsumerEvents.StreamNotFound ||
        status.type === ConsumerEvents.NoResponders
      ) {
        replace();
      }
    }
  } catch {
    // The status iterator ends with the messages.
  }
}

/**
 * Buffered entries are delivered through resolved promises, which never let timers run: after a slice of
 * applying (`LIMITS.metaApplySliceMs`), a whole turn of the event loop goes to heartbeats and requests.
 */
class ApplySlices {
  private startedAtMs = performance.now();

  async yieldWhenDue(): Promise<void> {
    if (performance.now() - this.startedAtMs < LIMITS.metaApplySliceMs) return;
    await yieldToEventLoop();
    this.startedAtMs = performance.now();
  }
}

/**
 * Calls `onSilent` once nothing was `heard` for `silenceMs`. The check runs after the I/O that is due, so
 * a process whose event loop was busy (applying a long backlog) does not take its own delay for silence:
 * messages that arrived meanwhile are taken first, and count.
 */
class SilenceWatch {
  private heardAtMs = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly silenceMs: number,
    private readonly onSilent: () => void,
  ) {
    this.arm(silenceMs);
  }

  heard(): void {
    this.heardAtMs = performance.now();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(() => setImmediate(() => this.check()), delayMs);
  }

  private check(): void {
    if (this.stopped) return;
    const silentMs = performance.now() - this.heardAtMs;
    if (silentMs >= this.silenceMs) this.onSilent();
    else this.arm(this.silenceMs - silentMs);
  }
}

/** A tail pace: 0 (each entry as it comes) or a positive whole number of milliseconds. */
function checkedPace(paceMs: number): number {
  if (!Number.isSafeInteger(paceMs) || paceMs < 0) throw new Error(`tailPaceMs must be a non-negative integer, got ${paceMs}`);
  return paceMs;
}

function sleepMs(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

/** Resolves after timers and I/O callbacks that are due have run. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A payload that is not JSON is still an entry of the log: it is delivered as `null`, which `apply` turns
 * into an InvalidArgument rejection, so every process skips it the same way and sequences stay gap-free
 * (once the tail has read it again from the stream: one damaged on its way is not skipped).
 */
function decodeCommand(data: Uint8Array): Command {
  try {
    return JSON.parse(decoder.decode(data)) as Command;
  } catch {
    return null as unknown as Command;
  }
}

/** Creates the stream when it is missing (never changes an existing one) and returns its replicas. */
async function ensureStream(manager: JetStreamManager, streamName: string, subject: string, replicas: number): Promise<number> {
  const existing = await streamInfoOrNull(manager, streamName);
  if (existing === null) {
    try {
      const created = await manager.streams.add({
        name: streamName,
        subjects: [subject],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        duplicate_window: nanos(LIMITS.metaDuplicateWindowMs),
        num_replicas: replicas,
        deny_delete: true,
      });
      return created.config.num_replicas ?? replicas;
    } catch (error) {
      // Another process may have created it between our look-up and our add; then use theirs.
      if ((await streamInfoOrNull(manager, streamName)) === null) throw creationError(error, `create stream ${streamName}`, replicas);
    }
  }
  const info = existing ?? (await manager.streams.info(streamName));
  if (!info.config.subjects?.includes(subject)) {
    throw new Error(`stream ${streamName} exists with subjects ${JSON.stringify(info.config.subjects)}, not '${subject}'`);
  }
  return info.config.num_replicas ?? 1;
}

async function streamInfoOrNull(manager: JetStreamManager, streamName: string) {
  try {
    return await manager.streams.info(streamName);
  } catch (error) {
    if (isStreamNotFound(error)) return null;
    throw translateNatsError(error, `look up stream ${streamName}`);
  }
}
