/**
 * Scan pages served by the bucket leaders' internal HTTP route on a real local cluster (issue 16): scans
 * through the gateway as JSON, NDJSON and Arrow hold exactly the records a scan over NATS returns (a client
 * built with `scanOverHttp: false`), and the data nodes' page counters show that the gateway's pages went over
 * HTTP while the NATS client's did not. Then a scan whose bucket leader gets `kill -9` between two pages
 * completes from the new leader with every record exactly once, and a long poll the gateway had parked at the
 * killed leader is answered by an append committed by the new one.
 */
import { tableFromIPC } from 'apache-arrow';
import { MinkClient } from '@mink/client';
import { LIMITS } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import type { ScanPage, ScannedRecord } from '@mink/protocol';
import { SHORT_LEASE_CLUSTER, eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(300_000);

const BUCKETS = 2;
/** Enough that each bucket spans several pages (a page holds at most LIMITS.scanPageBytesMax). */
const ROWS = 100_000;
/** Rows of the one-bucket table whose leader is killed: several pages. */
const MOVING_ROWS = 90_000;
const PAYLOAD = 'p'.repeat(200);

describe('scan pages over the leaders\' HTTP route', () => {
  const directory = temporaryDirectory('scan-http');
  let cluster: LocalCluster | null = null;
  let viaHttp: MinkClient | null = null;
  let viaNats: MinkClient | null = null;

  afterAll(async () => {
    await viaHttp?.close();
    await viaNats?.close();
    await cluster?.stop();
    directory.remove();
  });

  async function createTable(name: string, buckets: number): Promise<void> {
    const created = await http(cluster!.gatewayUrl, 'POST', '/v1/tables', {
      name,
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'payload', type: 'string' },
      ],
      bucketKey: ['id'],
      buckets,
    });
    expect(created.status).toBe(201);
    await openBuckets(name, buckets);
  }

  /** The cluster status once every bucket of `table` is open, and `condition` holds. */
  async function openBuckets(table: string, buckets: number, condition: (status: any) => boolean = () => true): Promise<any> {
    return eventually(`every bucket of ${table} open`, async () => {
      const status = (await http(cluster!.gatewayUrl, 'GET', '/v1/cluster')).body;
      const own = status.buckets.filter((bucket: any) => bucket.table === table);
      return own.length === buckets && own.every((bucket: any) => bucket.state === 'open') && condition(status) ? status : undefined;
    }, 60_000);
  }

  async function append(table: string, from: number, count: number): Promise<void> {
    for (let start = from; start < from + count; start += 5_000) {
      const rows = Array.from({ length: Math.min(5_000, from + count - start) }, (_, index) => ({ id: String(start + index), payload: `${PAYLOAD}${start + index}` }));
      await viaHttp!.table(table).append(rows);
    }
  }

  /** Scan pages a data node has served over its internal HTTP route (its Prometheus counter). */
  async function httpPagesOf(nodeId: string): Promise<number> {
    const port = cluster!.process('data-node', nodeId).ports.http;
    const text = (await http(`http://127.0.0.1:${port}`, 'GET', '/metrics')).body as string;
    return Number(/^mink_internal_scan_pages_total(?:\{[^}]*\})? (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  async function httpPagesOfLiveNodes(): Promise<number> {
    const running = cluster!.processes().filter((entry) => entry.role === 'data-node' && entry.running);
    const counts = await Promise.all(running.map((entry) => httpPagesOf(entry.nodeId!)));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  async function fetchScan(path: string, accept?: string): Promise<{ status: number; headers: Headers; bytes: Uint8Array }> {
    const response = await fetch(`${cluster!.gatewayUrl}${path}`, { headers: accept ? { accept } : {} });
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) };
  }

  /** The records of Arrow scan pages as [offset, id] pairs. */
  function offsetsAndIdsOf(pages: readonly ScanPage[]): [number, string][] {
    return pages.flatMap((page) => {
      const table = tableFromIPC(page.batch);
      const offsets = Array.from(table.getChild('_offset')!.toArray() as BigInt64Array, Number);
      const ids = Array.from(table.getChild('id')!.toArray() as BigInt64Array, String);
      return offsets.map((offset, index): [number, string] => [offset, ids[index]!]);
    });
  }

  it('answers JSON, NDJSON and Arrow scans through the gateway from pages sent over HTTP, with exactly the records a scan over NATS returns', async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, ...SHORT_LEASE_CLUSTER });
    viaHttp = await MinkClient.connect({ servers: cluster.natsUrl });
    viaNats = await MinkClient.connect({ servers: cluster.natsUrl, scanOverHttp: false });
    await createTable('events', BUCKETS);
    await append('events', 0, ROWS);

    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      const pagesBeforeNats = await httpPagesOfLiveNodes();
      const overNats = await viaNats.table('events').scan({ bucket, offset: 0, limit: 100_000 });
      expect(await httpPagesOfLiveNodes()).toBe(pagesBeforeNats);
      const expected: ScannedRecord[] = overNats.records;
      expect(expected.map((record) => record.offset)).toEqual(expected.map((_, index) => index));
      // Each bucket spans several HTTP pages: the gateway streams its reply across them.
      expect(expected.length * PAYLOAD.length).toBeGreaterThan(LIMITS.scanPageBytesMax);

      const pagesBefore = await httpPagesOfLiveNodes();
      const json = await fetchScan(`/v1/tables/events/scan?bucket=${bucket}&offset=0&limit=100000`);
      expect(json.status).toBe(200);
      const body = JSON.parse(new TextDecoder().decode(json.bytes));
      expect(body).toEqual({ records: expected, nextOffset: overNats.nextOffset, highWatermark: overNats.highWatermark });
      expect(json.headers.get('mink-next-offset')).toBe(String(expected.length));
      expect(json.headers.get('mink-high-watermark')).toBe(String(expected.length));
      expect(await httpPagesOfLiveNodes()).toBeGreaterThanOrEqual(pagesBefore + 2);

      const ndjson = await fetchScan(`/v1/tables/events/scan?bucket=${bucket}&offset=7&limit=100000`, 'application/x-ndjson');
      expect(ndjson.status).toBe(200);
      const lines = new TextDecoder().decode(ndjson.bytes).split('\n');
      expect(lines.pop()).toBe('');
      expect(lines.map((line) => JSON.parse(line))).toEqual(expected.slice(7));

      const arrow = await fetchScan(`/v1/tables/events/scan?bucket=${bucket}&offset=3&limit=100000`, 'application/vnd.apache.arrow.stream');
      expect(arrow.status).toBe(200);
      expect(arrow.headers.get('mink-next-offset')).toBe(String(expected.length));
      const table = tableFromIPC(arrow.bytes);
      expect(table.schema.fields.map((field) => field.name)).toEqual(['id', 'payload', '_offset', '_timestamp']);
      expect(Array.from(table.getChild('_offset')!.toArray() as BigInt64Array, Number)).toEqual(expected.slice(3).map((record) => record.offset));
      expect(Array.from(table.getChild('id')!.toArray() as BigInt64Array, String)).toEqual(expected.slice(3).map((record) => record.row.id));
      expect(table.getChild('payload')!.toArray()).toEqual(expected.slice(3).map((record) => record.row.payload));
      expect(Array.from(table.getChild('_timestamp')!.toArray() as BigInt64Array | Float64Array, Number)).toEqual(expected.slice(3).map((record) => record.timestamp));

      // A projection and a limit, and the TypeScript client reading Arrow over HTTP itself.
      const limited = tableFromIPC((await fetchScan(`/v1/tables/events/scan?bucket=${bucket}&offset=11&limit=5&columns=id`, 'application/vnd.apache.arrow.stream')).bytes);
      expect(limited.schema.fields.map((field) => field.name)).toEqual(['id', '_offset', '_timestamp']);
      expect(Array.from(limited.getChild('id')!.toArray() as BigInt64Array, String)).toEqual(expected.slice(11, 16).map((record) => record.row.id));
      const viaClient = await viaHttp.table('events').scanArrow({ bucket, offset: 0, limit: 100_000, columns: ['id'] });
      expect(Array.from(viaClient.table.getChild('id')!.toArray() as BigInt64Array, String)).toEqual(expected.map((record) => record.row.id));
    }

    // Errors of the HTTP route reach an HTTP caller as they did over NATS (the projections are refused by the node).
    for (const query of ['wait=31s', 'limit=0', 'columns=nope', 'columns=id,id']) {
      const refused = await http(cluster.gatewayUrl, 'GET', `/v1/tables/events/scan?bucket=0&${query}`);
      expect([query, refused.status, refused.body.error?.code]).toEqual([query, 400, 'InvalidArgument']);
    }
  });

  it('completes a scan whose leader is killed between two pages from the new leader, and answers a long poll parked at the dead one', async () => {
    await createTable('moving', 1);
    await append('moving', 0, MOVING_ROWS);
    const before = await openBuckets('moving', 1);
    const victim: string = before.buckets.find((bucket: any) => bucket.table === 'moving').leader;

    const scan = viaHttp!.table('moving').scanPages({ bucket: 0, offset: 0, limit: 100_000 });
    const first = await scan.next();
    expect(first.done).toBe(false);
    expect(first.value.nextOffset).toBeLessThan(MOVING_ROWS / 2);
    const pages: ScanPage[] = [first.value];
    // A JSON long poll at the high watermark, through the gateway, to the leader about to die.
    const parked = http(cluster!.gatewayUrl, 'GET', `/v1/tables/moving/scan?bucket=0&offset=${MOVING_ROWS}&limit=10&wait=30s`);

    cluster!.kill('data-node', victim, 'SIGKILL');
    const after = await openBuckets('moving', 1, (status) => status.buckets.some((bucket: any) => bucket.table === 'moving' && bucket.leader !== victim));
    const successor: string = after.buckets.find((bucket: any) => bucket.table === 'moving').leader;

    for await (const page of scan) pages.push(page);
    const scanned = offsetsAndIdsOf(pages);
    expect(scanned).toEqual(Array.from({ length: MOVING_ROWS }, (_, offset) => [offset, String(offset)]));
    expect(pages.at(-1)!.nextOffset).toBe(MOVING_ROWS);
    // The pages after the kill came from the new leader's HTTP route.
    expect(await httpPagesOf(successor)).toBeGreaterThan(0);

    const late = await viaHttp!.table('moving').append([{ id: String(MOVING_ROWS), payload: 'late' }]);
    expect(late.buckets.map((bucket) => bucket.baseOffset)).toEqual([MOVING_ROWS]);
    const woken = await parked;
    expect(woken.status).toBe(200);
    expect(woken.body.records.map((record: any) => [record.offset, record.row.id, record.row.payload])).toEqual([[MOVING_ROWS, String(MOVING_ROWS), 'late']]);
  });
});
