/**
 * Primary-key tables end to end on real processes, NATS and s3rver (issue 5): 50 000 keys are put through
 * the gateway, then updated (whole and partial puts) and deleted; a put load keeps running while the leader
 * of a bucket is killed with kill -9. After failover every lookup returns the last acknowledged value, the
 * new leader restored the bucket from a KV snapshot plus the changelog after it, and folding the changelog
 * scanned from offset 0 gives the same table. Then the new leader is killed right after an acknowledged
 * put, with no write after it, so the lookups that follow are served purely by restore plus replay (a later
 * write would also fold in missing changelog records and could hide a broken restore). A restart of the
 * whole cluster gives the same table again. Bad requests are 400s that write nothing.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'nats';
import { LocalCluster } from '@mink/devcluster';
import { SUBJECTS } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(600_000);

const KEYS = 50_000;
const BATCH = 5_000;
const BUCKETS = 4;
const TABLE = 'accounts';
/**
 * Periodic snapshots off (ten minutes), so the only snapshots are the ones a clean close takes and each
 * restore below starts from a known one. The periodic ones are tested in pk-buckets.spec.ts.
 */
const KV_SNAPSHOT_INTERVAL = '600s';

type Row = { id: string; tenant: string; name: string; balance: string };

async function startCluster(dataDir: string): Promise<LocalCluster> {
  return LocalCluster.start({
    dataDir,
    nodes: 3,
    coordinators: 2,
    gatewayPort: 0,
    kafkaPort: 0,
    leaseTtlMs: 3_000,
    coordinatorTickMs: 500,
    env: { MINK_KV_SNAPSHOT_INTERVAL: KV_SNAPSHOT_INTERVAL },
  });
}

async function allOpen(gateway: string, condition: (status: any) => boolean = () => true): Promise<any> {
  return eventually(
    `every bucket of ${TABLE} open`,
    async () => {
      const status = (await http(gateway, 'GET', '/v1/cluster')).body;
      const buckets = status.buckets.filter((bucket: any) => bucket.table === TABLE);
      return buckets.length === BUCKETS && buckets.every((bucket: any) => bucket.state === 'open') && condition(status) ? status : undefined;
    },
    60_000,
  );
}

