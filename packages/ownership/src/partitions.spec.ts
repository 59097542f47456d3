import { PARTITION_INSTANT_MAX_MS, emptyView, lakeBucketOf, partitionNameAt, type PartitionSpec, type TableRecord, type View, shardedFrom, tablesInIdOrder } from '@mink/meta';
import { planPartitionActions, planPartitions, type PartitionAction, type PartitionPlan } from './partitions';

const HOUR_MS = 3_600_000;
/** 2026-12-01T17:00:00Z, the start of hour 2026120117 and inside day 20261201. */
const T = Date.UTC(2026, 11, 1, 17);

function tableOf(partition: PartitionSpec | undefined, partitions: string[] = [], id = 1, name = 't'): TableRecord {
  return {
    id,
    name,
    kind: 'log',
    columns: [{ name: 'at', type: 'timestamp' }],
    primaryKey: [],
    bucketKey: [],
    buckets: 2,
    ...(partition ? { partition } : {}),
    properties: {},
    createdAtMs: 0,
    partitions,
  };
}

const hourly = (extra: Partial<PartitionSpec> = {}): PartitionSpec => ({ column: 'at', unit: 'hour', ...extra });
const daily = (extra: Partial<PartitionSpec> = {}): PartitionSpec => ({ column: 'at', unit: 'day', ...extra });

