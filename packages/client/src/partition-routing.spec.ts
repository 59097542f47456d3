import { partitionNameAt, partitionStartMs } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import { bucketOfRow } from '@mink/records';

import { indexesByBucket, indexesByTarget, missingPartitionError, missingPartitions, partitionsOfItems, scanPartitionOf, targetKeyOf, type Partitioning } from './partition-routing';

/** The pure routing of items to the partitions and buckets of a table, case by case, bad input included. */

const CLICKS: Partitioning = {
  table: 'clicks',
  columns: [
    { name: 'ts', type: 'timestamp' },
    { name: 'user', type: 'string' },
  ],
  partition: { column: 'ts', unit: 'hour' },
};
const DAYS: Partitioning = {
  table: 'visits',
  columns: [
    { name: 'day', type: 'string' },
    { name: 'user', type: 'string' },
  ],
  partition: { column: 'day', unit: 'day' },
};
const UNPARTITIONED: Partitioning = { table: 'plain', columns: CLICKS.columns };
const at = (hour: string, minute = 0) => partitionStartMs('hour', hour)! + minute * 60_000;

describe('partitionsOfItems', () => {
  it.each<[string, Partitioning, Record<string, unknown>[], (string | null)[]]>([
    ['timestamps by the UTC hour that holds them', CLICKS, [{ ts: at('2026120110', 59) }, { ts: at('2026120111') }, { ts: at('2026120110') }], ['2026120110', '2026120111', '2026120110']],
    ['strings that are partition names', DAYS, [{ day: '20261201' }, { day: '20261231' }], ['20261201', '20261231']],
    ['every item of an unpartitioned table to null', UNPARTITIONED, [{ ts: 5 }, {}], [null, null]],
    ['instants either side of a day boundary', { ...CLICKS, partition: { column: 'ts', unit: 'day' } }, [{ ts: 86_399_999 }, { ts: 86_400_000 }, { ts: 0 }], ['19700101', '19700102', '19700101']],
  ])('places %s', (_case, partitioning, items, expected) => {
    expect(partitionsOfItems(partitioning, items, 'row')).toEqual(expected);
  });

  it('names each item\'s partition however many items share one', () => {
    // Proves the naming of each partition once per call gives every item its own instant's partition.
    const instants = Array.from({ length: 200 }, (_, index) => at('2026120110') - 3_600_000 + index * 61_000);
    expect(partitionsOfItems(CLICKS, instants.map((ts) => ({ ts })), 'row')).toEqual(instants.map((ts) => partitionNameAt('hour', ts)));
    expect(() => partitionsOfItems(CLICKS, [{ ts: 0 }, { ts: -1 }], 'row')).toThrow("row 1 of table 'clicks': partition column 'ts' holds -1, outside the years 1970 to 9999");
  });

  it.each<[string, Partitioning, Record<string, unknown>, string]>([
    ['a missing value', CLICKS, { user: 'a' }, "key 1 of table 'clicks': partition column 'ts' must hold a value"],
    ['a null value', CLICKS, { ts: null }, "key 1 of table 'clicks': partition column 'ts' must hold a value"],
    ['a string of another unit', DAYS, { day: '2026120110' }, "key 1 of table 'visits': partition column 'day' holds '2026120110', not a partition name of unit 'day'"],
    ['a date that does not exist', DAYS, { day: '20261332' }, "key 1 of table 'visits': partition column 'day' holds '20261332', not a partition name"],
  ])('refuses %s, naming the item and the reason', (_case, partitioning, bad, message) => {
    const good = partitioning === CLICKS ? { ts: at('2026120110') } : { day: '20261201' };
    expect(() => partitionsOfItems(partitioning, [good, bad], 'key')).toThrow(InvalidArgumentError);
    expect(() => partitionsOfItems(partitioning, [good, bad], 'key')).toThrow(message);
  });
});

