/**
 * The `mink` data commands on a real local cluster (issue "Operations", item 5), run as the real binary: a
 * JSON Lines file appended in calls of --batch rows and scanned back exactly (every row once, in file order
 * within each bucket), puts and lookups on a primary-key table, `scan --follow` woken by a later append, and a
 * bad line stopping a load with the line named and the rows before it written.
 */
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { LocalCluster } from '@mink/devcluster';
import { bucketOfRow } from '@mink/records';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(180_000);

const run = promisify(execFile);
const CLI = resolve(__dirname, '../../packages/cli/dist/main.js');
const ROWS = 5_000;
const BUCKETS = 2;

describe('the mink data commands on a real local cluster', () => {
  const directory = temporaryDirectory('cli-data');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  /** The records of a scan's NDJSON output; a line that is not JSON fails with the line and its neighbours named. */
  function recordsOf(stdout: string): { offset: number; row: { id: string; note: string } }[] {
    const lines = stdout.trim().split('\n');
    return lines.map((line, index) => {
      try {
        return JSON.parse(line) as { offset: number; row: { id: string; note: string } };
      } catch (error) {
        throw new Error(`line ${index + 1} of ${lines.length} of the scan is not JSON (${String(error)}): ${JSON.stringify(lines.slice(Math.max(0, index - 1), index + 2))}`);
      }
    });
  }

  function mink(...args: string[]): Promise<{ stdout: string; stderr: string }> {
    return run(process.execPath, [CLI, ...args], { env: { ...process.env, MINK_GATEWAY_URL: cluster!.gatewayUrl }, maxBuffer: 64 * 1024 * 1024 });
  }

  it('appends a JSON Lines file, scans it back exactly, puts and looks up, follows a bucket, and stops at a bad line', async () => {
    cluster = await LocalCluster.start({ dataDir: join(directory.path, 'cluster'), nodes: 1, coordinators: 1, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 3_000, coordinatorTickMs: 500 });
    const gateway = cluster.gatewayUrl;
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'note', type: 'string' }], bucketKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'orders', columns: [{ name: 'id', type: 'int64' }, { name: 'total', type: 'float64' }], primaryKey: ['id'], buckets: 1 })).status).toBe(201);
    await eventually('both tables open', async () => {
      const tables = await Promise.all(['events', 'orders'].map((name) => http(gateway, 'GET', `/v1/tables/${name}`)));
      return tables.every((table) => table.body.bucketLeaders.every((bucket: { stream: { state: string } }) => bucket.stream.state === 'open'));
    });

    // 5 000 rows, ids shuffled so that file order differs from id order.
    const ids = Array.from({ length: ROWS }, (_, index) => (index * 7_919) % ROWS);
    const file = join(directory.path, 'events.jsonl');
    writeFileSync(file, ids.map((id) => JSON.stringify({ id, note: `row ${id} ✓` })).join('\n') + '\n');
    const appended = await mink('append', 'events', file, '--batch', '700');
    expect(appended.stdout).toMatch(/^appended 5 000 rows \([\d.]+ MB\) to events in [\d.]+ s: /);

    const scanned = recordsOf((await mink('scan', 'events')).stdout);
    expect(scanned).toHaveLength(ROWS);
    expect(new Set(scanned.map((record) => Number(record.row.id))).size).toBe(ROWS);
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      const inFile = ids.filter((id) => bucketOfRow({ id: BigInt(id) }, ['id'], BUCKETS) === bucket);
      const ofBucket = recordsOf((await mink('scan', 'events', '--bucket', String(bucket))).stdout);
      expect(ofBucket.map((record) => Number(record.row.id))).toEqual(inFile);
      expect(ofBucket.map((record) => record.offset)).toEqual(inFile.map((_, index) => index));
      expect(ofBucket.every((record) => record.row.note === `row ${record.row.id} ✓`)).toBe(true);
    }

    // Puts and lookups.
    const orders = join(directory.path, 'orders.jsonl');
    writeFileSync(orders, '{"id":1,"total":5.5}\n{"id":2,"total":7}\n{"id":1,"total":6.25}\n');
    expect((await mink('put', 'orders', orders)).stdout).toMatch(/^put 3 rows /);
    expect((await mink('lookup', 'orders', '{"id":1}', '{"id":3}')).stdout).toBe('{"id":"1","total":6.25}\nnull\n');

    // scan --follow at the end of bucket 0 gets the record appended after it started waiting.
    const idOfBucket0 = Array.from({ length: 100 }, (_, index) => ROWS + index).find((id) => bucketOfRow({ id: BigInt(id) }, ['id'], BUCKETS) === 0)!;
    const endOfBucket0 = ids.filter((id) => bucketOfRow({ id: BigInt(id) }, ['id'], BUCKETS) === 0).length;
    const follower = spawn(process.execPath, [CLI, 'scan', 'events', '--bucket', '0', '--from', String(endOfBucket0), '--follow', '--limit', '1', '--wait', '2s'], {
      env: { ...process.env, MINK_GATEWAY_URL: gateway },
    });
    let followed = '';
    follower.stdout.on('data', (chunk: Buffer) => (followed += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => follower.once('exit', resolve));
    expect((await http(gateway, 'POST', '/v1/tables/events/append', { rows: [{ id: idOfBucket0, note: 'late' }] })).status).toBe(200);
    expect(await exited).toBe(0);
    expect(JSON.parse(followed)).toMatchObject({ offset: endOfBucket0, row: { id: String(idOfBucket0), note: 'late' } });

    // A bad line stops the load; the rows before it were appended.
    const bad = join(directory.path, 'bad.jsonl');
    writeFileSync(bad, '{"id":100001,"note":"a"}\n{"id":100002,"note":"b"}\nnot json\n{"id":100004,"note":"d"}\n');
    const failed = await mink('append', 'events', bad).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr.trim().split('\n').at(-1)).toMatch(/^error: line 3 is not JSON \(.*\) \(the 2 rows before it were appended\)$/);
    const all = recordsOf((await mink('scan', 'events')).stdout).map((record) => Number(record.row.id));
    expect(all.filter((id) => id > 100_000).sort()).toEqual([100_001, 100_002]);
  });
});