/** Posts until the gateway acknowledges (a write refused while a bucket moves is retried as a client would). */
async function acknowledged(gateway: string, path: string, body: unknown): Promise<any> {
  for (let attempt = 0; ; attempt++) {
    const response = await http(gateway, 'POST', path, body);
    if (response.status === 200) return response.body;
    if (response.status !== 503 && response.status !== 504) throw new Error(`${path}: ${response.status} ${JSON.stringify(response.body)}`);
    if (attempt > 100) throw new Error(`${path}: still ${response.status} after ${attempt} attempts`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function rowOf(id: number, generation: number): Row {
  return { id: String(id), tenant: `t${id % 13}`, name: `n${id}-g${generation}`, balance: String(BigInt(id) * 1_000_000_007n + BigInt(generation)) };
}

/** Every key's row by a lookup through the gateway (null for a missing key), in key order. */
async function lookupAll(gateway: string): Promise<(Row | null)[]> {
  const rows: (Row | null)[] = [];
  for (let start = 0; start < KEYS; start += BATCH) {
    const keys = Array.from({ length: Math.min(BATCH, KEYS - start) }, (_, index) => ({ id: String(start + index) }));
    const response = await http(gateway, 'POST', `/v1/tables/${TABLE}/lookup`, { keys });
    expect(response.status).toBe(200);
    expect(response.body.rows).toHaveLength(keys.length);
    rows.push(...response.body.rows);
  }
  return rows;
}

/** The table obtained by folding every bucket's changelog from offset 0: +I/+U store, -D removes. */
async function foldChangelog(gateway: string): Promise<Map<string, Row>> {
  const table = new Map<string, Row>();
  for (let bucket = 0; bucket < BUCKETS; bucket++) {
    let offset = 0;
    for (;;) {
      const response = await http(gateway, 'GET', `/v1/tables/${TABLE}/scan?bucket=${bucket}&offset=${offset}&limit=10000`);
      expect(response.status).toBe(200);
      for (const record of response.body.records) {
        expect(record.offset).toBe(offset);
        offset = record.offset + 1;
        if (record.changeType === '+I' || record.changeType === '+U') table.set(record.row.id, record.row);
        else if (record.changeType === '-D') table.delete(record.row.id);
        else expect(record.changeType).toBe('-U');
      }
      if (offset >= response.body.highWatermark) break;
    }
  }
  return table;
}

function expectTable(actual: (Row | null)[], expected: Map<number, Row | null>): void {
  let mismatches = 0;
  const examples: string[] = [];
  for (let id = 0; id < KEYS; id++) {
    const want = expected.get(id) ?? null;
    if (JSON.stringify(actual[id]) !== JSON.stringify(want)) {
      mismatches++;
      if (examples.length < 5) examples.push(`${id}: got ${JSON.stringify(actual[id])}, want ${JSON.stringify(want)}`);
    }
  }
  expect({ mismatches, examples }).toEqual({ mismatches: 0, examples: [] });
}

describe('primary-key tables on a real local cluster', () => {
  const directory = temporaryDirectory('pk-table');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  beforeAll(async () => {
    cluster = await startCluster(directory.path);
  });

  it('serves prefix lookups, merge engines and changelog scans over HTTP, and refuses what does not fit the table', async () => {
    const gateway = cluster!.gatewayUrl;
    const created = await http(gateway, 'POST', '/v1/tables', {
      name: 'visits',
      columns: [
        { name: 'user', type: 'string' },
        { name: 'seq', type: 'int32' },
        { name: 'page', type: 'string' },
      ],
      primaryKey: ['user', 'seq'],
      bucketKey: ['user'],
      buckets: 2,
      properties: { 'merge-engine': 'first_row' },
    });
    expect(created.status).toBe(201);
    const badEngine = await http(gateway, 'POST', '/v1/tables', {
      name: 'bad_engine',
      columns: [{ name: 'id', type: 'int64' }],
      primaryKey: ['id'],
      buckets: 1,
      properties: { 'merge-engine': 'newest' },
    });
    expect(badEngine.status).toBe(400);
    expect(badEngine.body.error.message).toMatch(/merge-engine/);
    expect((await http(gateway, 'GET', '/v1/tables/bad_engine')).status).toBe(404);

    const rows = [
      { user: 'ann', seq: 1, page: '/a' },
      { user: 'ann', seq: 2, page: '/b' },
      { user: 'bob', seq: 1, page: '/c' },
    ];
    await acknowledged(gateway, '/v1/tables/visits/put', { rows });
    // first_row keeps the first row of a key: the second put of (ann, 1) changes nothing.
    const again = await acknowledged(gateway, '/v1/tables/visits/put', { rows: [{ user: 'ann', seq: 1, page: '/changed' }] });
    expect(again.buckets.reduce((sum: number, bucket: any) => sum + bucket.count, 0)).toBe(0);
    // ... and ignores deletes by default.
    await acknowledged(gateway, '/v1/tables/visits/delete', { keys: [{ user: 'bob', seq: 1 }] });

    const lookup = await http(gateway, 'POST', '/v1/tables/visits/lookup', { keys: [{ user: 'ann', seq: 1 }, { user: 'zed', seq: 1 }, { user: 'bob', seq: 1 }], columns: ['page'] });
    expect(lookup.status).toBe(200);
    expect(lookup.body.rows).toEqual([{ page: '/a' }, null, { page: '/c' }]);

    const prefix = await http(gateway, 'POST', '/v1/tables/visits/prefix-lookup', { prefixes: [{ user: 'ann' }, { user: 'nobody' }] });
    expect(prefix.status).toBe(200);
    expect(prefix.body.results[0].rows.map((row: any) => row.page).sort()).toEqual(['/a', '/b']);
    expect(prefix.body.results[1].rows).toEqual([]);

    // The changelog holds exactly the three inserts, with their change types.
    const scanned: any[] = [];
    for (const bucket of [0, 1]) scanned.push(...(await http(gateway, 'GET', `/v1/tables/visits/scan?bucket=${bucket}&offset=0`)).body.records);
    expect(scanned.map((record) => `${record.changeType}${record.row.user}${record.row.seq}`).sort()).toEqual(['+Iann1', '+Iann2', '+Ibob1']);

    // Requests that do not fit the table are 400s.
    expect((await http(gateway, 'POST', '/v1/tables/visits/put', { rows: [{ user: 'ann', seq: 3 }], columns: ['user', 'seq'] })).status).toBe(400);
    expect((await http(gateway, 'POST', '/v1/tables/visits/lookup', { keys: [{ user: 'ann' }] })).status).toBe(400);
    expect((await http(gateway, 'POST', '/v1/tables/visits/append', { rows })).status).toBe(400);
    expect((await http(gateway, 'POST', '/v1/tables/visits/prefix-lookup', { prefixes: [{ seq: 1 }] })).status).toBe(400);

    // docs/ownership.md §6 ("Redirects"): a table-addressed put or delete sent to any node is split by bucket and forwarded.
    const nc = await connect({ servers: cluster!.natsUrl });
    try {
      const nodes = (await http(gateway, 'GET', '/v1/cluster')).body.nodes.filter((node: any) => node.live);
      for (const [index, node] of nodes.entries()) {
        const users = [`cy${index}`, `dan${index}`, `eve${index}`];
        const put = await requestJson<any>(nc, SUBJECTS.nodeRpc(node.address), {
          op: 'putTable',
          table: 'visits',
          rows: users.map((user) => ({ user, seq: 1, page: `/via-${node.id}` })),
        });
        expect(put.written).toBe(3);
        expect(put.buckets.reduce((sum: number, part: any) => sum + part.count, 0)).toBe(3);
        const deleted = await requestJson<any>(nc, SUBJECTS.nodeRpc(node.address), { op: 'deleteTable', table: 'visits', keys: [{ user: users[0], seq: 1 }] });
        expect(deleted.written).toBe(1);
        const found = await http(gateway, 'POST', '/v1/tables/visits/lookup', { keys: users.map((user) => ({ user, seq: 1 })), columns: ['page'] });
        // first_row ignores deletes, so all three rows are still there.
        expect(found.body.rows).toEqual(users.map(() => ({ page: `/via-${node.id}` })));
      }
      await expect(requestJson(nc, SUBJECTS.nodeRpc(nodes[0].address), { op: 'putTable', table: 'visits', rows: [{ seq: 1 }] })).rejects.toMatchObject({ code: 'InvalidArgument' });
      // A bucket request carrying a key of another bucket is refused (it would store the key twice).
      const route = await requestJson<any>(nc, SUBJECTS.anyNodeRpc, { op: 'describeTable', table: 'visits' });
      const home = (await http(gateway, 'POST', '/v1/tables/visits/put', { rows: [{ user: 'zoe', seq: 1, page: '/z' }] })).body.buckets[0].bucket as number;
      const wrong = 1 - home;
      const wrongLeader = nodes.find((node: any) => node.id === route.leaders[wrong].node);
      const misrouted = { table: 'visits', tableId: route.tableId, partition: null, bucket: wrong };
      await expect(requestJson(nc, SUBJECTS.nodeRpc(wrongLeader.address), { op: 'put', ...misrouted, rows: [{ user: 'zoe', seq: 1, page: '/twice' }] })).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: expect.stringContaining(`belongs to bucket ${home}`),
      });
      await expect(requestJson(nc, SUBJECTS.nodeRpc(wrongLeader.address), { op: 'lookup', ...misrouted, keys: [{ user: 'zoe', seq: 1 }] })).rejects.toMatchObject({ code: 'InvalidArgument' });
    } finally {
      await nc.close();
    }

    // A dropped PK table is gone, and a new table of the same name starts empty.
    expect((await http(gateway, 'DELETE', '/v1/tables/visits')).status).toBe(200);
    expect((await http(gateway, 'POST', '/v1/tables/visits/lookup', { keys: [{ user: 'ann', seq: 1 }] })).status).toBe(404);
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'visits', columns: [{ name: 'user', type: 'string' }, { name: 'seq', type: 'int32' }], primaryKey: ['user', 'seq'], buckets: 1 })).status).toBe(201);
    const fresh = await eventually('the re-created table serves lookups', async () => {
      const response = await http(gateway, 'POST', '/v1/tables/visits/lookup', { keys: [{ user: 'ann', seq: 1 }] });
      return response.status === 200 ? response.body : undefined;
    });
    expect(fresh.rows).toEqual([null]);
  });

  it('keeps every acknowledged put and delete through kill -9 of a leader and a whole-cluster restart', async () => {
    const gateway = cluster!.gatewayUrl;
    const created = await http(gateway, 'POST', '/v1/tables', {
      name: TABLE,
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'tenant', type: 'string' },
        { name: 'name', type: 'string' },
        { name: 'balance', type: 'int64' },
      ],
      primaryKey: ['id'],
      buckets: BUCKETS,
    });
    expect(created.status).toBe(201);
    await allOpen(gateway);

    // What the table must hold: the last acknowledged row of each key, or null once deleted.
    const expected = new Map<number, Row | null>();

    // 1. 50 000 new keys.
    for (let start = 0; start < KEYS; start += BATCH) {
      const rows = Array.from({ length: BATCH }, (_, index) => rowOf(start + index, 0));
      const result = await acknowledged(gateway, `/v1/tables/${TABLE}/put`, { rows });
      expect(result.written).toBe(BATCH);
      rows.forEach((row) => expected.set(Number(row.id), row));
    }

    // 1b. Many small puts at once: the gateway's client merges those waiting for a bucket into requests of
    // several parts, which each leader plans part by part. Every call is answered for its own rows, and the
    // ranges the calls got in a bucket's changelog never overlap.
    const dataNodeRequests = async (): Promise<number> => {
      let total = 0;
      for (const node of cluster!.processes().filter((entry) => entry.role === 'data-node')) {
        const text = await (await fetch(`http://127.0.0.1:${node.ports.http}/metrics`)).text();
        for (const line of text.split('\n')) {
          if (line.startsWith('mink_bucket_requests_total{') && line.includes(`table="${TABLE}"`) && line.includes('op="put"')) total += Number(line.split(' ').at(-1));
        }
      }
      return total;
    };
    const requestsBefore = await dataNodeRequests();
    const smallCalls = Array.from({ length: 40 }, (_, call) => Array.from({ length: 25 }, (_, index) => rowOf(call * 25 + index, 2)));
    const answers = await Promise.all(smallCalls.map((rows) => acknowledged(gateway, `/v1/tables/${TABLE}/put`, { rows })));
    const ranges = new Map<number, [number, number][]>();
    answers.forEach((answer, call) => {
      expect(answer.written).toBe(25);
      expect(answer.buckets.reduce((sum: number, bucket: any) => sum + bucket.operations, 0)).toBe(25);
      for (const { bucket, baseOffset, count } of answer.buckets) ranges.set(bucket, [...(ranges.get(bucket) ?? []), [baseOffset, baseOffset + count]]);
    });
    for (const bucketRanges of ranges.values()) {
      const sorted = bucketRanges.filter(([start, end]) => end > start).sort((a, b) => a[0] - b[0]);
      sorted.slice(1).forEach(([start], index) => expect(start).toBeGreaterThanOrEqual(sorted[index]![1]));
    }
    smallCalls.flat().forEach((row) => expected.set(Number(row.id), row));
    // Fewer requests reached the leaders than the calls sent to buckets: some went out merged.
    expect(await dataNodeRequests() - requestsBefore).toBeLessThan(smallCalls.length * BUCKETS);

    // 2. Whole-row updates of every third key, partial updates (balance only) of every seventh, deletes of every eleventh.
    const updates = [...expected.values()].filter((row) => Number(row!.id) % 3 === 0).map((row) => rowOf(Number(row!.id), 1));
    for (let start = 0; start < updates.length; start += BATCH) {
      await acknowledged(gateway, `/v1/tables/${TABLE}/put`, { rows: updates.slice(start, start + BATCH) });
    }
    updates.forEach((row) => expected.set(Number(row.id), row));
    const partial = Array.from({ length: Math.ceil(KEYS / 7) }, (_, index) => ({ id: String(index * 7), balance: String(-index) }));
    await acknowledged(gateway, `/v1/tables/${TABLE}/put`, { rows: partial, columns: ['id', 'balance'] });
    partial.forEach(({ id, balance }) => expected.set(Number(id), { ...expected.get(Number(id))!, balance }));
    const deleted = Array.from({ length: Math.ceil(KEYS / 11) }, (_, index) => ({ id: String(index * 11) }));
    await acknowledged(gateway, `/v1/tables/${TABLE}/delete`, { keys: deleted });
    deleted.forEach(({ id }) => expected.set(Number(id), null));

    // 3. Bad requests are refused whole: nothing of them is written.
    const missingKey = await http(gateway, 'POST', `/v1/tables/${TABLE}/put`, { rows: [{ id: '1', name: 'never' }, { name: 'no key' }] });
    expect(missingKey.status).toBe(400);
    const badType = await http(gateway, 'POST', `/v1/tables/${TABLE}/put`, { rows: [{ id: '2', balance: 'lots' }] });
    expect(badType.status).toBe(400);
    expect(badType.body.error.message).toMatch(/balance/);
    const partialWithoutKey = await http(gateway, 'POST', `/v1/tables/${TABLE}/put`, { rows: [{ balance: '1' }], columns: ['balance'] });
    expect(partialWithoutKey.status).toBe(400);
    const lookupUnknown = await http(gateway, 'POST', `/v1/tables/${TABLE}/lookup`, { keys: [{ id: '1' }], columns: ['nope'] });
    expect(lookupUnknown.status).toBe(400);
    expectTable(await lookupAll(gateway), expected);

    const leaderOf0 = async (condition: (status: any) => boolean = () => true): Promise<string> =>
      (await allOpen(gateway, condition)).buckets.find((bucket: any) => bucket.table === TABLE && bucket.bucket === 0).leader as string;
    const restoresOf0 = (nodeId: string): any[] =>
      readFileSync(cluster!.process('data-node', nodeId).logFile, 'utf8')
        .split('\n')
        .filter((line) => line.includes('restored PK bucket'))
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.table === TABLE && entry.bucket === 0 && entry.snapshot !== null);

    // 4. SIGTERM of the leader of bucket 0: it snapshots its buckets as it closes them, and the next leader
    // restores from that snapshot with nothing to replay. (Periodic snapshots are off in this test, so which
    // snapshot each restore starts from is known.)
    // The node stays down until its buckets are open elsewhere: restarted at once, it could be live again
    // when the coordinator places the buckets it gave up, and be given some of them back.
    const first = await leaderOf0();
    cluster!.kill('data-node', first, 'SIGTERM');
    expect(await cluster!.waitForExit('data-node', first)).toEqual({ code: 0, signal: null });
    const second = await leaderOf0((current) => current.buckets.every((bucket: any) => bucket.table !== TABLE || bucket.leader !== first));
    expect(restoresOf0(second).map((entry) => entry.replayedTo - entry.replayedFrom)).toEqual([0]);
    expectTable(await lookupAll(gateway), expected);
    await cluster!.restart('data-node', first);

    // 5. A put load runs while the new leader of bucket 0 is killed; each batch is retried until acknowledged.
    let generation = 2;
    let stop = false;
    const load = (async () => {
      while (!stop) {
        const ids = Array.from({ length: 500 }, (_, index) => (generation * 997 + index * 89) % KEYS);
        const rows = ids.map((id) => rowOf(id, generation));
        await acknowledged(gateway, `/v1/tables/${TABLE}/put`, { rows });
        rows.forEach((row) => expected.set(Number(row.id), row));
        generation++;
      }
    })();
    // The load has demonstrably run (batches acknowledged) before the kill, and again after the failover.
    await eventually('put batches acknowledged before the kill', async () => (generation >= 5 ? true : undefined), { timeoutMs: 60_000, intervalMs: 20 });
    cluster!.kill('data-node', second);
    const third = await leaderOf0((current) => current.buckets.every((bucket: any) => bucket.table !== TABLE || bucket.leader !== second));
    const generationAtFailover = generation;
    await eventually('put batches acknowledged after the failover', async () => (generation >= generationAtFailover + 2 ? true : undefined), { timeoutMs: 60_000, intervalMs: 20 });
    stop = true;
    await load;
    expect(generation).toBeGreaterThan(4);

    const afterFailover = await lookupAll(gateway);
    expectTable(afterFailover, expected);
    // The third leader restored the SIGTERM snapshot and replayed everything the load wrote after it.
    expect(restoresOf0(third).some((entry) => entry.replayedTo > entry.replayedFrom)).toBe(true);

    // 6. The changelog replays to the same table.
    const folded = await foldChangelog(gateway);
    const fromLookups = new Map(afterFailover.flatMap((row) => (row ? [[row.id, row] as const] : [])));
    expect(folded.size).toBe(fromLookups.size);
    expect(new Map([...folded].sort(([a], [b]) => Number(a) - Number(b)))).toEqual(new Map([...fromLookups].sort(([a], [b]) => Number(a) - Number(b))));

    // 7. Kill the third leader right after an acknowledged put: nothing is written after it and there is no
    // newer snapshot, so only restore plus replay can bring that put back.
    const last = Array.from({ length: 500 }, (_, index) => rowOf((index * 101) % KEYS, generation));
    await acknowledged(gateway, `/v1/tables/${TABLE}/put`, { rows: last });
    cluster!.kill('data-node', third);
    last.forEach((row) => expected.set(Number(row.id), row));
    const fourth = await leaderOf0((current) => current.buckets.every((bucket: any) => bucket.table !== TABLE || (bucket.leader !== second && bucket.leader !== third)));
    expectTable(await lookupAll(gateway), expected);
    expect(restoresOf0(fourth).some((entry) => entry.replayedTo > entry.replayedFrom)).toBe(true);

    // 8. A whole-cluster restart gives the same table.
    await cluster!.stop();
    cluster = await startCluster(directory.path);
    await allOpen(cluster.gatewayUrl);
    expectTable(await lookupAll(cluster.gatewayUrl), expected);
  });
});
