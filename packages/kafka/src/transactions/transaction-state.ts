/**
 * Kafka's transaction coordinator as a pure state machine (issue 40 item 2; Kafka's TransactionMetadata and
 * TransactionCoordinator, KIP-98): what each request of a transactional producer does to the state of its
 * transactional id, and what must happen before it is answered. No I/O, no clock: the caller reads the
 * state, calls one of these with the time, stores the next state durably before it answers, and carries
 * out the marker writes a state in `PrepareCommit` or `PrepareAbort` names (see TransactionCoordinator in
 * @mink/data-plane).
 *
 * States, as Kafka names them:
 *   Empty          an id with a producer id and epoch and no transaction open
 *   Ongoing        partitions (or a group's offsets) were added: a transaction is open
 *   PrepareCommit  EndTxn(commit) was taken: the commit markers and the offsets are being written
 *   PrepareAbort   EndTxn(abort), a timeout or a new producer's fence: the abort markers are being written
 *   CompleteCommit / CompleteAbort   the markers are written; a new transaction may begin
 *
 * Every transition that moves a transaction to its end happens only from Ongoing; a request that finds
 * markers still being written gets CONCURRENT_TRANSACTIONS and retries.
 */
import { ERROR_CODES } from '../wire/codes';

export type TransactionStateName = 'Empty' | 'Ongoing' | 'PrepareCommit' | 'PrepareAbort' | 'CompleteCommit' | 'CompleteAbort';

export interface TopicPartition {
  topic: string;
  partition: number;
}

/** An offset a transaction commits for a consumer group when it commits (TxnOffsetCommit). */
export interface PendingOffset {
  group: string;
  topic: string;
  partition: number;
  offset: number;
  leaderEpoch: number;
  metadata: string | null;
}

/** The durable state of one transactional id. */
export interface TransactionState {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  /** The producer's transaction.timeout.ms: an Ongoing transaction older than this is aborted. */
  timeoutMs: number;
  state: TransactionStateName;
  /** The partitions of the open (or last) transaction: they get its markers. */
  partitions: TopicPartition[];
  /** The consumer groups whose offsets the open transaction commits (AddOffsetsToTxn). */
  groups: string[];
  /** Offsets committed with the transaction, applied when it commits, dropped when it aborts. */
  pendingOffsets: PendingOffset[];
  /** When the open transaction began (its first AddPartitionsToTxn or AddOffsetsToTxn). */
  startedAtMs: number;
  updatedAtMs: number;
}

/** Kafka's limits of a transaction: the epoch is an int16, and transaction.max.timeout.ms (15 minutes by default). */
export const PRODUCER_EPOCH_MAX = 32_767;
export const TRANSACTION_TIMEOUT_MS_MAX = 900_000;

/** The error codes the transitions answer with (of ERROR_CODES). */
export const TRANSACTION_ERRORS = {
  INVALID_PRODUCER_EPOCH: ERROR_CODES.INVALID_PRODUCER_EPOCH,
  INVALID_TXN_STATE: ERROR_CODES.INVALID_TXN_STATE,
  INVALID_PRODUCER_ID_MAPPING: ERROR_CODES.INVALID_PRODUCER_ID_MAPPING,
  INVALID_TRANSACTION_TIMEOUT: ERROR_CODES.INVALID_TRANSACTION_TIMEOUT,
  CONCURRENT_TRANSACTIONS: ERROR_CODES.CONCURRENT_TRANSACTIONS,
} as const;

/** A request refused with a Kafka error code and why. */
export interface TransactionRefusal {
  errorCode: number;
  message: string;
}

/** The next state to store before answering (null: nothing changes), or the refusal to answer. */
export type TransactionTransition = { next: TransactionState | null; refusal?: undefined } | { refusal: TransactionRefusal; next?: TransactionState | null };

const refuse = (errorCode: number, message: string, next: TransactionState | null = null): TransactionTransition => ({ refusal: { errorCode, message }, next });

/**
 * Whether InitProducerId must be given a fresh producer id: the id is new, or its producer has used the
 * last epoch (Kafka rotates the producer id then).
 */
export function needsProducerId(current: TransactionState | null): boolean {
  return current === null || current.producerEpoch >= PRODUCER_EPOCH_MAX - 1;
}

/**
 * InitProducerId with a transactional id: a new id gets `freshProducerId` at epoch 0; a known one the next
 * epoch (fencing every older producer of the id), or `freshProducerId` at epoch 0 once the epochs are used
 * up. A transaction left open by an older producer is aborted first: the state moves to PrepareAbort at a
 * bumped epoch (its markers fence the partitions) and the client is told CONCURRENT_TRANSACTIONS, to ask
 * again once the abort is complete. `freshProducerId` is null when `needsProducerId` said none is needed.
 */