describe('indexesByTarget', () => {
  const items = [{ user: 'ann' }, { user: 'bob' }, { user: 'ann' }, { user: 'cy' }];

  it('groups positions by partition, then bucket, each in the order of its first item', () => {
    const partitions = ['b', 'a', 'a', 'b'];
    const grouped = indexesByTarget(items, partitions, { bucketKey: ['user'], buckets: 4 }, 0);
    const expected = new Map<string, { target: { partition: string; bucket: number }; indexes: number[] }>();
    for (const partition of ['b', 'a']) {
      items.forEach((item, index) => {
        if (partitions[index] !== partition) return;
        const target = { partition, bucket: bucketOfRow(item, ['user'], 4) };
        const group = expected.get(targetKeyOf(target));
        if (group) group.indexes.push(index);
        else expected.set(targetKeyOf(target), { target, indexes: [index] });
      });
    }
    expect(grouped).toEqual([...expected.values()]);
    expect(grouped.flatMap((group) => group.indexes).sort()).toEqual([0, 1, 2, 3]);
  });

  it('groups the items of an unpartitioned table by bucket alone', () => {
    expect(indexesByTarget(items, [null, null, null, null], { bucketKey: ['user'], buckets: 1 }, 0)).toEqual([{ target: { partition: null, bucket: 0 }, indexes: [0, 1, 2, 3] }]);
  });

  it('puts every item of a partition of a table without bucket key in the spread bucket, a negative spread too', () => {
    expect(indexesByTarget(items, ['a', 'a', 'b', 'a'], { bucketKey: [], buckets: 3 }, -4)).toEqual([
      { target: { partition: 'a', bucket: 2 }, indexes: [0, 1, 3] },
      { target: { partition: 'b', bucket: 2 }, indexes: [2] },
    ]);
  });

  it('leaves out the items of skipped partitions', () => {
    expect(indexesByTarget(items, ['a', 'gone', 'a', 'gone'], { bucketKey: [], buckets: 1 }, 0, ['gone'])).toEqual([{ target: { partition: 'a', bucket: 0 }, indexes: [0, 2] }]);
  });
});

describe('indexesByBucket', () => {
  it.each([
    ['no rows', [], []],
    ['one bucket', [3, 3, 3], [{ target: { partition: null, bucket: 3 }, indexes: [0, 1, 2] }]],
    [
      'buckets in the order of their first row, rows in increasing order',
      [2, 0, 2, 1, 0],
      [
        { target: { partition: null, bucket: 2 }, indexes: [0, 2] },
        { target: { partition: null, bucket: 0 }, indexes: [1, 4] },
        { target: { partition: null, bucket: 1 }, indexes: [3] },
      ],
    ],
  ])('groups the rows of %s', (_name, rowBuckets, expected) => {
    expect(indexesByBucket(Int32Array.from(rowBuckets))).toEqual(expected);
  });
});

describe('missingPartitions and missingPartitionError', () => {
  it('lists the wanted partitions a table does not have, never null', () => {
    expect(missingPartitions([null, 'a', 'c', 'b', 'c'], ['a', 'b'])).toEqual(['c', 'c']);
    expect(missingPartitions(new Set([null, 'a']), [])).toEqual(['a']);
  });

  it.each<[string[], string]>([
    [[], 'it has no partitions yet'],
    [['20261201'], "its partition is '20261201'"],
    [['20261201', '20261202'], "its partitions are '20261201', '20261202'"],
    [Array.from({ length: 7 }, (_, index) => `2026120${index + 1}`), "its newest 5 of 7 partitions are '20261203', '20261204', '20261205', '20261206', '20261207'"],
  ])('names the table, the partition, the item and the partitions there are (%j)', (existing, has) => {
    const error = missingPartitionError('visits', '20261209', existing, { what: 'row', index: 3 });
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error.message).toBe(`partition '20261209' of table 'visits' does not exist (row 3 belongs to it; it is not created yet or was dropped): ${has}`);
    expect(missingPartitionError('visits', '20261209', existing).message).toBe(`partition '20261209' of table 'visits' does not exist (it is not created yet or was dropped): ${has}`);
  });
});

describe('scanPartitionOf', () => {
  it.each<[string, Partitioning, unknown, string | null | RegExp]>([
    ['a partition of a partitioned table', CLICKS, '2026120110', '2026120110'],
    ['nothing of an unpartitioned table', UNPARTITIONED, undefined, null],
    ['nothing of a partitioned table', CLICKS, undefined, /^table 'clicks' is partitioned by 'ts': a scan must name a partition$/],
    ['a partition of an unpartitioned table', UNPARTITIONED, '2026120110', /^table 'plain' is not partitioned: a scan of it names no partition, got "2026120110"$/],
    ['a name of another unit', CLICKS, '20261201', /^partition must be a partition name of unit 'hour' \(UTC yyyyMMddHH\) of table 'clicks', got "20261201"$/],
    ['an hour that does not exist', CLICKS, '2026120124', /partition must be a partition name of unit 'hour'/],
    ['a number', DAYS, 20261201, /partition must be a partition name of unit 'day' \(UTC yyyyMMdd\) of table 'visits', got 20261201$/],
  ])('takes or refuses %s', (_case, partitioning, partition, expected) => {
    if (expected instanceof RegExp) expect(() => scanPartitionOf(partitioning, partition)).toThrow(expected);
    else expect(scanPartitionOf(partitioning, partition)).toBe(expected);
  });
});
