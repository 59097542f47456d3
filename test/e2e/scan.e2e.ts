/**
 * Scans on a real local cluster (issue "Read path at the speed of S3"): one scan of a whole bucket with a
 * large limit is streamed across several pages and returns exactly what paging with small limits returns,
 * as JSON, NDJSON and an Arrow IPC stream read by apache-arrow (projected, with `_offset`, `_timestamp`, and
 * `_change` on a PK changelog); a scan waiting at the high watermark (`wait=`) is answered by the commit of
 * an append, and one with nothing to wait for returns empty at its deadline; bad parameters are 400s.
 */
import { tableFromIPC } from 'apache-arrow';
import { MinkClient } from '@mink/client';
import { LIMITS } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { bucketOfRow } from '@mink/records';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

const BUCKETS = 2;
/** Enough that each bucket holds more than one page (a page fits one NATS message, 8 MiB on a local cluster). */
const ROWS = 96_000;
const PAYLOAD = 'x'.repeat(200);

describe('scans on a real local cluster', () => {
  const directory = temporaryDirectory('scan');
  let cluster: LocalCluster | null = null;
  let client: MinkClient | null = null;

  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
    directory.remove();
  });

  /** The records of a bucket paged with small limits, as the JSON API always answered. */
  async function pagedJson(gateway: string, table: string, bucket: number, columns = ''): Promise<any[]> {
    const records: any[] = [];
    let offset = 0;
    for (;;) {
      const page = (await http(gateway, 'GET', `/v1/tables/${table}/scan?bucket=${bucket}&offset=${offset}&limit=1000${columns}`)).body;
      records.push(...page.records);
      if (page.nextOffset >= page.highWatermark) return records;
      offset = page.nextOffset;
    }
  }

  async function fetchScan(gateway: string, path: string, accept?: string): Promise<{ status: number; headers: Headers; bytes: Uint8Array }> {
    const response = await fetch(`${gateway}${path}`, { headers: accept ? { accept } : {} });
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) };
  }

  it('streams large scans as JSON, NDJSON and Arrow with exactly the stored records, and long-polls at the high watermark', async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, nodes: 2, coordinators: 1, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 3_000, coordinatorTickMs: 500 });
    const gateway = cluster.gatewayUrl;
    const created = await http(gateway, 'POST', '/v1/tables', {
      name: 'events',
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'payload', type: 'string' },
      ],
      bucketKey: ['id'],
      buckets: BUCKETS,
    });
    expect(created.status).toBe(201);
    await eventually('buckets open', async () => {
      const status = (await http(gateway, 'GET', '/v1/cluster')).body;
      return status.buckets.length === BUCKETS && status.buckets.every((bucket: any) => bucket.state === 'open') ? true : undefined;
    });
    client = await MinkClient.connect({ servers: cluster.natsUrl });
    const events = client.table('events');
    for (let start = 0; start < ROWS; start += 8_000) {
      await events.append(Array.from({ length: 8_000 }, (_, index) => ({ id: String(start + index), payload: `${PAYLOAD}${start + index}` })));
    }

    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      const expected = await pagedJson(gateway, 'events', bucket);
      expect(expected.map((record) => record.offset)).toEqual(expected.map((_, index) => index));
      // Each bucket holds more than one page: the scans below are streamed across pages.
      expect(expected.length * PAYLOAD.length).toBeGreaterThan(LIMITS.natsMaxPayloadBytes);

      const json = await fetchScan(gateway, `/v1/tables/events/scan?bucket=${bucket}&offset=0&limit=100000`);
      expect(json.status).toBe(200);
      const body = JSON.parse(new TextDecoder().decode(json.bytes));
      expect(body.records).toEqual(expected);
      expect(body).toMatchObject({ nextOffset: expected.length, highWatermark: expected.length });
      expect(json.headers.get('mink-next-offset')).toBe(String(expected.length));
      expect(json.headers.get('mink-high-watermark')).toBe(String(expected.length));

      const ndjson = await fetchScan(gateway, `/v1/tables/events/scan?bucket=${bucket}&offset=5&limit=100000`, 'application/x-ndjson');
      expect(ndjson.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
      const lines = new TextDecoder().decode(ndjson.bytes).split('\n');
      expect(lines.pop()).toBe('');
      expect(lines.map((line) => JSON.parse(line))).toEqual(expected.slice(5));

      const arrow = await fetchScan(gateway, `/v1/tables/events/scan?bucket=${bucket}&offset=3&limit=100000`, 'application/vnd.apache.arrow.stream');
      expect(arrow.headers.get('content-type')).toBe('application/vnd.apache.arrow.stream');
      expect(arrow.headers.get('mink-next-offset')).toBe(String(expected.length));
      const table = tableFromIPC(arrow.bytes);
      expect(table.schema.fields.map((field) => field.name)).toEqual(['id', 'payload', '_offset', '_timestamp']);
      expect(table.numRows).toBe(expected.length - 3);
      expect(Array.from(table.getChild('_offset')!.toArray() as BigInt64Array, Number)).toEqual(expected.slice(3).map((record) => record.offset));
      expect(Array.from(table.getChild('id')!.toArray() as BigInt64Array, String)).toEqual(expected.slice(3).map((record) => record.row.id));
      expect(table.getChild('payload')!.toArray()).toEqual(expected.slice(3).map((record) => record.row.payload));
      expect(Array.from(table.getChild('_timestamp')!.toArray() as BigInt64Array | Float64Array, Number)).toEqual(expected.slice(3).map((record) => record.timestamp));

      // A limit smaller than what is stored ends there, in every form; a projection keeps only those columns.
      const limited = await fetchScan(gateway, `/v1/tables/events/scan?bucket=${bucket}&offset=10&limit=7&columns=id`, 'application/vnd.apache.arrow.stream');
      const projected = tableFromIPC(limited.bytes);
      expect(projected.schema.fields.map((field) => field.name)).toEqual(['id', '_offset', '_timestamp']);
      expect(Array.from(projected.getChild('id')!.toArray() as BigInt64Array, String)).toEqual(expected.slice(10, 17).map((record) => record.row.id));
      expect(limited.headers.get('mink-next-offset')).toBe('17');
      // The TypeScript client reads the same records as Arrow.
      const viaClient = await events.scanArrow({ bucket, offset: 0, limit: 100_000, columns: ['id'] });
      expect(viaClient.nextOffset).toBe(expected.length);
      expect(Array.from(viaClient.table.getChild('id')!.toArray() as BigInt64Array, String)).toEqual(expected.map((record) => record.row.id));
    }

    // Long-poll: a scan at the high watermark is answered by the commit of the next append to its bucket.
    const highWatermark = (await http(gateway, 'GET', '/v1/tables/events/scan?bucket=0&offset=0&limit=1')).body.highWatermark;
    const idOfBucket0 = Array.from({ length: 1_000 }, (_, index) => String(ROWS + index)).find((id) => bucketOfRow({ id: BigInt(id) }, ['id'], BUCKETS) === 0)!;
    const startedAt = Date.now();
    const waiting = http(gateway, 'GET', `/v1/tables/events/scan?bucket=0&offset=${highWatermark}&limit=10&wait=20s`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late = await events.append([{ id: idOfBucket0, payload: 'late' }]);
    expect(late.buckets.map((bucket) => [bucket.bucket, bucket.baseOffset])).toEqual([[0, highWatermark]]);
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(woken.body.records.map((record: any) => [record.offset, record.row.id, record.row.payload])).toEqual([[highWatermark, idOfBucket0, 'late']]);
    // Answered by the commit, not at the 20 s deadline.
    expect(Date.now() - startedAt).toBeLessThan(15_000);

    // With nothing appended, a waiting scan returns empty at its deadline.
    const empty = await http(gateway, 'GET', `/v1/tables/events/scan?bucket=0&offset=${highWatermark + 1}&limit=10&wait=300ms`);
    expect(empty.body).toEqual({ records: [], nextOffset: highWatermark + 1, highWatermark: highWatermark + 1 });

    for (const query of ['wait=forever', 'wait=31s', 'limit=100001', 'limit=0', 'columns=nope']) {
      const refused = await http(gateway, 'GET', `/v1/tables/events/scan?bucket=0&${query}`);
      expect([query, refused.status, refused.body.error?.code]).toEqual([query, 400, 'InvalidArgument']);
    }
  });

  it('returns a PK table\'s changelog as Arrow with its change types', async () => {
    const gateway = cluster!.gatewayUrl;
    const created = await http(gateway, 'POST', '/v1/tables', {
      name: 'users',
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'name', type: 'string' },
      ],
      primaryKey: ['id'],
      buckets: 1,
    });
    expect(created.status).toBe(201);
    await eventually('users open', async () => {
      const status = (await http(gateway, 'GET', '/v1/cluster')).body;
      return status.buckets.some((bucket: any) => bucket.table === 'users' && bucket.state === 'open') ? true : undefined;
    });
    await eventually('put accepted', async () => ((await http(gateway, 'POST', '/v1/tables/users/put', { rows: [{ id: '1', name: 'ann' }] })).status === 200 ? true : undefined));
    expect((await http(gateway, 'POST', '/v1/tables/users/put', { rows: [{ id: '1', name: 'anna' }] })).status).toBe(200);
    expect((await http(gateway, 'POST', '/v1/tables/users/delete', { keys: [{ id: '1' }] })).status).toBe(200);

    const json = (await http(gateway, 'GET', '/v1/tables/users/scan?bucket=0&offset=0&limit=100')).body;
    expect(json.records.map((record: any) => `${record.changeType}${record.row.name}`)).toEqual(['+Iann', '-Uann', '+Uanna', '-Danna']);
    const arrow = await fetchScan(gateway, '/v1/tables/users/scan?bucket=0&offset=0&limit=100', 'application/vnd.apache.arrow.stream');
    const table = tableFromIPC(arrow.bytes);
    expect(table.schema.fields.map((field) => field.name)).toEqual(['id', 'name', '_offset', '_timestamp', '_change']);
    expect(table.getChild('_change')!.toArray()).toEqual(json.records.map((record: any) => record.changeType));
    expect(table.getChild('name')!.toArray()).toEqual(json.records.map((record: any) => record.row.name));
  });
});
