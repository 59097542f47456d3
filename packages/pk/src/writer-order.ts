/**
 * The order of one client's puts and deletes to a primary-key bucket when it keeps several requests in
 * flight (Kafka's `max.in.flight.requests.per.connection` with idempotence, for upserts).
 *
 * A client numbers its requests to a bucket (writer id, sequence, and the newest sequence it had
 * acknowledged when it sent the request). The leader plans them strictly in sequence order, so a later
 * write of a key never lands before an earlier one, and once one of them failed it plans none after it
 * until the failed one is accepted again: a retry can never be overtaken by the requests sent after it.
 * What the leader knows of a writer lives in memory for as long as it leads the bucket; a new leader (or
 * one that forgot the writer) accepts a sequence only when every sequence before it was acknowledged.
 *
 * The decisions, given what this leader knows of the writer:
 * - a sequence in flight here is `join`ed, and one settled here and remembered is `answer`ed with its
 *   outcome: a retry after a lost reply is never planned twice while the leader remembers it;
 * - after a failure, the failed sequence is `accept`ed again; a later one is `outOfOrder` (it waits for the
 *   failed one) and an earlier one is `forgotten`;
 * - otherwise the next sequence is `accept`ed, an older one not remembered is `forgotten`, and a later one
 *   is `accept`ed only when every sequence before it was acknowledged (`acked` = seq − 1), else it is
 *   `outOfOrder`;
 * - a writer this leader does not know is `accept`ed when every sequence before it was acknowledged, else
 *   `outOfOrder` (an earlier request may still be on its way, or in flight at the previous leader);
 * - a sequence neither in flight nor remembered here, at or below the newest one the writer had
 *   acknowledged (`newestAcked`), is `written`: a later request of its writer was written and answered, and
 *   none is written before the ones ahead of it, so this one was written before (here or at a previous
 *   leader). Writing it again would put its older values over the later request's.
 */
export type PkWriterDecision =
  | { kind: 'accept' }
  | { kind: 'join' }
  | { kind: 'answer' }
  | { kind: 'outOfOrder'; expected: number }
  | { kind: 'forgotten'; next: number }
  | { kind: 'written' };

/** What a PK bucket's leader knows of one writer. */
export interface PkWriterKnown {
  /** The sequence expected next: every lower one was accepted here (or acknowledged before). */
  next: number;
  /** The lowest accepted sequence that failed and was not accepted again since, or null. */
  failedAt: number | null;
  /** Sequences accepted here and not settled yet. */
  pending: Pick<ReadonlySet<number>, 'has'>;
  /** Sequences that succeeded here and whose outcomes are still remembered. */
  remembered: Pick<ReadonlySet<number>, 'has'>;
}

export interface PkWriterInput {
  seq: number;
  /** The newest sequence the writer had acknowledged when it sent this request, below `seq` (-1 for none). */
  acked: number;
  /** The newest sequence the writer had acknowledged, even above `seq`; absent from writers that do not say. */
  newestAcked?: number;
  known: PkWriterKnown | undefined;
}

export function decidePkWriterOrder(input: PkWriterInput): PkWriterDecision {
  const { seq, acked, known } = input;
  const everyEarlierAcknowledged = acked === seq - 1;
  const writtenBefore = input.newestAcked !== undefined && input.newestAcked >= seq;
  if (!known) {
    if (writtenBefore) return { kind: 'written' };
    return everyEarlierAcknowledged ? { kind: 'accept' } : { kind: 'outOfOrder', expected: acked + 1 };
  }
  if (known.pending.has(seq)) return { kind: 'join' };
  if (known.remembered.has(seq)) return { kind: 'answer' };
  if (writtenBefore) return { kind: 'written' };
  if (known.failedAt !== null) {
    if (seq === known.failedAt) return { kind: 'accept' };
    return seq < known.failedAt ? { kind: 'forgotten', next: known.failedAt } : { kind: 'outOfOrder', expected: known.failedAt };
  }
  if (seq === known.next) return { kind: 'accept' };
  if (seq < known.next) return { kind: 'forgotten', next: known.next };
  return everyEarlierAcknowledged ? { kind: 'accept' } : { kind: 'outOfOrder', expected: known.next };
}

/** What the leader knows of a writer once it accepted `seq`: that sequence is the newest, and nothing is failed. */
export function afterAccepting(seq: number): Pick<PkWriterKnown, 'next' | 'failedAt'> {
  return { next: seq + 1, failedAt: null };
}

/** The failed sequence after `seq` failed: the lowest failure not accepted again since. */
export function afterFailing(failedAt: number | null, seq: number): number {
  return failedAt === null ? seq : Math.min(failedAt, seq);
}

/**
 * Whether a request of a writer, accepted earlier and waiting to be planned, may still be planned: not once
 * an earlier sequence of its writer has failed (it would overtake that one's retry).
 */
export function mayPlan(seq: number, failedAt: number | null): boolean {
  return failedAt === null || seq <= failedAt;
}
