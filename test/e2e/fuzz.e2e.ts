/**
 * Bad input on a real local cluster (issue 12 item 4): property-based requests (fast-check) to every HTTP
 * route of the gateway and to every NATS request subject of the data nodes and coordinators, each
 * malformed by construction (wrong types, unknown fields and columns, empty and oversize lists, bad names,
 * bodies that are not JSON or not UTF-8, deep nesting, bad query parameters). Every HTTP answer must be a
 * 4xx (or 503/504, which say "not now", not "broken"), every NATS answer a typed error body; no process
 * may exit, and nothing may change: the tables, their rows and their high watermarks stay as they were.
 *
 * `MINK_FUZZ_SEED` replays a run; `MINK_FUZZ_RUNS` sets how many requests per kind (default 150).
 */
import fc from 'fast-check';
import { request as httpRequest } from 'node:http';
import { connect, type NatsConnection } from 'nats';
import { LocalCluster } from '@mink/devcluster';
import { SUBJECTS } from '@mink/protocol';
import { REPLY_SEAL_BYTES, SEAL_MARKER, sealRequest } from '@mink/transport';
import { SHORT_LEASE_CLUSTER, eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(600_000);

const SEED = Number(process.env.MINK_FUZZ_SEED ?? Date.now() % 1_000_000);
const RUNS = Number(process.env.MINK_FUZZ_RUNS ?? 150);

const LOG_TABLE = 'fz_log';
const PK_TABLE = 'fz_pk';
const ROUTE_TABLES = [LOG_TABLE, PK_TABLE, 'fz_missing', 'bad name', '..', 'x'.repeat(300), '%00', '__proto__'];

/** Statuses a bad request may get: client errors, and the two that only say "not now". */
const ACCEPTABLE = new Set([400, 404, 405, 409, 413, 414, 415, 503, 504]);

interface Probe {
  method: string;
  path: string;
  body?: string | Buffer;
}

const notObject = fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }));
const badInt64 = fc.oneof(fc.constantFrom(1.5, -0.25, true, false, 2 ** 60, 1e300, '12a', '', ' 1', '0x10', '99999999999999999999', '-9223372036854775809'), fc.object({ maxDepth: 1 }), fc.array(fc.integer(), { maxLength: 2 }));
const badString = fc.oneof(fc.integer(), fc.boolean(), fc.object({ maxDepth: 1 }), fc.array(fc.string(), { maxLength: 2 }), fc.constant('\ud800'));
const unknownColumn = fc.string({ minLength: 1, maxLength: 12 }).map((name) => `zz_${name}`);
const pathName = fc.constantFrom(...ROUTE_TABLES).map(encodeURIComponent);

/**
 * A `rows` value no log table can take: not an array, or an array holding no object. An array of objects may be
 * valid rows (`[{}]` is one row of nulls for a table of nullable columns), so those come from badLogRow only.
 */
const notRows = notObject.filter((value) => !(Array.isArray(value) && value.some((row) => typeof row === 'object' && row !== null && !Array.isArray(row))));

/** A log-table row that no validation can accept: an unknown column or a wrongly typed value. */
const badLogRow = fc.oneof(
  fc.record({ id: badInt64 }),
  fc.record({ id: fc.integer(), name: badString }),
  fc.record({ at: fc.oneof(fc.constantFrom(-1.5, 'noon', 2 ** 60), fc.object({ maxDepth: 1 })) }),
  fc.dictionary(unknownColumn, fc.jsonValue({ maxDepth: 1 }), { minKeys: 1, maxKeys: 3 }),
  notObject,
);

/** A PK key or row that no validation can accept: missing key, unknown column, wrong types. */
const badPkRow = fc.oneof(
  fc.record({ v: fc.integer() }),
  fc.record({ k: badString, v: fc.integer() }),
  fc.record({ k: fc.string(), v: badInt64 }),
  fc.dictionary(unknownColumn, fc.jsonValue({ maxDepth: 1 }), { minKeys: 1, maxKeys: 3 }),
  notObject,
);

const json = (value: unknown) => JSON.stringify(value);

