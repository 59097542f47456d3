import { LIMITS } from '@mink/config';

/**
 * Kafka transactions as a stream (a topic partition) records them (issue 40 item 2, KIP-98): which
 * producers have a transaction open on it and from which offset, which aborted transactions it still holds
 * records of, and the newest producer epoch a transaction marker was written with. Kept in the view with
 * the stream, so whichever node leads the partition serves read_committed fetches (the last stable offset
 * and the aborted transactions) without reading the log, and fences older producer epochs. Pure.
 *
 * What a `CommitWal` range carries for it (`WalRange.transaction`): a transactional batch of producer P
 * opens P's transaction at the range's first offset unless one is open; a marker (a control batch) of P
 * closes it, and an abort marker records the aborted transaction from its first offset to the marker's.
 */

/** A transactional batch or a transaction marker of a `CommitWal` range. */
export interface WalTransaction {
  producerId: number;
  producerEpoch: number;
  /** Absent for a batch of records; the outcome for a transaction marker. */
  marker?: 'commit' | 'abort';
}

/** An aborted transaction whose records may still be in the stream: from its first offset to its abort marker's. */
export interface AbortedTransaction {
  producerId: number;
  firstOffset: number;
  lastOffset: number;
}

export interface StreamTransactions {
  /** The first offset of each open transaction, by producer id (in decimal). */
  open: Record<string, number>;
  /** Aborted transactions, by the offset of their markers (oldest first), at most `LIMITS.abortedTransactionsPerStreamMax`. */
  aborted: AbortedTransaction[];
  /** The newest epoch a marker of each producer was written with, by producer id: older epochs are fenced. */
  markerEpochs: Record<string, number>;
}

const NONE: StreamTransactions = Object.freeze({ open: Object.freeze({}), aborted: Object.freeze([]) as unknown as AbortedTransaction[], markerEpochs: Object.freeze({}) });

/** The transactions of a stream that has never held a transactional batch. */
export function noTransactions(): StreamTransactions {
  return NONE;
}

/** Why `value` is not a WalTransaction, or null. */
export function describeMalformedTransaction(value: unknown): string | null {
  const transaction = value as Partial<Record<keyof WalTransaction, unknown>> | null;
  const id = transaction?.producerId;
  const epoch = transaction?.producerEpoch;
  const marker = transaction?.marker;
  if (typeof transaction !== 'object' || transaction === null || Array.isArray(transaction)) return 'transaction must be an object';
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) return 'transaction.producerId must be a non-negative integer';
  if (typeof epoch !== 'number' || !Number.isInteger(epoch) || epoch < 0 || epoch > 32_767) return 'transaction.producerEpoch must be an integer from 0 to 32767';
  if (marker !== undefined && marker !== 'commit' && marker !== 'abort') return "transaction.marker must be absent, 'commit' or 'abort'";
  return null;
}

/**
 * The stream's transactions after a committed range `[startOffset, …)` of a transactional batch or marker.
 * Beyond `LIMITS.abortedTransactionsPerStreamMax` the oldest aborted transaction is forgotten (its records
 * then read as committed).
 */
export function withTransactionRange(transactions: StreamTransactions | undefined, startOffset: number, transaction: WalTransaction): StreamTransactions {
  const current = transactions ?? NONE;
  const producer = String(transaction.producerId);
  if (transaction.marker === undefined) {
    if (Object.prototype.hasOwnProperty.call(current.open, producer)) return current;
    return { ...current, open: withKey(current.open, producer, startOffset) };
  }
  const markerEpochs = withKey(current.markerEpochs, producer, Math.max(transaction.producerEpoch, ownNumber(current.markerEpochs, producer) ?? -1));
  const firstOffset = ownNumber(current.open, producer);
  if (firstOffset === undefined) return { ...current, markerEpochs };
  const open = withoutKey(current.open, producer);
  if (transaction.marker === 'commit') return { ...current, open, markerEpochs };
  const aborted = [...current.aborted, { producerId: transaction.producerId, firstOffset, lastOffset: startOffset }];
  return { open, aborted: aborted.slice(Math.max(0, aborted.length - LIMITS.abortedTransactionsPerStreamMax)), markerEpochs };
}

/** The transactions once the stream starts at `startOffset`: aborted ones wholly below it are of no use any more. */
export function trimmedTransactions(transactions: StreamTransactions | undefined, startOffset: number): StreamTransactions | undefined {
  if (transactions === undefined) return undefined;
  const kept = transactions.aborted.filter((aborted) => aborted.lastOffset >= startOffset);
  return kept.length === transactions.aborted.length ? transactions : { ...transactions, aborted: kept };
}

/** The last stable offset: the first offset of the oldest open transaction, or the committed end when none is open. */
export function lastStableOffsetOf(stream: { endOffset: number; transactions?: StreamTransactions | undefined }): number {
  let stable = stream.endOffset;
  for (const first of Object.values(stream.transactions?.open ?? {})) stable = Math.min(stable, first);
  return stable;
}

/** The aborted transactions a read_committed fetch of `[fromOffset, toOffset)` must be told of, oldest first. */
export function abortedTransactionsIn(transactions: StreamTransactions | undefined, fromOffset: number, toOffset: number): AbortedTransaction[] {
  return (transactions?.aborted ?? []).filter((aborted) => aborted.lastOffset >= fromOffset && aborted.firstOffset < toOffset);
}

/** The newest epoch a marker of `producerId` was written with on the stream, or -1. */
export function markerEpochOf(transactions: StreamTransactions | undefined, producerId: number): number {
  return ownNumber(transactions?.markerEpochs ?? {}, String(producerId)) ?? -1;
}

function ownNumber(record: Record<string, number>, key: string): number | undefined {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

function withKey(record: Record<string, number>, key: string, value: number): Record<string, number> {
  const copy: Record<string, number> = {};
  for (const [existing, existingValue] of Object.entries(record)) copy[existing] = existingValue;
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

function withoutKey(record: Record<string, number>, key: string): Record<string, number> {
  const copy: Record<string, number> = {};
  for (const [existing, value] of Object.entries(record)) if (existing !== key) copy[existing] = value;
  return copy;
}