export function initProducerIdTransition(current: TransactionState | null, transactionalId: string, timeoutMs: number, nowMs: number, freshProducerId: number | null): TransactionTransition {
  if (transactionalId === '') return refuse(ERROR_CODES.INVALID_REQUEST, 'a transactional id must not be empty');
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > TRANSACTION_TIMEOUT_MS_MAX) {
    return refuse(TRANSACTION_ERRORS.INVALID_TRANSACTION_TIMEOUT, `transaction.timeout.ms must be from 1 to ${TRANSACTION_TIMEOUT_MS_MAX}, got ${timeoutMs}`);
  }
  if (current !== null && (current.state === 'PrepareCommit' || current.state === 'PrepareAbort')) {
    return refuse(TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS, `the transaction of '${transactionalId}' is completing (${current.state})`);
  }
  if (current !== null && current.state === 'Ongoing') {
    // Fence the producer of the open transaction and abort it; the client asks again when that is done.
    const fenced = { ...current, producerEpoch: current.producerEpoch + 1, state: 'PrepareAbort' as const, pendingOffsets: [], updatedAtMs: nowMs };
    return refuse(TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS, `an open transaction of '${transactionalId}' is being aborted`, fenced);
  }
  const fresh = needsProducerId(current);
  if (fresh !== (freshProducerId !== null)) throw new Error(`invariant broken: InitProducerId of '${transactionalId}' ${fresh ? 'needs' : 'does not need'} a fresh producer id`);
  const identity = fresh ? { producerId: freshProducerId!, producerEpoch: 0 } : { producerId: current!.producerId, producerEpoch: current!.producerEpoch + 1 };
  return {
    next: { transactionalId, ...identity, timeoutMs, state: 'Empty', partitions: [], groups: [], pendingOffsets: [], startedAtMs: nowMs, updatedAtMs: nowMs },
  };
}

/** Why a request naming `producerId` at `producerEpoch` is not the current producer of `current`, or null when it is. */
function checkProducer(current: TransactionState | null, transactionalId: string, producerId: number, producerEpoch: number): TransactionRefusal | null {
  if (current === null || current.producerId !== producerId) {
    return { errorCode: TRANSACTION_ERRORS.INVALID_PRODUCER_ID_MAPPING, message: `producer ${producerId} is not the producer of transactional id '${transactionalId}'` };
  }
  if (current.producerEpoch !== producerEpoch) {
    return { errorCode: TRANSACTION_ERRORS.INVALID_PRODUCER_EPOCH, message: `producer ${producerId} of '${transactionalId}' is at epoch ${current.producerEpoch}, not ${producerEpoch}: fenced` };
  }
  if (current.state === 'PrepareCommit' || current.state === 'PrepareAbort') {
    return { errorCode: TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS, message: `the last transaction of '${transactionalId}' is completing (${current.state})` };
  }
  return null;
}

/** The state once a transaction is (or stays) open: a new one starts with nothing from the last. */
function opened(current: TransactionState, nowMs: number): TransactionState {
  if (current.state === 'Ongoing') return { ...current, updatedAtMs: nowMs };
  return { ...current, state: 'Ongoing', partitions: [], groups: [], pendingOffsets: [], startedAtMs: nowMs, updatedAtMs: nowMs };
}

/** AddPartitionsToTxn: the partitions join the open transaction (opening one); nothing is stored when they already belong to it. */
export function addPartitionsTransition(current: TransactionState | null, transactionalId: string, producerId: number, producerEpoch: number, partitions: readonly TopicPartition[], nowMs: number): TransactionTransition {
  const wrong = checkProducer(current, transactionalId, producerId, producerEpoch);
  if (wrong) return { refusal: wrong };
  const state = current!;
  const known = new Set(state.state === 'Ongoing' ? state.partitions.map(partitionKey) : []);
  const added = partitions.filter((partition) => !known.has(partitionKey(partition)));
  if (state.state === 'Ongoing' && added.length === 0) return { next: null };
  const next = opened(state, nowMs);
  const seen = new Set(next.partitions.map(partitionKey));
  const partitionsAfter = [...next.partitions];
  for (const partition of added) {
    if (seen.has(partitionKey(partition))) continue;
    seen.add(partitionKey(partition));
    partitionsAfter.push({ topic: partition.topic, partition: partition.partition });
  }
  return { next: { ...next, partitions: partitionsAfter } };
}

/** AddOffsetsToTxn: the group's offsets will be committed with the open transaction (opening one). */
export function addOffsetsTransition(current: TransactionState | null, transactionalId: string, producerId: number, producerEpoch: number, group: string, nowMs: number): TransactionTransition {
  const wrong = checkProducer(current, transactionalId, producerId, producerEpoch);
  if (wrong) return { refusal: wrong };
  const state = current!;
  if (state.state === 'Ongoing' && state.groups.includes(group)) return { next: null };
  const next = opened(state, nowMs);
  return { next: { ...next, groups: [...next.groups, group] } };
}

