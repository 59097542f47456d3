/**
 * Idempotent Kafka producers in mink's writer state (docs/architecture.md §8.4). A producer's batches on a partition are
 * remembered in the stream's committed writer state like any idempotent writer's, under a writer id naming
 * the producer id and epoch; a batch is known by the last sequence it covers (its base sequence plus its
 * record count minus one), so a retried batch is answered with its original offset by whichever node leads
 * the partition then.
 */

const WRITER_ID_PREFIX = 'kafka:';

/** The writer id of a producer id at one epoch. */
export function producerWriterId(producerId: number, producerEpoch: number): string {
  return `${WRITER_ID_PREFIX}${producerId}:${producerEpoch}`;
}

/**
 * The newest epoch of every producer among a stream's writer ids, by producer id (a producer with none
 * is absent): only ids that `producerWriterId` writes count, ids with an epoch that is not a safe integer
 * are skipped. Read once per set of ids, it answers every producer without a scan (a stream may remember
 * `writersPerStreamMax` writers).
 */
export function producerEpochsOf(writerIds: Iterable<string>): Map<number, number> {
  const newest = new Map<number, number>();
  for (const id of writerIds) {
    if (!id.startsWith(WRITER_ID_PREFIX)) continue;
    const separator = id.indexOf(':', WRITER_ID_PREFIX.length);
    if (separator < 0) continue;
    const producerText = id.slice(WRITER_ID_PREFIX.length, separator);
    const producerId = Number(producerText);
    // Only the text `producerWriterId` writes for that number names it (not `07`, nor `1e1` for 10).
    if (String(producerId) !== producerText) continue;
    const epoch = Number(id.slice(separator + 1));
    if (Number.isSafeInteger(epoch) && epoch > (newest.get(producerId) ?? -1)) newest.set(producerId, epoch);
  }
  return newest;
}

/** The sequences a batch of `recordCount` records from `baseSequence` covers: first and last. */
export function batchSequences(baseSequence: number, recordCount: number): { firstSeq: number; seq: number } {
  return { firstSeq: baseSequence, seq: baseSequence + recordCount - 1 };
}
