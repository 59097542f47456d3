/**
 * `mink lake files` and `mink lake query` on a real local cluster (issue 44, "Querying the lake"), run as the
 * real binary: a log table and a primary-key table with the lake on are written through the gateway and
 * tiered; the CLI then lists each table's live Parquet files (the same files and records as the metadata
 * the log names) and answers SQL over them with DuckDB equal to the rows written: every appended row once,
 * one row per live key of the primary-key table with its latest values. S3 is found through the cluster's
 * cluster.json (--data-dir) and through MINK_S3_ENDPOINT. A missing table, a table without a lake, bad SQL
 * and no S3 settings each end with exit 1 and one line on standard error, and no temporary folder is left.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { LocalCluster } from '@mink/devcluster';
import { ONE_NODE_CLUSTER, eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(300_000);

const run = promisify(execFile);
const CLI = resolve(__dirname, '../../packages/cli/dist/main.js');
const EVENTS = 500;
const ACCOUNTS = 50;

interface LakeListing {
  table: string;
  metadataKey: string;
  metadataLocation: string;
  snapshotId: number;
  files: { key: string; path: string; bucket: number; records: number; bytes: number }[];
}

describe('mink lake files and lake query on a real local cluster', () => {
  const directory = temporaryDirectory('cli-lake');
  const dataDir = join(directory.path, 'cluster');
  // The CLI's temporary folders go here, so the test can see that none is left behind.
  const cliTmp = join(directory.path, 'cli-tmp');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  /** Runs the CLI; resolves with its exit code, standard output and standard error whatever the exit code. */
  async function mink(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const environment: NodeJS.ProcessEnv = { ...process.env, MINK_GATEWAY_URL: cluster!.gatewayUrl, TMPDIR: cliTmp, ...env };
    for (const name of ['MINK_S3_ENDPOINT', 'MINK_S3_BUCKET', 'MINK_S3_ACCESS_KEY_ID', 'MINK_S3_SECRET_ACCESS_KEY'] as const) if (!(name in env)) delete environment[name];
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: environment, maxBuffer: 64 * 1024 * 1024 });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  /** The last line of standard error, checked to be the only one that is not progress. */
  function oneErrorLine(stderr: string): string {
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }

  async function tiered(table: string): Promise<string> {
    return eventually(`${table} tiered up to every bucket's end`, async () => {
      const described = await http(cluster!.gatewayUrl, 'GET', `/v1/tables/${table}`);
      const lake = described.body.lake as { metadataKey: string | null; offsets: { bucket: number; offset: number }[]; round: unknown } | undefined;
      const ends = (described.body.bucketLeaders as { stream: { endOffset: number } }[]).map((bucket) => bucket.stream.endOffset);
      if (!lake || lake.metadataKey === null || lake.round !== null) return undefined;
      return lake.offsets.every(({ bucket, offset }) => offset === ends[bucket]) ? lake.metadataKey : undefined;
    }, { timeoutMs: 120_000, intervalMs: 300 });
  }

  it('lists the live files and answers SQL equal to the rows written; failures are one line and exit 1', async () => {
    mkdirSync(cliTmp);
    cluster = await LocalCluster.start({ dataDir, ...ONE_NODE_CLUSTER });
    const gateway = cluster.gatewayUrl;
    const lakeOn = { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s' };
    const created = await Promise.all([
      http(gateway, 'POST', '/v1/tables', { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'x', type: 'int64' }, { name: 'note', type: 'string' }], bucketKey: ['id'], buckets: 2, properties: lakeOn }),
      http(gateway, 'POST', '/v1/tables', { name: 'accounts', columns: [{ name: 'id', type: 'int64' }, { name: 'balance', type: 'int64' }, { name: 'owner', type: 'string' }], primaryKey: ['id'], buckets: 2, properties: lakeOn }),
      http(gateway, 'POST', '/v1/tables', { name: 'plain', columns: [{ name: 'id', type: 'int64' }], buckets: 1 }),
    ]);
    expect(created.map((answer) => answer.status)).toEqual([201, 201, 201]);
    await eventually('every bucket open', async () => {
      const tables = await Promise.all(['events', 'accounts', 'plain'].map((name) => http(gateway, 'GET', `/v1/tables/${name}`)));
      return tables.every((table) => table.body.bucketLeaders.every((bucket: { stream: { state: string } }) => bucket.stream.state === 'open')) ? true : undefined;
    });

    // Events: ids 0..499 with x = 3 * id, in five appends.
    for (let start = 0; start < EVENTS; start += 100) {
      const rows = Array.from({ length: 100 }, (_, index) => ({ id: start + index, x: 3 * (start + index), note: `event ${start + index}` }));
      expect((await http(gateway, 'POST', '/v1/tables/events/append', { rows })).status).toBe(200);
    }
    // Accounts: 50 keys, the first 20 updated, the last 10 deleted: 40 live keys.
    const accounts = Array.from({ length: ACCOUNTS }, (_, index) => ({ id: index + 1, balance: index + 1, owner: `owner ${index + 1}` }));
    expect((await http(gateway, 'POST', '/v1/tables/accounts/put', { rows: accounts })).status).toBe(200);
    expect((await http(gateway, 'POST', '/v1/tables/accounts/put', { rows: accounts.slice(0, 20).map((row) => ({ ...row, balance: row.id * 100 })) })).status).toBe(200);
    expect((await http(gateway, 'POST', '/v1/tables/accounts/delete', { keys: accounts.slice(40).map((row) => ({ id: row.id })) })).status).toBe(200);
    const eventsMetadata = await tiered('events');
    await tiered('accounts');

    // lake files, with S3 from the cluster's cluster.json.
    const listed = await mink(['lake', 'files', 'events', '--data-dir', dataDir, '--json']);
    expect(listed.code).toBe(0);
    const listing = JSON.parse(listed.stdout) as LakeListing;
    expect(listing).toMatchObject({ table: 'events', metadataKey: eventsMetadata, metadataLocation: `s3://mink/${eventsMetadata}` });
    expect(listing.files.reduce((sum, file) => sum + file.records, 0)).toBe(EVENTS);
    expect(new Set(listing.files.map((file) => file.bucket))).toEqual(new Set([0, 1]));
    for (const file of listing.files) {
      expect(file.key).toMatch(new RegExp(`^lake/events/data/__bucket=${file.bucket}/.+\\.parquet$`));
      expect(file.path).toBe(`s3://mink/${file.key}`);
      expect(file.bytes).toBeGreaterThan(0);
    }
    const text = await mink(['lake', 'files', 'events', '--data-dir', dataDir]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^KEY +BUCKET +RECORDS +BYTES$/);
    expect(lines.slice(1, -1).map((line) => line.split(/ +/)[0])).toEqual(listing.files.map((file) => file.key));
    expect(lines.at(-1)).toBe(
      `${listing.files.length} files, ${EVENTS} records, ${listing.files.reduce((sum, file) => sum + file.bytes, 0)} bytes in snapshot ${listing.snapshotId} of s3://mink/${eventsMetadata}`,
    );

    // lake query: aggregates equal to the rows appended, BIGINT and HUGEINT as strings in JSON.
    const totals = await mink(['lake', 'query', 'select count(*) as n, sum(x) as total, count(distinct id) as ids from events', '--data-dir', dataDir, '--json']);
    expect(totals.code).toBe(0);
    const expectedTotal = Array.from({ length: EVENTS }, (_, id) => 3 * id).reduce((sum, x) => sum + x, 0);
    expect(totals.stdout).toBe(`{"n":"${EVENTS}","total":"${expectedTotal}","ids":"${EVENTS}"}\n`);
    // A fetch this small is done before progress is shown (LAKE_PROGRESS_DELAY_MS).
    expect(totals.stderr).toBe('');
    // The same through MINK_S3_ENDPOINT, with no cluster.json to be found.
    const viaEnv = await mink(['lake', 'query', 'select id, x, note from events where id < 3 order by id', '--data-dir', join(directory.path, 'none')], { MINK_S3_ENDPOINT: cluster.s3Endpoint });
    expect(viaEnv.code).toBe(0);
    expect(viaEnv.stdout).toBe(['id  x  note', '0   0  event 0', '1   3  event 1', '2   6  event 2', '(3 rows)', ''].join('\n'));

    // The primary-key table: one row per live key with its latest values.
    const pk = await mink(['lake', 'query', 'select id, balance, owner from accounts order by id', '--data-dir', dataDir, '--json']);
    expect(pk.code).toBe(0);
    const live = accounts.slice(0, 40).map((row) => ({ id: String(row.id), balance: String(row.id <= 20 ? row.id * 100 : row.id), owner: row.owner }));
    expect(pk.stdout.trim().split('\n').map((line) => JSON.parse(line))).toEqual(live);
    // Both lakes in one query.
    const joined = await mink(['lake', 'query', 'select count(*) as matches, sum(a.balance) as balance from events e join accounts a on e.id = a.id', '--data-dir', dataDir, '--json']);
    expect(joined.code).toBe(0);
    expect(JSON.parse(joined.stdout)).toEqual({ matches: '40', balance: String(live.reduce((sum, row) => sum + Number(row.balance), 0)) });

    // Failures: one line, exit 1.
    const missing = await mink(['lake', 'files', 'nope', '--data-dir', dataDir]);
    expect(missing.code).toBe(1);
    expect(oneErrorLine(missing.stderr)).toMatch(/^error: NotFound: .*nope/);
    const noLake = await mink(['lake', 'files', 'plain', '--data-dir', dataDir]);
    expect(noLake.code).toBe(1);
    expect(oneErrorLine(noLake.stderr)).toBe("error: table 'plain' has no lake: table.datalake.enabled is not true (mink table alter plain --property table.datalake.enabled=true)");
    const queryNoLake = await mink(['lake', 'query', 'select count(*) from plain', '--data-dir', dataDir]);
    expect(queryNoLake.code).toBe(1);
    expect(oneErrorLine(queryNoLake.stderr)).toBe(noLake.stderr.trim());
    const badSql = await mink(['lake', 'query', 'selec count(*) from events', '--data-dir', dataDir]);
    expect(badSql.code).toBe(1);
    expect(oneErrorLine(badSql.stderr)).toBe('error: Parser Error: syntax error at or near "selec"');
    const noS3 = await mink(['lake', 'files', 'events', '--data-dir', join(directory.path, 'none')]);
    expect(noS3.code).toBe(1);
    expect(oneErrorLine(noS3.stderr)).toMatch(/^error: no S3 endpoint to read the lake from: give --s3-endpoint or MINK_S3_ENDPOINT/);
    const wrongS3 = await mink(['lake', 'files', 'events', '--s3-endpoint', 'http://127.0.0.1:9', '--s3-secret-access-key', 'do-not-print-me']);
    expect(wrongS3.code).toBe(1);
    expect(oneErrorLine(wrongS3.stderr)).toMatch(/^error: Unavailable: cannot read the lake from S3 at http:\/\/127\.0\.0\.1:9 \(from --s3-endpoint\), bucket mink: /);
    expect(wrongS3.stderr).not.toContain('do-not-print-me');

    expect(readdirSync(cliTmp)).toEqual([]);
  });
});