/**
 * TxnOffsetCommit: offsets of a group added to the open transaction, kept until it ends (a later offset of
 * the same partition replaces the earlier). The group must have been added (AddOffsetsToTxn) first.
 */
export function txnOffsetCommitTransition(current: TransactionState | null, transactionalId: string, producerId: number, producerEpoch: number, offsets: readonly PendingOffset[], nowMs: number): TransactionTransition {
  const wrong = checkProducer(current, transactionalId, producerId, producerEpoch);
  if (wrong) return { refusal: wrong };
  const state = current!;
  const missing = offsets.find((offset) => state.state !== 'Ongoing' || !state.groups.includes(offset.group));
  if (missing) return refuse(TRANSACTION_ERRORS.INVALID_TXN_STATE, `group '${missing.group}' was not added to the open transaction of '${transactionalId}' (AddOffsetsToTxn)`);
  const replaced = new Set(offsets.map((offset) => `${offset.group}\u0000${partitionKey(offset)}`));
  const kept = state.pendingOffsets.filter((offset) => !replaced.has(`${offset.group}\u0000${partitionKey(offset)}`));
  return { next: { ...state, pendingOffsets: [...kept, ...offsets.map((offset) => ({ ...offset }))], updatedAtMs: nowMs } };
}

/**
 * EndTxn: an open transaction moves to PrepareCommit or PrepareAbort, which is stored before the answer;
 * its markers (and, for a commit, its offsets) are written after. A retry of an EndTxn already done is
 * answered as done, one still completing gets CONCURRENT_TRANSACTIONS, any other ending INVALID_TXN_STATE.
 */
export function endTxnTransition(current: TransactionState | null, transactionalId: string, producerId: number, producerEpoch: number, commit: boolean, nowMs: number): TransactionTransition {
  if (current === null || current.producerId !== producerId) {
    return refuse(TRANSACTION_ERRORS.INVALID_PRODUCER_ID_MAPPING, `producer ${producerId} is not the producer of transactional id '${transactionalId}'`);
  }
  if (current.producerEpoch !== producerEpoch) {
    return refuse(TRANSACTION_ERRORS.INVALID_PRODUCER_EPOCH, `producer ${producerId} of '${transactionalId}' is at epoch ${current.producerEpoch}, not ${producerEpoch}: fenced`);
  }
  const wanted = commit ? 'Commit' : 'Abort';
  switch (current.state) {
    case 'Ongoing':
      return { next: { ...current, state: commit ? 'PrepareCommit' : 'PrepareAbort', pendingOffsets: commit ? current.pendingOffsets : [], updatedAtMs: nowMs } };
    case 'CompleteCommit':
    case 'CompleteAbort':
      if (current.state === `Complete${wanted}`) return { next: null };
      break;
    case 'PrepareCommit':
    case 'PrepareAbort':
      if (current.state === `Prepare${wanted}`) return refuse(TRANSACTION_ERRORS.CONCURRENT_TRANSACTIONS, `the transaction of '${transactionalId}' is completing (${current.state})`);
      break;
    case 'Empty':
      break;
  }
  return refuse(TRANSACTION_ERRORS.INVALID_TXN_STATE, `'${transactionalId}' cannot ${commit ? 'commit' : 'abort'}: its transaction is ${current.state}`);
}

/** The state once the markers of a transaction in PrepareCommit or PrepareAbort are written (and a commit's offsets stored). */
export function completeTransition(current: TransactionState, nowMs: number): TransactionState {
  if (current.state !== 'PrepareCommit' && current.state !== 'PrepareAbort') throw new Error(`invariant broken: completing '${current.transactionalId}' in state ${current.state}`);
  return { ...current, state: current.state === 'PrepareCommit' ? 'CompleteCommit' : 'CompleteAbort', pendingOffsets: [], updatedAtMs: nowMs };
}

/**
 * A transaction open longer than its timeout is aborted, at a bumped epoch so its producer is fenced (as
 * Kafka does); null when `current` is not a timed-out open transaction.
 */
export function timeoutTransition(current: TransactionState, nowMs: number): TransactionState | null {
  if (current.state !== 'Ongoing' || nowMs - current.startedAtMs <= current.timeoutMs) return null;
  return { ...current, producerEpoch: current.producerEpoch + 1, state: 'PrepareAbort', pendingOffsets: [], updatedAtMs: nowMs };
}

function partitionKey(partition: TopicPartition): string {
  return `${partition.topic}\u0000${partition.partition}`;
}
