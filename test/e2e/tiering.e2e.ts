/**
 * Lake tiering on a real local cluster with two tiering workers (docs/architecture.md §9, docs/ownership.md §5 ("Coordinator failover")):
 * a log table with the lake enabled is appended to through the gateway while rounds tier it into its
 * Iceberg table; the worker of a round gets `kill -9` mid-round, and later the coordinator lease holder.
 * Afterwards the lake is read the way an outside engine does, without mink: the metadata object the log
 * names, its manifest list and manifests (Avro), and the Parquet files they list, read by DuckDB. Every
 * appended row is there exactly once, and each bucket's `__offset` runs from 0 to its committed end.
 *
 * A primary-key table is tiered as merged state: puts (whole and partial), updates and deletes go on
 * through the gateway while rounds rewrite each changed bucket's file; afterwards DuckDB reads exactly the
 * table that lookups of every key return, one row per live key at most one file per bucket, each row with
 * the offset of its key's last change in the changelog scanned from offset 0.
 *
 * Lake maintenance: a log table tiered by many small rounds has its small files compacted (each bucket
 * keeps at most LAKE_LIMITS.logCompactionSmallFilesMax), DuckDB still reads every row once, and the
 * objects of the replaced files are deleted from S3 once their snapshots expired and the grace period
 * (shortened for this cluster with MINK_LAKE_ORPHAN_GRACE_MS) passed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalCluster } from '@mink/devcluster';
import { DuckDBInstance } from '@duckdb/node-api';
import { type DataFile, IcebergTable, LAKE_LIMITS, icebergSchemaOf } from '@mink/lake';
import { S3ObjectStore } from '@mink/s3stream';
import { lakeBucketOf, partitionNameAt, partitionStartMs, streamBucketOfLake, type ColumnSpec } from '@mink/meta';
import { SHORT_LEASE_CLUSTER, eventually, http, restartCoordinatorsWithPartitionClock, temporaryDirectory } from './helpers';
import { lakeSelect as selectFromLake } from './lake';

jest.setTimeout(600_000);

const BUCKETS = 3;
const ROWS_PER_APPEND = 50;
/** The tiering workers' orphan grace period in this cluster: short, so a test sees replaced files go. */
const ORPHAN_GRACE_MS = 4_000;

interface LakeDescription {
  metadataKey: string | null;
  snapshotId: string | null;
  offsets: { bucket: number; offset: number }[];
  tieringEpoch: number;
  round: { tieringEpoch: number; worker: string } | null;
}

