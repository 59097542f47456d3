import { UnavailableError } from '@mink/protocol';
import type { AppendResult, Command, MetaLog, TailSubscription } from '@mink/meta';

/** A fault the fake injects into the next appends, for simulations of an unreliable log. */
export type AppendFault =
  /** The append fails before it reaches the log: nothing is appended. */
  | 'lost-request'
  /** The append lands in the log but its ack is lost: the caller sees a failure. */
  | 'lost-ack'
  /**
   * The caller sees a failure at once and the entry lands later (`failNextAppends`' `landsAfterMs`): a
   * publish stored by a JetStream leader that was lost before it acknowledged, and replicated once a
   * new leader is elected. Retries of the same message id meanwhile land it at once, as JetStream would.
   */
  | 'lands-late';

interface Subscriber {
  nextSeq: number;
  onEntry: (seq: number, command: Command) => void;
  onError: ((error: Error) => void) | undefined;
  stopped: boolean;
  scheduled: boolean;
}

/**
 * An in-memory `MetaLog` with the contract of the JetStream adapter (see the port in @mink/meta):
 * entries numbered from 1 without gaps, de-duplication by message id (forever, as if the window were
 * infinite), tails that deliver asynchronously, one entry at a time, strictly in order. Commands are
 * copied through JSON on append, as the wire would, so no caller can share or mutate a stored entry.
 *
 * Faults for simulations: `failNextAppends(count, fault)` makes the next appends fail with
 * `UnavailableError`, either before the entry lands, or after (a lost ack), or with the entry landing
 * only later (a metadata leader failover).
 */
export class InMemoryMetaLog implements MetaLog {
  private readonly commands: Command[] = [];
  private readonly seqByMessageId = new Map<string, number>();
  private readonly subscribers = new Set<Subscriber>();
  private readonly faults: { fault: AppendFault; landsAfterMs: number }[] = [];

  async append(command: Command, messageId: string): Promise<AppendResult> {
    const { fault, landsAfterMs } = this.faults.shift() ?? { fault: undefined, landsAfterMs: 0 };
    if (fault === 'lost-request') throw new UnavailableError('injected fault: the append did not reach the log');
    if (fault === 'lands-late') {
      const landing = JSON.parse(JSON.stringify(command)) as Command;
      setTimeout(() => this.appendNow(landing, messageId), landsAfterMs);
      throw new UnavailableError(`injected fault: no ack; the entry lands in ${landsAfterMs} ms`);
    }
    const result = this.appendNow(command, messageId);
    if (fault === 'lost-ack') throw new UnavailableError(`injected fault: the ack of entry ${result.seq} was lost`);
    return result;
  }

  tail(fromSeq: number, onEntry: (seq: number, command: Command) => void, onError?: (error: Error) => void): TailSubscription {
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 1) throw new Error(`a tail starts at a sequence >= 1, not ${fromSeq}`);
    const subscriber: Subscriber = { nextSeq: fromSeq, onEntry, onError, stopped: false, scheduled: false };
    this.subscribers.add(subscriber);
    this.schedule(subscriber);
    return {
      stop: async () => {
        subscriber.stopped = true;
        this.subscribers.delete(subscriber);
      },
    };
  }

  async lastSeq(): Promise<number> {
    return this.commands.length;
  }

  /** Makes the next `count` appends fail with `fault`. */
  failNextAppends(count: number, fault: AppendFault, landsAfterMs = 0): void {
    for (let index = 0; index < count; index++) this.faults.push({ fault, landsAfterMs });
  }

  /** Drops the faults not yet injected (entries already landing late still land). */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /** A copy of every entry, in order, for assertions. */
  entries(): { seq: number; command: Command }[] {
    return this.commands.map((command, index) => ({ seq: index + 1, command: structuredClone(command) }));
  }

  private appendNow(command: Command, messageId: string): AppendResult {
    const existing = this.seqByMessageId.get(messageId);
    if (existing !== undefined) return { seq: existing, duplicate: true };
    this.commands.push(JSON.parse(JSON.stringify(command)) as Command);
    const seq = this.commands.length;
    this.seqByMessageId.set(messageId, seq);
    for (const subscriber of this.subscribers) this.schedule(subscriber);
    return { seq, duplicate: false };
  }

  /** Delivers pending entries to one subscriber on a later turn of the event loop, never synchronously. */
  private schedule(subscriber: Subscriber): void {
    if (subscriber.scheduled || subscriber.stopped) return;
    subscriber.scheduled = true;
    setImmediate(() => {
      subscriber.scheduled = false;
      while (!subscriber.stopped && subscriber.nextSeq <= this.commands.length) {
        const seq = subscriber.nextSeq;
        subscriber.nextSeq += 1;
        try {
          subscriber.onEntry(seq, structuredClone(this.commands[seq - 1]!));
        } catch (error) {
          // Like the JetStream adapter: a throwing consumer ends its tail and hears about it through onError.
          subscriber.stopped = true;
          this.subscribers.delete(subscriber);
          if (!subscriber.onError) throw error;
          subscriber.onError(error instanceof Error ? error : new Error(String(error)));
        }
      }
    });
  }
}
