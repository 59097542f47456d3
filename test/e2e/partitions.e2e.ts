/**
 * Partitioned tables on a real local cluster (issue 11 item 6, docs/ownership.md §2.1 ("Table or partition created")): the
 * coordinator lease holder creates a table's partitions ahead of time (the current one and the next
 * `precreate`), each with its buckets led and opened like any bucket; writes route by the partition column
 * (rows on both sides of an hour boundary land in their own partitions, a row for a partition that does
 * not exist is a 400 naming it and nothing of its call is written); scans take `partition`; a PK table
 * partitioned by day puts, looks up and deletes by key; when the clock the lease holder plans with moves on,
 * partitions older than `retain` are dropped (their buckets gone, writes to them refused), and a partition
 * dropped and created again gets leader and stream epochs above every epoch it had before.
 *
 * The clock is moved with MINK_PARTITION_CLOCK_OFFSET_MS on a restart of the coordinators (it moves only the
 * clock the partition loop plans with), so the test does not wait for real hours to pass.
 */
import { LocalCluster } from '@mink/devcluster';
import { partitionNameAt, partitionStartMs } from '@mink/meta';
import { SHORT_LEASE_CLUSTER, eventually, http, restartCoordinatorsWithPartitionClock, temporaryDirectory } from './helpers';

jest.setTimeout(300_000);

const HOUR_MS = 3_600_000;

interface ClusterBucket {
  table: string;
  partition?: string;
  bucket: number;
  leader: string | null;
  leaderEpoch: number;
  streamEpoch: number;
  state: string;
}

interface ScanRecord {
  offset: string | number;
  row: Record<string, unknown>;
}

