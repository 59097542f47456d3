import type { CoordinatedGroup } from '@mink/protocol';
import { groupLagOf } from './group-lag';

/**
 * The lag GET /v1/kafka/groups reports: end offset − committed offset per partition, summed per group;
 * null for a partition whose topic is gone; negative when the commit is beyond the end; groups and
 * partitions in a stable order whatever order the coordinators answered in.
 */

const END_OFFSETS: Record<string, number[]> = { orders: [10, 10, 10], clicks: [5] };
const endOffsetOf = (topic: string, partition: number) => END_OFFSETS[topic]?.[partition] ?? null;

function group(name: string, offsets: [string, number, number][], state = 'Empty', members = 0): CoordinatedGroup {
  return { group: name, state, members, offsets: offsets.map(([topic, partition, offset]) => ({ topic, partition, offset })) };
}

describe('groupLagOf', () => {
  it.each<[string, CoordinatedGroup[], object[]]>([
    ['no groups', [], []],
    ['a group without commits yet', [group('g', [], 'Stable', 2)], [{ group: 'g', state: 'Stable', members: 2, lag: 0, partitions: [] }]],
    [
      'lag per partition and its sum',
      [group('g', [['orders', 0, 3], ['orders', 1, 10], ['orders', 2, 0]])],
      [
        {
          group: 'g',
          state: 'Empty',
          members: 0,
          lag: 17,
          partitions: [
            { topic: 'orders', partition: 0, committedOffset: 3, endOffset: 10, lag: 7 },
            { topic: 'orders', partition: 1, committedOffset: 10, endOffset: 10, lag: 0 },
            { topic: 'orders', partition: 2, committedOffset: 0, endOffset: 10, lag: 10 },
          ],
        },
      ],
    ],
    [
      'a dropped topic has no end and no lag; a partition beyond the topic neither',
      [group('g', [['gone', 0, 4], ['clicks', 1, 0]])],
      [
        {
          group: 'g',
          state: 'Empty',
          members: 0,
          lag: 0,
          partitions: [
            { topic: 'clicks', partition: 1, committedOffset: 0, endOffset: null, lag: null },
            { topic: 'gone', partition: 0, committedOffset: 4, endOffset: null, lag: null },
          ],
        },
      ],
    ],
    ['a commit beyond the end (the topic was created again) lags negatively', [group('g', [['clicks', 0, 9]])], [{ group: 'g', state: 'Empty', members: 0, lag: -4, partitions: [{ topic: 'clicks', partition: 0, committedOffset: 9, endOffset: 5, lag: -4 }] }]],
    [
      'groups by id and partitions by topic and number, whatever order they came in',
      [group('b', [['orders', 2, 10], ['clicks', 0, 5], ['orders', 0, 10]]), group('a', [['orders', 1, 9]], 'Stable', 1)],
      [
        { group: 'a', state: 'Stable', members: 1, lag: 1, partitions: [{ topic: 'orders', partition: 1, committedOffset: 9, endOffset: 10, lag: 1 }] },
        {
          group: 'b',
          state: 'Empty',
          members: 0,
          lag: 0,
          partitions: [
            { topic: 'clicks', partition: 0, committedOffset: 5, endOffset: 5, lag: 0 },
            { topic: 'orders', partition: 0, committedOffset: 10, endOffset: 10, lag: 0 },
            { topic: 'orders', partition: 2, committedOffset: 10, endOffset: 10, lag: 0 },
          ],
        },
      ],
    ],
  ])('%s', (_name, groups, expected) => {
    expect(groupLagOf(groups, endOffsetOf)).toEqual(expected);
  });
});