describe('planPartitions creates the current partition and the next precreate, and drops what is older than retain', () => {
  type Case = [description: string, partition: PartitionSpec | undefined, existing: string[], nowMs: number, plan: PartitionPlan];
  const cases: Case[] = [
    // Creation ahead.
    ['a new hourly table: now and the next two (the default)', hourly(), [], T, { create: ['2026120117', '2026120118', '2026120119'], drop: [] }],
    ['a new daily table: today and the next two', daily(), [], T, { create: ['20261201', '20261202', '20261203'], drop: [] }],
    ['precreate 0: only the current one', hourly({ precreate: 0 }), [], T, { create: ['2026120117'], drop: [] }],
    ['precreate 1', daily({ precreate: 1 }), [], T, { create: ['20261201', '20261202'], drop: [] }],
    ['only the missing ones, in time order', hourly(), ['2026120118'], T, { create: ['2026120117', '2026120119'], drop: [] }],
    ['nothing when all exist', hourly(), ['2026120117', '2026120118', '2026120119'], T + 59 * 60_000, { create: [], drop: [] }],
    ['the last millisecond of an hour still plans from that hour', hourly({ precreate: 0 }), [], T + HOUR_MS - 1, { create: ['2026120117'], drop: [] }],
    ['the first millisecond of the next hour moves on', hourly({ precreate: 0 }), ['2026120117'], T + HOUR_MS, { create: ['2026120118'], drop: [] }],
    ['across midnight and the end of a month', hourly(), [], Date.UTC(2026, 10, 30, 23, 30), { create: ['2026113023', '2026120100', '2026120101'], drop: [] }],
    ['across the end of a year, by day', daily(), [], Date.UTC(2026, 11, 31, 5), { create: ['20261231', '20270101', '20270102'], drop: [] }],
    ['across a leap day', daily({ precreate: 1 }), [], Date.UTC(2028, 1, 28), { create: ['20280228', '20280229'], drop: [] }],
    ['never past the last day a name can carry', daily(), [], Date.UTC(9999, 11, 31, 12), { create: ['99991231'], drop: [] }],
    ['never past the last hour a name can carry', hourly({ precreate: 5 }), [], Date.UTC(9999, 11, 31, 22), { create: ['9999123122', '9999123123'], drop: [] }],

    // Retention.
    ['without retain nothing is dropped, however old', hourly({ precreate: 0 }), ['2020010100', '2026120117'], T, { create: [], drop: [] }],
    ['retain 1 keeps only the current hour', hourly({ retain: 1, precreate: 0 }), ['2026120115', '2026120116', '2026120117'], T, { create: [], drop: ['2026120115', '2026120116'] }],
    ['retain 2 keeps the current hour and the one before', hourly({ retain: 2, precreate: 0 }), ['2026120115', '2026120116', '2026120117'], T, { create: [], drop: ['2026120115'] }],
    ['retain 3 keeps all three', hourly({ retain: 3, precreate: 0 }), ['2026120115', '2026120116', '2026120117'], T, { create: [], drop: [] }],
    ['the boundary: the kept range starts exactly at the start of an hour', hourly({ retain: 2, precreate: 0 }), ['2026120116', '2026120117'], T + HOUR_MS - 1, { create: [], drop: [] }],
    ['one millisecond later that hour is out', hourly({ retain: 2, precreate: 0 }), ['2026120116', '2026120117'], T + HOUR_MS, { create: ['2026120118'], drop: ['2026120116'] }],
    ['retain by day', daily({ retain: 7, precreate: 0 }), ['20261124', '20261125', '20261126', '20261201'], T, { create: [], drop: ['20261124'] }],
    ['future partitions are kept, whatever retain says', hourly({ retain: 1, precreate: 0 }), ['2026120117', '2026120120', '2026120203'], T, { create: [], drop: [] }],
    ['partitions created ahead are kept when the clock went back', daily({ retain: 1, precreate: 0 }), ['20261205', '20261206'], T, { create: ['20261201'], drop: [] }],
    ['drops come oldest first whatever the creation order', hourly({ retain: 1, precreate: 0 }), ['2026120117', '2026120110', '2026113023', '2026120112'], T, { create: [], drop: ['2026113023', '2026120110', '2026120112'] }],
    ['creates and drops together', hourly({ retain: 2, precreate: 1 }), ['2026120114', '2026120115', '2026120116'], T, { create: ['2026120117', '2026120118'], drop: ['2026120114', '2026120115'] }],

    // Names that are not names of the unit, and tables that are not partitioned.
    ['names that do not parse are left alone', hourly({ retain: 1, precreate: 0 }), ['p1', '20200101', '2020010100', '2026130101'], T, { create: ['2026120117'], drop: ['2020010100'] }],
    ['an hour name in a daily table is left alone', daily({ retain: 1, precreate: 0 }), ['2020010100', '20200101'], T, { create: ['20261201'], drop: ['20200101'] }],
    ['an unpartitioned table needs nothing', undefined, [], T, { create: [], drop: [] }],
  ];

  it.each(cases)('%s', (_description, partition, existing, nowMs, plan) => {
    expect(planPartitions(tableOf(partition, existing), nowMs)).toEqual(plan);
  });

  it('never plans to drop a partition it plans to create, for any retain and precreate', () => {
    // Proves the two halves cannot fight: created partitions start at now's partition, dropped ones end at or before it.
    for (const unit of ['hour', 'day'] as const) {
      for (let retain = 1; retain <= 4; retain++) {
        for (let precreate = 0; precreate <= 3; precreate++) {
          const table = tableOf({ column: 'at', unit, retain, precreate }, []);
          const created = planPartitions(table, T).create;
          const replanned = planPartitions(tableOf(table.partition, created), T);
          expect(replanned).toEqual({ create: [], drop: [] });
        }
      }
    }
  });

  it.each<[string, number]>([
    ['before 1970', -1],
    ['after 9999', PARTITION_INSTANT_MAX_MS + 1],
    ['not a whole number', 1.5],
    ['NaN', Number.NaN],
  ])('throws for a clock %s, a broken invariant of its caller', (_description, nowMs) => {
    expect(() => planPartitions(tableOf(hourly()), nowMs)).toThrow('invariant broken');
  });
});