/** Malformed bodies per route (paths use real and bogus table names). */
const httpProbes: fc.Arbitrary<Probe> = fc.oneof(
  // Create: bad names, columns, buckets, partitions, properties, unknown fields, not an object.
  fc
    .oneof(
      notObject,
      fc.record({ name: fc.constantFrom('', 'bad name', '1abc', 'x'.repeat(200), 7), columns: fc.constant([{ name: 'id', type: 'int64' }]), buckets: fc.constant(1) }),
      fc.record({ name: fc.constant('fz_new'), columns: fc.oneof(notObject, fc.constant([]), fc.constant([{ name: 'id', type: 'int128' }]), fc.constant([{ name: 'id' }])), buckets: fc.constant(1) }),
      fc.record({ name: fc.constant('fz_new'), columns: fc.constant([{ name: 'id', type: 'int64' }]), buckets: fc.oneof(fc.constantFrom(0, -1, 1.5, 100_000, '8', null)) }),
      fc.record({ name: fc.constant('fz_new'), columns: fc.constant([{ name: 'id', type: 'int64' }]), buckets: fc.constant(1), partition: fc.oneof(notObject, fc.constant({ column: 'nope', unit: 'hour' }), fc.constant({ column: 'id', unit: 'minute' })) }),
      fc.record({ name: fc.constant('fz_new'), columns: fc.constant([{ name: 'id', type: 'int64' }]), buckets: fc.constant(1), properties: fc.oneof(notObject, fc.constant({ 'table.log.ttl': 'forever' }), fc.constant({ 'table.datalake.enabled': 'maybe' })) }),
      fc.record({ name: fc.constant('fz_new'), columns: fc.constant([{ name: 'id', type: 'int64' }]), buckets: fc.constant(1), bogus: fc.jsonValue({ maxDepth: 1 }) }),
    )
    .map((body) => ({ method: 'POST', path: '/v1/tables', body: json(body) })),
  // Alter: unknown or malformed properties.
  fc
    .tuple(pathName, fc.oneof(notObject, fc.constant({ properties: { 'unknown.property': 'x' } }), fc.constant({ properties: { 'table.log.ttl': '-3d' } }), fc.constant({ properties: 5 }), fc.constant({ other: 1 })))
    .map(([name, body]) => ({ method: 'PATCH', path: `/v1/tables/${name}`, body: json(body) })),
  // Drop and describe of tables that do not exist or cannot be named.
  fc.constantFrom('fz_missing', 'bad%20name', '..', 'x'.repeat(300), '%00').map((name) => ({ method: 'DELETE', path: `/v1/tables/${name}` })),
  pathName.map((name) => ({ method: 'GET', path: `/v1/tables/${name}/nonsense` })),
  // Appends of bad rows (to the log table, and to the others, which refuse appends or do not exist).
  fc
    .tuple(pathName, fc.oneof(notObject, fc.record({ rows: notRows }), fc.constant({ rows: [] }), fc.record({ rows: fc.array(badLogRow, { minLength: 1, maxLength: 5 }) })))
    .map(([name, body]) => ({ method: 'POST', path: `/v1/tables/${name}/append`, body: json(body) })),
  // PK writes and reads of bad rows and keys.
  fc
    .tuple(
      fc.constantFrom('put', 'delete', 'lookup'),
      pathName,
      fc.oneof(
        notObject,
        fc.record({ rows: notObject }),
        fc.record({ keys: notObject }),
        fc.record({ rows: fc.array(badPkRow, { minLength: 1, maxLength: 5 }) }),
        fc.record({ keys: fc.array(badPkRow, { minLength: 1, maxLength: 5 }) }),
        fc.record({ rows: fc.constant([{ k: 'a', v: 1 }]), columns: fc.oneof(notObject, fc.constant(['zz']), fc.constant(['v'])) }),
        fc.record({ colums: fc.constant(['k']), rows: fc.constant([{ k: 'a' }]) }),
      ),
    )
    .map(([operation, name, body]) => ({ method: 'POST', path: `/v1/tables/${name}/${operation}`, body: json(body) })),
  fc
    .tuple(pathName, fc.oneof(notObject, fc.record({ prefixes: notObject }), fc.record({ prefixes: fc.constant([{ k: 'a' }]), limit: fc.constantFrom(0, -1, 1e9, 'x', 2.5) })))
    .map(([name, body]) => ({ method: 'POST', path: `/v1/tables/${name}/prefix-lookup`, body: json(body) })),
  // Scans with one bad query parameter among good ones.
  fc
    .tuple(
      pathName,
      fc.constantFrom<[string, string]>(
        ['bucket', '-1'],
        ['bucket', 'x'],
        ['bucket', '1.5'],
        ['bucket', '99999'],
        ['bucket', ''],
        ['bucket', '1e3'],
        ['offset', '-5'],
        ['offset', 'abc'],
        ['offset', '1e30'],
        ['offset', '0x10'],
        ['limit', '0'],
        ['limit', '-1'],
        ['limit', 'x'],
        ['limit', '1000001'],
        ['limit', '1.5'],
        ['wait', 'forever'],
        ['wait', '-1s'],
        ['wait', '99999s'],
        ['wait', '5parsecs'],
        ['columns', 'zz,yy'],
        ['columns', ',,,'],
        ['partition', 'x'],
        ['partition', '2026120117'],
      ),
    )
    .map(([name, [parameter, value]]) => ({ method: 'GET', path: `/v1/tables/${name}/scan?${new URLSearchParams({ bucket: '0', offset: '0', limit: '10', [parameter]: value }).toString()}` })),
  // The cluster's state for a table that is not one (or twice, or with buckets=false), and groups asked for by a bad id.
  fc
    .constantFrom('/v1/cluster?table=', '/v1/cluster?table=zz_missing', '/v1/cluster?table=a&table=b', `/v1/cluster?buckets=false&table=${LOG_TABLE}`, '/v1/cluster?table=%00', '/v1/cluster?table=a%2Fb', '/v1/kafka/groups?group=', '/v1/kafka/groups?group=a&group=b')
    .map((path) => ({ method: 'GET', path })),
  // A rebalance whose dryRun is not a boolean must move nothing.
  fc.constantFrom('maybe', 'yes', 'TRUE ', '2', 'null', '-1').map((value) => ({ method: 'POST', path: `/v1/cluster/rebalance?dryRun=${encodeURIComponent(value)}` })),
  // Bodies that are not JSON, not UTF-8, or nested very deep, on every write route.
  fc
    .tuple(
      fc.constantFrom('/v1/tables', `/v1/tables/${LOG_TABLE}/append`, `/v1/tables/${PK_TABLE}/put`, `/v1/tables/${PK_TABLE}/delete`, `/v1/tables/${PK_TABLE}/lookup`, `/v1/tables/${PK_TABLE}/prefix-lookup`),
      fc.oneof(
        fc.string({ minLength: 1, maxLength: 40 }).filter((text) => !isJson(text)).map((text) => Buffer.from(text)),
        fc.uint8Array({ minLength: 1, maxLength: 40 }).map((bytes) => Buffer.concat([Buffer.from('{"rows":[{"name":"'), Buffer.from([0xff, ...bytes]), Buffer.from('"}]}')])),
        fc.integer({ min: 1_000, max: 200_000 }).map((depth) => Buffer.from(`{"rows":${'['.repeat(depth)}${']'.repeat(depth)}}`)),
      ),
    )
    .map(([path, body]) => ({ method: 'POST', path, body })),
);