describe('tiering into the Iceberg lake on a real local cluster', () => {
  const directory = temporaryDirectory('tiering');
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER, tieringWorkers: 2, env: { MINK_LAKE_ORPHAN_GRACE_MS: String(ORPHAN_GRACE_MS) } });
  });

  afterAll(async () => {
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  /** DuckDB's rows of `select` over the live data files of `table`'s lake at `metadataKey` (see lake.ts). */
  function lakeSelect(table: string, columns: ColumnSpec[], primaryKey: string[], metadataKey: string | null, select: string): Promise<{ rows: Record<string, unknown>[]; files: DataFile[] }> {
    return selectFromLake(cluster.s3Endpoint, table, columns, primaryKey, metadataKey, select);
  }

  async function lakeOf(table: string): Promise<{ lake: LakeDescription | undefined; ends: number[] }> {
    const described = await http(cluster.gatewayUrl, 'GET', `/v1/tables/${table}`);
    expect(described.status).toBe(200);
    return { lake: described.body.lake, ends: described.body.bucketLeaders.map((bucket: { stream: { endOffset: number } }) => bucket.stream.endOffset) };
  }

  it('tiers every appended row exactly once through kill -9 of a worker mid-round and of the coordinator lease holder', async () => {
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'clicks',
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'page', type: 'string' },
      ],
      buckets: BUCKETS,
      properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s' },
    });
    expect(created.status).toBe(201);

    // Appends go on in the background for the whole test.
    let appending = true;
    let appended = 0;
    const load = (async () => {
      while (appending) {
        const rows = Array.from({ length: ROWS_PER_APPEND }, (_, index) => ({ id: appended + index, page: `/page/${(appended + index) % 97}` }));
        const result = await http(cluster.gatewayUrl, 'POST', '/v1/tables/clicks/append', { rows });
        if (result.status === 200) appended += ROWS_PER_APPEND;
      }
    })();

    // A round in progress: kill its worker.
    const round = await eventually('a tiering round in progress', async () => {
      const { lake } = await lakeOf('clicks');
      return lake?.round ?? undefined;
    }, { timeoutMs: 60_000, intervalMs: 50 });
    const workerId = round.worker;
    expect(['tiering-1', 'tiering-2']).toContain(workerId);
    cluster.kill('tiering-worker', workerId, 'SIGKILL');
    // The round goes to the other worker under a newer tiering epoch and commits.
    await eventually('a round committed after the kill', async () => {
      const { lake } = await lakeOf('clicks');
      return lake && lake.snapshotId !== null && lake.tieringEpoch > round.tieringEpoch && lake.round === null ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 200 });

    // Now the coordinator lease holder.
    const status = await http(cluster.gatewayUrl, 'GET', '/v1/cluster');
    const holder = status.body.coordinator.node as string;
    const tieredBefore = (await lakeOf('clicks')).lake!.tieringEpoch;
    cluster.kill('coordinator', holder, 'SIGKILL');
    await eventually('rounds committed under the new coordinator', async () => {
      const { lake } = await lakeOf('clicks');
      return lake && lake.tieringEpoch >= tieredBefore + 2 && lake.round === null ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 200 });

    appending = false;
    await load;
    // Everything committed ends up in the lake.
    const settled = await eventually('the lake caught up with every bucket', async () => {
      const { lake, ends } = await lakeOf('clicks');
      return lake && lake.offsets.every(({ bucket, offset }) => offset === ends[bucket]) ? { lake, ends } : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    expect(settled.ends.reduce((sum, end) => sum + end, 0)).toBe(appended);

    // Read the lake as an outside engine would: metadata → manifest list → manifests → Parquet.
    const store = new S3ObjectStore({ endpoint: cluster.s3Endpoint, bucket: 'mink', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    const columns = [
      { name: 'id', type: 'int64' as const },
      { name: 'page', type: 'string' as const },
    ];
    const table = new IcebergTable({ store, tableName: 'clicks', storeUri: 's3://mink', schema: icebergSchemaOf(columns) });
    await table.load(settled.lake.metadataKey);
    const files = await table.dataFiles();
    expect(files.length).toBeGreaterThan(0);
    const local = mkdtempSync(join(tmpdir(), 'mink-lake-'));
    try {
      const paths: string[] = [];
      for (const [index, file] of files.entries()) {
        const key = file.path.replace(/^s3:\/\/mink\//, '');
        const path = join(local, `${index}.parquet`);
        writeFileSync(path, await store.get(key));
        paths.push(path);
      }
      const duck = await DuckDBInstance.create(':memory:');
      const connection = await duck.connect();
      const list = paths.map((path) => `'${path}'`).join(', ');
      const reader = await connection.runAndReadAll(`SELECT id, page, __bucket, __offset FROM read_parquet([${list}], hive_partitioning = false) ORDER BY __bucket, __offset`);
      const rows = reader.getRowObjects() as Array<{ id: bigint; page: string; __bucket: number; __offset: bigint }>;
      // Exactly once: every appended id, none twice.
      const ids = rows.map((row) => Number(row.id)).sort((a, b) => a - b);
      expect(ids).toEqual(Array.from({ length: appended }, (_, index) => index));
      for (const row of rows) expect(row.page).toBe(`/page/${Number(row.id) % 97}`);
      // No gap, no overlap: each bucket's offsets run from 0 to its committed end.
      for (let bucket = 0; bucket < BUCKETS; bucket++) {
        const offsets = rows.filter((row) => row.__bucket === bucket).map((row) => Number(row.__offset));
        expect(offsets).toEqual(Array.from({ length: settled.ends[bucket]! }, (_, index) => index));
      }
      connection.closeSync();
    } finally {
      rmSync(local, { recursive: true, force: true });
    }
  });

  it('tiers a primary-key table as merged state: puts, partial puts, updates and deletes while rounds run; the lake equals the lookups of every key', async () => {
    const table = 'balances';
    const keys = 400;
    const columns: ColumnSpec[] = [
      { name: 'id', type: 'int64' },
      { name: 'owner', type: 'string' },
      { name: 'amount', type: 'int64' },
      { name: 'note', type: 'string' },
    ];
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: table,
      columns,
      primaryKey: ['id'],
      buckets: BUCKETS,
      properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s' },
    });
    expect(created.status).toBe(201);

    // A seeded history over a small key space, so keys are updated, deleted and put again many times.
    let seed = 20_261_201;
    const next = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const randomKey = (): number => Math.floor(next() * keys);
    let writing = true;
    let writes = 0;
    const post = async (path: string, body: unknown): Promise<void> => {
      for (let attempt = 0; ; attempt++) {
        const response = await http(cluster.gatewayUrl, 'POST', path, body);
        if (response.status === 200) return;
        if ((response.status !== 503 && response.status !== 504) || attempt > 100) throw new Error(`${path}: ${response.status} ${JSON.stringify(response.body)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const load = (async () => {
      while (writing) {
        const choice = next();
        if (choice < 0.5) {
          const rows = Array.from({ length: 25 }, () => {
            const id = randomKey();
            return { id, owner: `owner-${id % 7}`, amount: String(BigInt(writes) * 1_000_000_007n + BigInt(id)), note: next() < 0.3 ? null : `w${writes}` };
          });
          await post(`/v1/tables/${table}/put`, { rows });
        } else if (choice < 0.75) {
          const rows = Array.from({ length: 10 }, () => ({ id: randomKey(), amount: String(-writes) }));
          await post(`/v1/tables/${table}/put`, { rows, columns: ['id', 'amount'] });
        } else {
          await post(`/v1/tables/${table}/delete`, { keys: Array.from({ length: 15 }, () => ({ id: randomKey() })) });
        }
        writes++;
      }
    })();

    // Rounds commit while the writes go on: the lake is rewritten bucket by bucket several times.
    const before = (await lakeOf(table)).lake?.tieringEpoch ?? 0;
    await eventually('three rounds of the primary-key table committed while it is written', async () => {
      const { lake } = await lakeOf(table);
      return lake && lake.tieringEpoch >= before + 3 && lake.snapshotId !== null ? true : undefined;
    }, { timeoutMs: 180_000, intervalMs: 200 });
    writing = false;
    await load;
    expect(writes).toBeGreaterThan(20);
    const settled = await eventually('the lake caught up with every bucket of the primary-key table', async () => {
      const { lake, ends } = await lakeOf(table);
      return lake && lake.round === null && lake.offsets.every(({ bucket, offset }) => offset === ends[bucket]) ? { lake, ends } : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500 });

    // The final state as lookups serve it.
    const lookup = await http(cluster.gatewayUrl, 'POST', `/v1/tables/${table}/lookup`, { keys: Array.from({ length: keys }, (_, id) => ({ id })) });
    expect(lookup.status).toBe(200);
    const live = new Map<string, Record<string, unknown>>();
    for (const row of lookup.body.rows as (Record<string, unknown> | null)[]) if (row !== null) live.set(String(row.id), row);
    expect(live.size).toBeGreaterThan(0);
    expect(live.size).toBeLessThan(keys);

    // The offset of each live key's last change, from the changelog scanned from offset 0.
    const lastChange = new Map<string, { bucket: number; offset: number }>();
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      for (let offset = 0; offset < settled.ends[bucket]!; ) {
        const page = await http(cluster.gatewayUrl, 'GET', `/v1/tables/${table}/scan?bucket=${bucket}&offset=${offset}&limit=100000`);
        expect(page.status).toBe(200);
        for (const record of page.body.records as { offset: number; changeType: string; row: { id: string } }[]) {
          if (record.changeType === '+I' || record.changeType === '+U') {
            lastChange.set(record.row.id, { bucket, offset: record.offset });
          } else if (record.changeType === '-D') lastChange.delete(record.row.id);
        }
        expect(page.body.nextOffset).toBeGreaterThan(offset);
        offset = page.body.nextOffset;
      }
    }
    expect([...lastChange.keys()].sort()).toEqual([...live.keys()].sort());

    // The lake as an outside engine reads it: exactly the lookups' rows, one per live key, each at its last change.
    const { rows, files } = await lakeSelect(table, columns, ['id'], settled.lake.metadataKey, 'id, owner, amount, note, __bucket, __offset');
    expect(new Set(files.map((file) => file.bucket)).size).toBe(files.length);
    expect(rows).toHaveLength(live.size);
    expect(new Set(rows.map((row) => String(row.id))).size).toBe(rows.length);
    for (const row of rows) {
      const id = String(row.id);
      expect({ id, owner: row.owner, amount: String(row.amount), note: row.note }).toEqual(live.get(id));
      expect({ bucket: row.__bucket, offset: Number(row.__offset) }).toEqual(lastChange.get(id));
    }
  });

  it('compacts a log table\'s small files as rounds go on, DuckDB reading every row once, and deletes the replaced objects after the grace', async () => {
    const table = 'compacted';
    const columns: ColumnSpec[] = [
      { name: 'id', type: 'int64' },
      { name: 'page', type: 'string' },
    ];
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: table,
      columns,
      bucketKey: ['id'],
      buckets: 2,
      properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s' },
    });
    expect(created.status).toBe(201);
    const store = new S3ObjectStore({ endpoint: cluster.s3Endpoint, bucket: 'mink', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    const liveFiles = async (metadataKey: string | null): Promise<DataFile[]> => (await lakeSelect(table, columns, [], metadataKey, '__bucket')).files;
    let appended = 0;
    /** Appends a few rows to both buckets and waits for a round to tier them: one small file per bucket and round. */
    const oneRound = async (): Promise<LakeDescription> => {
      const before = (await lakeOf(table)).lake?.tieringEpoch ?? 0;
      const rows = Array.from({ length: 20 }, (_, index) => ({ id: appended + index, page: `/p/${appended + index}` }));
      expect((await http(cluster.gatewayUrl, 'POST', `/v1/tables/${table}/append`, { rows })).status).toBe(200);
      appended += rows.length;
      return eventually('a round tiered the append', async () => {
        const { lake, ends } = await lakeOf(table);
        return lake && lake.tieringEpoch > before && lake.round === null && lake.offsets.every(({ bucket, offset }) => offset === ends[bucket]) ? lake : undefined;
      }, { timeoutMs: 60_000, intervalMs: 100 });
    };

    // Two rounds' files, which compaction replaces once a bucket has more small files than it keeps.
    await oneRound();
    const early = await liveFiles((await oneRound()).metadataKey);
    expect(early.length).toBeGreaterThanOrEqual(2);
    const earlyKeys = early.map((file) => file.path.replace(/^s3:\/\/mink\//, ''));
    const keyExists = async (key: string) => (await store.list(key)).some((object) => object.key === key);

    // Rounds go on until the early files are no longer live (compacted) and then no longer stored: their
    // snapshots expire after snapshotsRetainedMax more rounds, and a sweep deletes them once they are old.
    let rounds = 2;
    let compactedAfter: number | null = null;
    for (;;) {
      const lake = await oneRound();
      rounds++;
      const live = new Set((await liveFiles(lake.metadataKey)).map((file) => file.path));
      for (let bucket = 0; bucket < 2; bucket++) {
        expect([...live].filter((path) => path.includes(`/__bucket=${bucket}/`)).length).toBeLessThanOrEqual(LAKE_LIMITS.logCompactionSmallFilesMax);
      }
      if (compactedAfter === null && early.every((file) => !live.has(file.path))) compactedAfter = rounds;
      if (compactedAfter !== null && !(await Promise.all(earlyKeys.map(keyExists))).some(Boolean)) break;
      expect(rounds).toBeLessThan(LAKE_LIMITS.logCompactionSmallFilesMax + LAKE_LIMITS.snapshotsRetainedMax + 12);
    }
    // Compaction came when a bucket's small files first outnumbered what it keeps.
    expect(compactedAfter).toBeLessThanOrEqual(LAKE_LIMITS.logCompactionSmallFilesMax + 2);

    // The lake still holds every appended row exactly once, and each bucket's offsets run from 0 without a gap.
    const { lake: settled, ends } = await lakeOf(table);
    const { rows, files } = await lakeSelect(table, columns, [], settled!.metadataKey, 'id, page, __bucket, __offset');
    expect(rows.map((row) => Number(row.id)).sort((left, right) => left - right)).toEqual(Array.from({ length: appended }, (_, index) => index));
    for (const row of rows) expect(row.page).toBe(`/p/${row.id}`);
    for (let bucket = 0; bucket < 2; bucket++) {
      expect(rows.filter((row) => row.__bucket === bucket).map((row) => Number(row.__offset))).toEqual(Array.from({ length: ends[bucket]! }, (_, index) => index));
    }
    // Far fewer files than rounds, and every file a kept metadata names is still there.
    expect(files.length).toBeLessThan(2 * rounds);
    for (const file of files) expect(await keyExists(file.path.replace(/^s3:\/\/mink\//, ''))).toBe(true);
    // Metadata files: the kept versions and the young ones only.
    const metadataObjects = (await store.list(`lake/${table}/metadata/`)).filter((object) => object.key.endsWith('.metadata.json'));
    expect(metadataObjects.length).toBeLessThanOrEqual(LAKE_LIMITS.snapshotsRetainedMax + 4);
  });

  it('serves a scan below a trimmed stream\'s start from the lake, then from the stream, with the same records', async () => {
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'history',
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'at', type: 'timestamp' },
        { name: 'note', type: 'string' },
      ],
      buckets: 1,
      properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s', 'table.log.ttl': '2s' },
    });
    expect(created.status).toBe(201);
    const rowOf = (id: number) => ({ id, at: 1_700_000_000_000 + id, note: id % 7 === 0 ? null : `note ${id}` });
    for (let batch = 0; batch < 10; batch++) {
      expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/history/append', { rows: Array.from({ length: 30 }, (_, index) => rowOf(batch * 30 + index)) })).status).toBe(200);
    }
    const scanFrom = async (offset: number) => {
      const reply = await http(cluster.gatewayUrl, 'GET', `/v1/tables/history/scan?bucket=0&offset=${offset}&limit=1000`);
      expect(reply.status).toBe(200);
      return reply.body.records as Array<{ offset: string | number; timestamp: string | number; row: { id: string; at: string | number; note: string | null } }>;
    };
    const before = await scanFrom(0);
    expect(before).toHaveLength(300);
    // Tiered, then trimmed: the stream starts above 0 while the lake holds everything below.
    await eventually('the stream trimmed above 0 with the lake holding it', async () => {
      const described = await http(cluster.gatewayUrl, 'GET', '/v1/tables/history');
      const stream = described.body.bucketLeaders[0].stream;
      return stream.startOffset > 0 && described.body.lake?.offsets[0].offset >= stream.startOffset ? true : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });
    // One more append lands in the stream only; a scan from 0 reads the lake, then the stream.
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables/history/append', { rows: [rowOf(300)] })).status).toBe(200);
    const after = await scanFrom(0);
    expect(after.map((record) => Number(record.offset))).toEqual(Array.from({ length: 301 }, (_, index) => index));
    expect(after.map((record) => record.row)).toEqual(Array.from({ length: 301 }, (_, index) => ({ id: String(index), at: rowOf(index).at, note: rowOf(index).note })));
    // The lake keeps each record's append time.
    expect(after.slice(0, 300).map((record) => record.timestamp)).toEqual(before.map((record) => record.timestamp));
    // A scan starting inside the lake's range starts there.
    expect((await scanFrom(123)).map((record) => Number(record.offset))[0]).toBe(123);
  });

  it('tiers a partitioned table by partition bucket, keeps a dropped partition\'s rows in the lake and never creates that partition again', async () => {
    const HOUR_MS = 3_600_000;
    const columns: ColumnSpec[] = [
      { name: 'id', type: 'int64' },
      { name: 'at', type: 'timestamp' },
    ];
    const created = await http(cluster.gatewayUrl, 'POST', '/v1/tables', {
      name: 'hits',
      columns,
      buckets: 2,
      partition: { column: 'at', unit: 'hour', retain: 1, precreate: 1 },
      properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s' },
    });
    expect(created.status).toBe(201);
    const partitions = [...(created.body.partitions as string[])].sort();
    expect(partitions.length).toBeGreaterThanOrEqual(2);
    const starts = partitions.slice(0, 2).map((name) => partitionStartMs('hour', name)!);
    // 100 rows in each of two hours, appended while the buckets open (the client retries while they do).
    const rows = [0, 1].flatMap((hour) => Array.from({ length: 100 }, (_, index) => ({ id: hour * 1_000 + index, at: starts[hour]! + index * 1_000 })));
    await eventually('the rows appended', async () => ((await http(cluster.gatewayUrl, 'POST', '/v1/tables/hits/append', { rows })).status === 200 ? true : undefined), { timeoutMs: 60_000, intervalMs: 500 });

    const tiered = await eventually('the lake holding all 200 rows', async () => {
      const { lake } = await lakeOf('hits');
      const total = (lake?.offsets ?? []).reduce((sum, entry) => sum + entry.offset, 0);
      return lake && lake.round === null && total === 200 ? lake : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    const table = { buckets: 2, partition: { column: 'at', unit: 'hour' as const } };
    const lakeRows = async (metadataKey: string | null) => (await lakeSelect('hits', columns, [], metadataKey, 'id, epoch_ms("at") AS at_ms, __bucket, __offset')).rows;
    const first = await lakeRows(tiered.metadataKey);
    expect(first.map((row) => Number(row.id)).sort((a, b) => a - b)).toEqual(rows.map((row) => row.id).sort((a, b) => a - b));
    // Each row is in a lake bucket of its own hour's partition: hours since the epoch × 2 + bucket.
    for (const row of first) {
      const atMs = Number(row.at_ms);
      const { partition } = streamBucketOfLake(table, Number(row.__bucket))!;
      expect([row.id, partition]).toEqual([row.id, partitionNameAt('hour', atMs)]);
      expect(lakeBucketOf(table, partition, Number(row.__bucket) % 2)).toBe(Number(row.__bucket));
    }

    // Two hours on: both hours are dropped (retain 1), and the lake keeps their rows.
    const restartCoordinators = (offsetMs: number) => restartCoordinatorsWithPartitionClock(cluster, offsetMs);
    await restartCoordinators(starts[1]! + HOUR_MS + HOUR_MS / 2 - Date.now());
    await eventually('the first two hours dropped', async () => {
      const described = await http(cluster.gatewayUrl, 'GET', '/v1/tables/hits');
      const names = described.body.partitions as string[];
      return !names.includes(partitions[0]!) && !names.includes(partitions[1]!) ? names : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250 });
    const { lake: afterDrop } = await lakeOf('hits');
    expect((await lakeRows(afterDrop!.metadataKey)).map((row) => Number(row.id)).sort((a, b) => a - b)).toEqual(rows.map((row) => row.id).sort((a, b) => a - b));

    // Back in the first hour: the lake holds it, so it is not created again (a create answers after a round of the loop).
    await restartCoordinators(starts[0]! + HOUR_MS / 2 - Date.now());
    const probe = await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: 'hits_probe', columns, buckets: 1, partition: { column: 'at', unit: 'hour' } });
    expect(probe.status).toBe(201);
    const again = await http(cluster.gatewayUrl, 'GET', '/v1/tables/hits');
    expect(again.body.partitions).not.toContain(partitions[0]);
    expect(again.body.partitions).not.toContain(partitions[1]);
    const refused = await http(cluster.gatewayUrl, 'POST', '/v1/tables/hits/append', { rows: [{ id: 9_999, at: starts[0]! }] });
    expect(refused.status).toBe(400);
    await restartCoordinators(0);
  });
});
