import type { CoordinatedGroup } from '@mink/protocol';

/**
 * A consumer group's lag per partition, as GET /v1/kafka/groups answers it: for each committed offset the
 * partition's end offset (the high watermark: every record committed to it) and the lag, end − committed
 * (the records the group has still to consume; negative when the committed offset is beyond the end, as
 * after the topic was dropped and created again). A partition whose topic no longer exists has neither.
 * The group's `lag` sums its partitions' known lags.
 */
export interface GroupLag {
  group: string;
  state: string;
  members: number;
  lag: number;
  partitions: PartitionLag[];
}

export interface PartitionLag {
  topic: string;
  partition: number;
  committedOffset: number;
  endOffset: number | null;
  lag: number | null;
}

/**
 * The lag of each group from the committed offsets its coordinator holds and the end offset of each
 * partition (`endOffsetOf`, null for a partition that does not exist): groups by id, partitions by topic
 * and number.
 */
export function groupLagOf(groups: readonly CoordinatedGroup[], endOffsetOf: (topic: string, partition: number) => number | null): GroupLag[] {
  return [...groups]
    .sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0))
    .map((group) => {
      const partitions = [...group.offsets]
        .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
        .map((committed) => {
          const endOffset = endOffsetOf(committed.topic, committed.partition);
          return { topic: committed.topic, partition: committed.partition, committedOffset: committed.offset, endOffset, lag: endOffset === null ? null : endOffset - committed.offset };
        });
      return { group: group.group, state: group.state, members: group.members, lag: partitions.reduce((sum, partition) => sum + (partition.lag ?? 0), 0), partitions };
    });
}