/**
 * The status of a POST that announces `bytes` bytes of body and sends only the first KiB of them: the
 * server must refuse it by its Content-Length, before reading the rest (which never comes).
 */
function statusOfAnnouncedPost(url: string, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': bytes } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
      request.destroy();
    });
    request.on('error', (error) => reject(error));
    request.write(Buffer.alloc(1024, 0x20));
  });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Malformed NATS requests: random bytes, random JSON, unknown ops, known ops with wrongly typed arguments, broken binary framing. */
const natsPayloads: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 64 }).filter((bytes) => bytes[0] !== 0x7b),
  fc.jsonValue({ maxDepth: 3 }).map((value) => Buffer.from(JSON.stringify(value))),
  fc.string({ maxLength: 20 }).map((op) => Buffer.from(JSON.stringify({ op: `zz_${op}` }))),
  fc
    .tuple(
      fc.constantFrom('append', 'appendTable', 'put', 'delete', 'putTable', 'deleteTable', 'lookup', 'prefixLookup', 'scan', 'describeTable', 'createTable', 'alterTable', 'releadBucket', 'tieringHeartbeat'),
      fc.dictionary(fc.constantFrom('table', 'tableId', 'bucket', 'partition', 'rows', 'keys', 'offset', 'limit', 'spec', 'name', 'properties', 'worker', 'tieringEpoch', 'writer'), notObject, { maxKeys: 6 }),
    )
    // A createTable whose spec is not an object, or other ops with wrongly typed fields: never valid.
    .map(([op, args]) => Buffer.from(JSON.stringify({ ...args, op, table: typeof args.table === 'string' ? `zz_${args.table}` : args.table, name: 7 }))),
  fc.uint8Array({ minLength: 0, maxLength: 16 }).map((tail) => Buffer.concat([Buffer.from([0x00, 0xff, 0xff, 0x00, 0x00]), Buffer.from(tail)])),
  // The consumer groups a node coordinates, asked for with buckets that are not a list of bucket numbers or a group id that is not text.
  fc
    .oneof(
      fc.record({ buckets: fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null), fc.object({ maxDepth: 1 })) }),
      fc.record({ buckets: fc.array(fc.constantFrom<unknown>(-1, 1.5, 'x', null, 1e300, [0]), { minLength: 1, maxLength: 3 }) }),
      fc.record({ buckets: fc.constant([0]), group: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 })) }),
    )
    .map((args) => Buffer.from(JSON.stringify({ ...args, op: 'kafkaGroups' }))),
  // Sealed as mink's own callers seal (packages/transport/src/seal.ts): garbage or a wrong request inside a seal that
  // holds, and seals that do not hold (the marker and any bytes after it).
  fc.oneof(fc.uint8Array({ maxLength: 48 }), fc.jsonValue({ maxDepth: 2 }).map((value) => Buffer.from(JSON.stringify(value)))).map((inside) => sealRequest([inside]).message),
  fc.uint8Array({ maxLength: 32 }).map((tail) => Buffer.concat([Buffer.from([SEAL_MARKER]), Buffer.from(tail)])),
);

