import type { WriterBatch, WriterState } from './view';

/**
 * What the leader of a bucket does with an idempotent append (writer id, sequence), Kafka's idempotent
 * producer rule made ours:
 * - a sequence already committed (the writer's last batch or one of the few before it) is answered with
 *   its offsets and written again never (`duplicate`);
 * - an older sequence that is no longer remembered is a `conflict`: the caller's state is wrong;
 * - a sequence already in flight on this node is `join`ed;
 * - the next sequence is `write`n: the one after the newest in flight here, else after the last committed,
 *   else (a writer the view does not know, or forgot) after the last sequence the writer says it had
 *   acknowledged (`ackedSeq`, -1 for none);
 * - any other sequence is `outOfOrder`: an earlier batch of this writer has not reached this node (or
 *   failed), and writing this one first would commit the writer's batches out of order.
 * A request without `ackedSeq` (a writer that keeps one request in flight) skips the order check.
 *
 * A batch may cover a run of sequences (`firstSeq` to `seq`, as a Kafka producer numbers every record): it
 * is known by its last sequence, and it is next when its first one follows the last sequence before it. It
 * is a duplicate only when it is the remembered batch's whole run, first sequence too (Kafka's rule: a run
 * takes one offset per sequence, so the remembered run is `[seq - count + 1, seq]`); a run that only ends
 * where a remembered one ended is another batch, and out of order. Likewise a batch in flight here is
 * joined only by the same run (`inFlightBatchOf`); another run ending at its last sequence is out of order.
 * Whether a duplicate or a joining batch holds the same records as the batch it repeats is for the caller
 * to check where that matters (a Kafka producer may number other records with the sequences of a batch
 * whose outcome it never learnt: see `DataPlane.appendRecordBatch`).
 */
export type WriterSequenceDecision =
  | { kind: 'write' }
  | { kind: 'join' }
  | { kind: 'duplicate'; batch: WriterBatch }
  | { kind: 'conflict'; lastCommitted: number }
  | { kind: 'outOfOrder'; expected: number };

/** What is known of a batch in flight: the first sequence of the run it covers, when it covers one. */
export interface InFlightBatch {
  firstSeq?: number | undefined;
}

export interface WriterSequenceInput {
  /** The batch's (last) sequence. */
  seq: number;
  /** The first sequence the batch covers; `seq` when absent (one sequence per batch). */
  firstSeq?: number;
  /** The newest sequence the writer had acknowledged when it sent this request; undefined for an unordered writer. */
  ackedSeq: number | undefined;
  /** What the view holds of this writer on this stream. */
  committed: WriterState | undefined;
  /** Sequences of this writer in flight on this node for this stream (accepted, not yet settled): a set, or a map keyed by them. */
  inFlight: Pick<ReadonlySet<number>, 'has' | 'keys' | 'size'>;
  /** The run of the batch in flight at a sequence, where known; a batch in flight is joined by any request of its sequence when absent. */
  inFlightBatchOf?: (seq: number) => InFlightBatch | undefined;
}

export function decideWriterSequence(input: WriterSequenceInput): WriterSequenceDecision {
  const { seq, committed, inFlight } = input;
  if (committed) {
    const batch = committed.seq === seq ? committed : committed.earlier?.find((earlier) => earlier.seq === seq);
    const sameRun = batch !== undefined && (input.firstSeq === undefined || input.firstSeq === batch.seq - batch.count + 1);
    if (batch && sameRun) return { kind: 'duplicate', batch: { seq: batch.seq, baseOffset: batch.baseOffset, count: batch.count } };
    if (seq < committed.seq) return { kind: 'conflict', lastCommitted: committed.seq };
  }
  if (inFlight.has(seq)) {
    const pending = input.inFlightBatchOf?.(seq);
    // Another run ending where the one in flight ends is out of order, as the check below finds.
    if (pending?.firstSeq === undefined || input.firstSeq === undefined || pending.firstSeq === input.firstSeq) return { kind: 'join' };
  }
  if (input.ackedSeq === undefined) return { kind: 'write' };
  let newestInFlight = -1;
  for (const pending of inFlight.keys()) newestInFlight = Math.max(newestInFlight, pending);
  const expected = inFlight.size > 0 ? newestInFlight + 1 : committed ? committed.seq + 1 : input.ackedSeq + 1;
  return (input.firstSeq ?? seq) === expected ? { kind: 'write' } : { kind: 'outOfOrder', expected };
}

/**
 * Why a batch of writer `writerId` numbered `seq` must not be committed to a stream whose view holds
 * `committed` of that writer, or null when it may: a sequence at or below the writer's last committed one
 * was committed before (or is too old to tell), and committing it again would store its records twice.
 * The leader's `decideWriterSequence` answers such a batch at arrival; the WAL writer checks it again
 * where it places the batch, because an earlier attempt whose commit's outcome was unknown (a metadata
 * leader failover) may apply in between. (A commit placed before that earlier one applied cannot land
 * twice: its range starts at the end the earlier one moved, so `CommitWal` refuses it. Applying a
 * `CommitWal` does not check sequences itself, so every existing log replays as it did.)
 */
export function describeCommittedSequence(committed: WriterState | undefined, writerId: string, seq: number): string | null {
  if (committed === undefined || seq > committed.seq) return null;
  return `writer ${writerId} sequence ${seq} is already committed (its last committed sequence is ${committed.seq}): not written twice`;
}
