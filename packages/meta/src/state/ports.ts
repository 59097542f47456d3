import type { Command } from './commands';

/** Where an appended command landed in the log. */
export interface AppendResult {
  /** The log sequence of the entry. For a duplicate it is the sequence of the original entry. */
  seq: number;
  /** True when an entry with the same message id was already in the log, so nothing new was appended. */
  duplicate: boolean;
}

/** A running tail of the log; `stop()` resolves once no more entries will be delivered. */
export interface TailSubscription {
  stop(): Promise<void>;
  /**
   * Someone waits for entry `seq`: a tail that asks for entries only now and then (a paced one) asks now.
   * A hint only: every entry is delivered either way.
   */
  catchUp?(seq: number): void;
}

/**
 * The metadata log (docs/architecture.md §3): an ordered, durable sequence of commands numbered from 1 without gaps.
 * The production adapter is a JetStream stream; the testing package has an in-memory fake.
 *
 * Contract:
 * - `append` is idempotent per `messageId` (within the adapter's de-duplication window): appending the
 *   same id again appends nothing and returns the original sequence with `duplicate: true`. A failure
 *   that may be transient (the caller should retry with the same id) is an `UnavailableError`; the
 *   entry may or may not have been appended.
 * - `tail(fromSeq, onEntry)` calls `onEntry` for every entry with `seq >= fromSeq`, one at a time,
 *   strictly in sequence order with no gaps and no repeats, including entries appended later, until
 *   stopped. Delivery is asynchronous: never from inside `tail` or `append`. `onError` is called if the
 *   tail ends for good (for example the log was deleted); transient trouble is retried inside.
 * - `lastSeq` is the sequence of the last entry in the log, 0 when it is empty.
 */
export interface MetaLog {
  append(command: Command, messageId: string): Promise<AppendResult>;
  tail(fromSeq: number, onEntry: (seq: number, command: Command) => void, onError?: (error: Error) => void): TailSubscription;
  lastSeq(): Promise<number>;
}