describe('planPartitionActions plans every partitioned table of a view, bounded per round', () => {
  function viewOf(tables: TableRecord[]): View {
    return { ...emptyView(), tables: shardedFrom(Object.fromEntries(tables.map((table) => [table.name, table]))) };
  }

  const create = (table: string, tableId: number, partition: string): PartitionAction => ({ action: 'create', table, tableId, partition });
  const drop = (table: string, tableId: number, partition: string): PartitionAction => ({ action: 'drop', table, tableId, partition });

  /** Table names sort against their ids, so an order by name or by insertion would show. */
  const view = viewOf([
    tableOf(hourly({ retain: 1, precreate: 1 }), ['2026120115', '2026120117'], 3, 'a-hourly'),
    tableOf(undefined, [], 1, 'b-plain'),
    tableOf(daily({ retain: 1, precreate: 1 }), ['20261129', '20261130'], 2, 'c-daily'),
    tableOf(hourly({ precreate: 0 }), [], 4, 'd-hourly'),
  ]);

  it('puts creates before drops, each by start time then table id', () => {
    // Proves the current partitions of all tables come first, and the order is a function of the view alone.
    expect(planPartitionActions(view, T, 100)).toEqual([
      create('c-daily', 2, '20261201'),
      create('d-hourly', 4, '2026120117'),
      create('a-hourly', 3, '2026120118'),
      create('c-daily', 2, '20261202'),
      drop('c-daily', 2, '20261129'),
      drop('c-daily', 2, '20261130'),
      drop('a-hourly', 3, '2026120115'),
    ]);
  });

  it('gives the same plan whatever order the tables were added to the view in', () => {
    const reversed = viewOf(tablesInIdOrder(view).reverse());
    expect(planPartitionActions(reversed, T, 100)).toEqual(planPartitionActions(view, T, 100));
  });

  it.each([0, 1, 3, 7])('proposes at most %d actions, the first of the full plan', (actionsMax) => {
    // Proves the per-round bound cuts the plan without reordering it; the next round plans the rest again.
    expect(planPartitionActions(view, T, actionsMax)).toEqual(planPartitionActions(view, T, 100).slice(0, actionsMax));
  });

  it('plans nothing for a view without partitioned tables', () => {
    expect(planPartitionActions(viewOf([tableOf(undefined)]), T, 10)).toEqual([]);
    expect(planPartitionActions(emptyView(), T, 10)).toEqual([]);
  });

  it.each([-1, 1.5, Number.POSITIVE_INFINITY])('throws for a bound of %p actions', (actionsMax) => {
    expect(() => planPartitionActions(view, T, actionsMax)).toThrow('invariant broken');
  });

  it('names partitions as the write routing does: the partition a row at now lands in is created first', () => {
    // Proves the planner and partitionNameAt agree, so a row written now never finds its partition missing.
    const [first] = planPartitionActions(viewOf([tableOf(hourly())]), T + 30 * 60_000, 1);
    expect(first?.partition).toBe(partitionNameAt('hour', T + 30 * 60_000));
  });
});

describe('planPartitions and the lake', () => {
  it('does not create again a dropped partition the lake holds records of, but creates one it holds nothing of', () => {
    const spec = hourly({ precreate: 1 });
    const withLake = (offsets: Record<string, number>): TableRecord => ({
      ...tableOf(spec, [partitionNameAt('hour', T + HOUR_MS)]),
      properties: { 'table.datalake.enabled': 'true' },
      lake: { metadataKey: 'm', snapshotId: '1', offsets, tieringEpoch: 1, round: null, tieredAtMs: 1 },
    });
    const current = partitionNameAt('hour', T);
    const tiered = String(lakeBucketOf(tableOf(spec), current, 1));
    expect(planPartitions(withLake({ [tiered]: 5 }), T)).toEqual({ create: [], drop: [] });
    expect(planPartitions(withLake({ [tiered]: 0 }), T)).toEqual({ create: [current], drop: [] });
    expect(planPartitions(withLake({}), T)).toEqual({ create: [current], drop: [] });
  });
});