describe('bad input on a real local cluster', () => {
  const directory = temporaryDirectory('fuzz');
  let cluster: LocalCluster;
  let nc: NatsConnection;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    nc = await connect({ servers: cluster.natsUrl, name: 'mink-fuzz' });
  });

  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
    if (process.env.MINK_E2E_KEEP) console.log('kept', directory.path);
    else directory.remove();
  });

  /** What must not change: the tables, and per bucket the high watermark and the rows read back. */
  async function state(): Promise<unknown> {
    const tables = await http(cluster.gatewayUrl, 'GET', '/v1/tables');
    const names = (tables.body.tables as { name: string }[]).map((table) => table.name).sort();
    const scans: unknown[] = [];
    for (const table of [LOG_TABLE, PK_TABLE]) {
      for (const bucket of [0, 1]) {
        const scanned = await http(cluster.gatewayUrl, 'GET', `/v1/tables/${table}/scan?bucket=${bucket}&offset=0&limit=1000`);
        scans.push([table, bucket, scanned.status, scanned.body.highWatermark, (scanned.body.records as { row: unknown }[]).map((record) => record.row)]);
      }
    }
    const looked = await http(cluster.gatewayUrl, 'POST', `/v1/tables/${PK_TABLE}/lookup`, { keys: [{ k: 'a' }, { k: 'b' }] });
    return { names, scans, looked: looked.body };
  }

  it(`answers malformed HTTP requests with 4xx and NATS requests with typed errors, changing nothing (seed ${SEED})`, async () => {
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: LOG_TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }, { name: 'at', type: 'timestamp' }], buckets: 2 })).status).toBe(201);
    expect((await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: PK_TABLE, columns: [{ name: 'k', type: 'string' }, { name: 'v', type: 'int64' }], primaryKey: ['k'], buckets: 2 })).status).toBe(201);
    await eventually('both tables writable', async () => {
      const appended = await http(cluster.gatewayUrl, 'POST', `/v1/tables/${LOG_TABLE}/append`, { rows: [{ id: 1, name: 'one', at: 1 }, { id: 2, name: 'two', at: 2 }] });
      const put = appended.status === 200 ? await http(cluster.gatewayUrl, 'POST', `/v1/tables/${PK_TABLE}/put`, { rows: [{ k: 'a', v: 1 }, { k: 'b', v: 2 }] }) : undefined;
      return put?.status === 200 ? true : undefined;
    });
    const before = await state();

    const failures: string[] = [];
    const probes = fc.sample(httpProbes, { numRuns: RUNS * 10, seed: SEED });
    for (const probe of probes) {
      const response = await fetch(`${cluster.gatewayUrl}${probe.path}`, {
        method: probe.method,
        headers: probe.body === undefined ? {} : { 'content-type': 'application/json' },
        body: probe.body,
      });
      const text = await response.text();
      if (!ACCEPTABLE.has(response.status)) failures.push(`${probe.method} ${probe.path.slice(0, 120)} ${String(probe.body ?? '').slice(0, 160)} -> ${response.status} ${text.slice(0, 200)}`);
    }
    // One body beyond the size bound: refused by its announced size, before it is read.
    const oversize = await statusOfAnnouncedPost(`${cluster.gatewayUrl}/v1/tables/${LOG_TABLE}/append`, 65 * 1024 * 1024);
    if (oversize !== 413) failures.push(`a 65 MiB body -> ${oversize}`);
    // A create too large for one metadata command: 100 000 columns.
    const wide = await http(cluster.gatewayUrl, 'POST', '/v1/tables', { name: 'fz_wide', columns: Array.from({ length: 100_000 }, (_, index) => ({ name: `c${index}`, type: 'int64' })), buckets: 1 });
    if (wide.status !== 400 && wide.status !== 413) failures.push(`100 000 columns -> ${wide.status} ${JSON.stringify(wide.body).slice(0, 200)}`);

    // NATS: every request subject answers a typed error.
    const status = await http(cluster.gatewayUrl, 'GET', '/v1/cluster');
    const subjects = [SUBJECTS.anyNodeRpc, SUBJECTS.coordinatorRpc, ...(status.body.nodes as { address: string }[]).map((node) => SUBJECTS.nodeRpc(node.address))];
    const payloads = fc.sample(natsPayloads, { numRuns: RUNS, seed: SEED });
    for (const subject of subjects) {
      for (const payload of payloads) {
        let reply: unknown;
        try {
          const message = await nc.request(subject, payload, { timeout: 5_000 });
          // A sealed request is answered sealed (whether its seal held or not), anything else unsealed.
          const data = message.data[0] === SEAL_MARKER ? message.data.subarray(REPLY_SEAL_BYTES) : message.data;
          reply = JSON.parse(Buffer.from(data).toString('utf8'));
        } catch (error) {
          failures.push(`NATS ${subject} ${Buffer.from(payload).toString('utf8').slice(0, 120)} -> ${(error as Error).message}`);
          continue;
        }
        const code = (reply as { error?: { code?: unknown } }).error?.code;
        if (typeof code !== 'string' || code === 'Internal') failures.push(`NATS ${subject} ${Buffer.from(payload).toString('utf8').slice(0, 120)} -> ${JSON.stringify(reply).slice(0, 200)}`);
      }
    }

    expect(failures.slice(0, 20)).toEqual([]);
    for (const entry of cluster.processes()) expect([entry.role, entry.nodeId, entry.running]).toEqual([entry.role, entry.nodeId, true]);
    expect(await state()).toEqual(before);
  });
});