describe('partitioned tables on a real local cluster', () => {
  const directory = temporaryDirectory('partitions');
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
  });

  afterAll(async () => {
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  async function partitionsOf(table: string): Promise<string[]> {
    const described = await http(cluster.gatewayUrl, 'GET', `/v1/tables/${table}`);
    expect(described.status).toBe(200);
    return described.body.partitions as string[];
  }

  async function clusterBuckets(table: string): Promise<ClusterBucket[]> {
    const status = await http<{ buckets: ClusterBucket[] }>(cluster.gatewayUrl, 'GET', '/v1/cluster');
    expect(status.status).toBe(200);
    return status.body.buckets.filter((bucket) => bucket.table === table);
  }

  /** Waits until `table` has exactly `expected` partitions (in any order) and every bucket of them is open. */
  async function waitForPartitions(table: string, expected: (names: string[]) => boolean, what: string): Promise<string[]> {
    return eventually(`${what} of '${table}', every bucket open`, async () => {
      const names = await partitionsOf(table);
      if (!expected(names)) return undefined;
      const buckets = await clusterBuckets(table);
      const open = buckets.filter((bucket) => bucket.state === 'open' && bucket.partition !== undefined && names.includes(bucket.partition));
      return open.length === names.length * 2 && buckets.length === names.length * 2 ? names : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250 });
  }

  /** Every row of one partition, by scanning each of its two buckets from offset 0. */
  async function rowsOf(table: string, partition: string): Promise<Record<string, unknown>[]> {
    const rows: Record<string, unknown>[] = [];
    for (const bucket of [0, 1]) {
      const scanned = await http<{ records: ScanRecord[] }>(cluster.gatewayUrl, 'GET', `/v1/tables/${table}/scan?partition=${partition}&bucket=${bucket}&offset=0&limit=1000`);
      expect(scanned.status).toBe(200);
      rows.push(...scanned.body.records.map((record) => record.row));
    }
    return rows.sort((a, b) => Number(a.id) - Number(b.id));
  }

  const restartCoordinators = (offsetMs: number) => restartCoordinatorsWithPartitionClock(cluster, offsetMs);

  it('creates partitions ahead, routes writes by the partition column, scans by partition, drops past retain and never reuses an epoch', async () => {
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'events',
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'at', type: 'timestamp' },
        { name: 'note', type: 'string' },
      ],
      bucketKey: ['id'],
      buckets: 2,
      partition: { column: 'at', unit: 'hour', retain: 2, precreate: 1 },
    });
    expect(created.status).toBe(201);
    // The current hour and the next one (the test may start just before an hour ends: then three show up for a moment).
    const initial = await waitForPartitions('events', (names) => names.length >= 2, 'the current and the next hour');
    const [first, second] = [...initial].sort();
    const boundary = partitionStartMs('hour', second!)!;
    expect(partitionStartMs('hour', first!)).toBe(boundary - HOUR_MS);

    // Rows on both sides of the hour boundary, in one call: each lands in its own partition.
    const rows = [
      { id: 1, at: boundary - 1, note: 'last millisecond of the first hour' },
      { id: 2, at: boundary, note: 'first millisecond of the next hour' },
      { id: 3, at: boundary - HOUR_MS, note: 'first millisecond of the first hour' },
      { id: 4, at: boundary + 1_000, note: 'a second into the next hour' },
    ];
    const appended = await http(cluster.gatewayUrl, 'POST', '/v1/tables/events/append', { rows });
    expect(appended.status).toBe(200);
    expect(appended.body.appended).toBe(4);
    // A call with a row for an hour that has no partition is refused whole, naming the partition.
    const far = partitionNameAt('hour', boundary + 5 * HOUR_MS);
    const refused = await http(cluster.gatewayUrl, 'POST', '/v1/tables/events/append', { rows: [{ id: 5, at: boundary, note: 'fine' }, { id: 6, at: boundary + 5 * HOUR_MS, note: 'too far' }] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain(far);

    expect((await rowsOf('events', first!)).map((row) => [row.id, row.note])).toEqual([
      ['1', 'last millisecond of the first hour'],
      ['3', 'first millisecond of the first hour'],
    ]);
    expect((await rowsOf('events', second!)).map((row) => [row.id, row.note])).toEqual([
      ['2', 'first millisecond of the next hour'],
      ['4', 'a second into the next hour'],
    ]);
    // A partitioned table is scanned by partition.
    expect((await http(cluster.gatewayUrl, 'GET', '/v1/tables/events/scan?bucket=0')).status).toBe(400);

    const firstBuckets = (await clusterBuckets('events')).filter((bucket) => bucket.partition === first);
    expect(firstBuckets).toHaveLength(2);

    // Two hours later by the lease holder's clock: the next two hours are created, and the first hour,
    // older than the newest 2 up to now, is dropped.
    const later = boundary + HOUR_MS + 1;
    await restartCoordinators(later - Date.now());
    const third = partitionNameAt('hour', later);
    const fourth = partitionNameAt('hour', later + HOUR_MS);
    const moved = await waitForPartitions('events', (names) => !names.includes(first!) && names.includes(third) && names.includes(fourth), 'the first hour dropped and two more created');
    expect([...moved].sort()).toEqual([second, third, fourth]);
    expect((await clusterBuckets('events')).some((bucket) => bucket.partition === first)).toBe(false);
    const gone = await http(cluster.gatewayUrl, 'POST', '/v1/tables/events/append', { rows: [{ id: 7, at: boundary - 1, note: 'dropped hour' }] });
    expect(gone.status).toBe(400);
    expect(gone.body.error.message).toContain(first);
    // What the kept partition holds is untouched.
    expect((await rowsOf('events', second!)).map((row) => row.id)).toEqual(['2', '4']);

    // Back to the first hour: it is created again, with epochs above every epoch its buckets had.
    // The middle of the first hour, so the minutes the test takes from here stay in it.
    await restartCoordinators(boundary - HOUR_MS / 2 - Date.now());
    await waitForPartitions('events', (names) => names.includes(first!), 'the first hour created again');
    const again = (await clusterBuckets('events')).filter((bucket) => bucket.partition === first);
    for (const bucket of again) {
      const before = firstBuckets.find((old) => old.bucket === bucket.bucket)!;
      expect(bucket.leaderEpoch).toBeGreaterThan(before.leaderEpoch);
      expect(bucket.streamEpoch).toBeGreaterThan(before.streamEpoch);
    }
    // The new incarnation starts empty and takes writes.
    expect(await rowsOf('events', first!)).toEqual([]);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/events/append', { rows: [{ id: 8, at: boundary - 1, note: 'again' }] })).status).toBe(200);
    expect((await rowsOf('events', first!)).map((row) => [row.id, row.note])).toEqual([['8', 'again']]);
    await restartCoordinators(0);
  });

  it('puts, looks up and deletes rows of a primary-key table partitioned by a day string', async () => {
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'visits',
      columns: [
        { name: 'day', type: 'string' },
        { name: 'user', type: 'int64' },
        { name: 'pages', type: 'int32' },
      ],
      primaryKey: ['day', 'user'],
      buckets: 2,
      partition: { column: 'day', unit: 'day', precreate: 1 },
    });
    expect(created.status).toBe(201);
    const days = [...(await waitForPartitions('visits', (names) => names.length >= 2, 'today and tomorrow'))].sort();
    const [today, tomorrow] = days as [string, string];
    const put = await http(cluster.gatewayUrl, 'POST', '/v1/tables/visits/put', {
      rows: [
        { day: today, user: 1, pages: 3 },
        { day: tomorrow, user: 1, pages: 5 },
        { day: today, user: 2, pages: 7 },
      ],
    });
    expect(put.status).toBe(200);
    // The same user on two days is two keys, one per partition.
    const keys = [
      { day: today, user: 1 },
      { day: tomorrow, user: 1 },
      { day: today, user: 2 },
    ];
    const looked = await http(cluster.gatewayUrl, 'POST', '/v1/tables/visits/lookup', { keys });
    expect(looked.status).toBe(200);
    expect(looked.body.rows.map((row: { pages: number } | null) => row?.pages ?? null)).toEqual([3, 5, 7]);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/visits/delete', { keys: [{ day: today, user: 1 }] })).status).toBe(200);
    const after = await http(cluster.gatewayUrl, 'POST', '/v1/tables/visits/lookup', { keys });
    expect(after.body.rows.map((row: { pages: number } | null) => row?.pages ?? null)).toEqual([null, 5, 7]);
    // A day string that is not a partition name, and a day without a partition, are 400s naming them.
    const malformed = await http(cluster.gatewayUrl, 'POST', '/v1/tables/visits/put', { rows: [{ day: 'monday', user: 1, pages: 1 }] });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toContain('monday');
    const farDay = partitionNameAt('day', partitionStartMs('day', tomorrow)! + 10 * 86_400_000);
    const missing = await http(cluster.gatewayUrl, 'POST', '/v1/tables/visits/put', { rows: [{ day: farDay, user: 1, pages: 1 }] });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain(farDay);
  });
});
