/**
 * The internal routes and /metrics of a secure local cluster (issue 42, item 3), on real processes: a data
 * node answers its internal scan route (POST /internal/v1/scan) only to a caller sending the cluster secret
 * (`Authorization: Cluster <secret>`), refusing no header and a wrong secret with 401 Unauthenticated, and
 * refusing a 50 MiB body without credentials before reading it while it goes on serving; with the secret
 * the route answers the page of the rows appended. The gateway, given the secret, still scans over that
 * route (the node's page counter moves, no 401 is counted), and a TypeScript client without the secret
 * scans the same rows over NATS after one 401 per node. Every service's /metrics asks for the metrics
 * token, while /healthz and /readyz stay open. The services get the paths of the secret files by
 * environment, never a secret, and no log holds one.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { HttpScanPages, MinkClient } from '@mink/client';
import { ENV } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { flood } from '@mink/testing';
import { INTERNAL_SCAN_PATH, clusterAuthorizationOf, type ScanRequest } from '@mink/protocol';
import { ONE_NODE_CLUSTER, eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(180_000);

const ROWS = Array.from({ length: 40 }, (_, index) => ({ id: String(index), name: `row ${index}` }));

/** The sum of the samples of metric `name` in Prometheus text whose labels include `labels`. */
function sampleSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const own = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
    if (Object.entries(labels).every(([key, value]) => own[key] === value)) total += Number(match[3]);
  }
  return total;
}

/** One request with headers of our choosing; the answer's status and text. */
async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await fetch(url, { method: init.method ?? 'GET', headers: init.headers ?? {}, ...(init.body === undefined ? {} : { body: init.body }) });
  return { status: response.status, text: await response.text(), headers: response.headers };
}


/** The environment a process was started with (what `/proc/<pid>/environ` shows to its user). */
function environmentOf(pid: number): Map<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter((entry) => entry.includes('='));
  return new Map(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
}

describe('the internal routes and /metrics of a secure cluster', () => {
  const directory = temporaryDirectory('internal-routes');
  let cluster: LocalCluster | null = null;
  let outsideClient: MinkClient | null = null;
  let pages: HttpScanPages | null = null;

  afterAll(async () => {
    pages?.close();
    await outsideClient?.close().catch(() => undefined);
    await cluster?.stop();
    directory.remove();
  });

  it('asks for the cluster secret on the internal scan route and the metrics token on /metrics, and every scan path still returns the rows', async () => {
    cluster = await LocalCluster.start({ ...ONE_NODE_CLUSTER, dataDir: directory.path, secure: true });
    const clusterSecret = readFileSync(cluster.clusterSecretFile!, 'utf8').trim();
    const metricsToken = readFileSync(cluster.metricsTokenFile!, 'utf8').trim();
    const adminToken = readFileSync(cluster.adminTokenFile!, 'utf8').trim();
    expect([clusterSecret, metricsToken]).toEqual([expect.stringMatching(/^mink-cluster-[0-9a-f]{32}$/), expect.stringMatching(/^mink-metrics-[0-9a-f]{32}$/)]);
    const gateway = cluster.gatewayUrl;
    const node = `http://127.0.0.1:${cluster.process('data-node', '1').ports.http}`;
    const nodeMetrics = async (): Promise<string> => (await call(`${node}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text;

    // A table with rows, through the gateway (which asks for its own admin token).
    const created = await http(gateway, 'POST', '/v1/tables', { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], buckets: 1 }, adminToken);
    expect(created.status).toBe(201);
    await eventually('the append to events', async () => {
      const appended = await http(gateway, 'POST', '/v1/tables/events/append', { rows: ROWS }, adminToken);
      return appended.status === 200 ? appended.body : undefined;
    }, 60_000);
    const tableId = (await http(gateway, 'GET', '/v1/tables/events', undefined, adminToken)).body.tableId as number;
    expect(tableId).toEqual(expect.any(Number));
    const request: ScanRequest = { op: 'scan', table: 'events', tableId, partition: null, bucket: 0, offset: 0, limit: 1_000 };
    const scanBody = JSON.stringify(request);

    // (a) No header, a wrong secret, the right secret under another scheme: 401 with the error body, and nothing scanned.
    const pagesBefore = sampleSum(await nodeMetrics(), 'mink_internal_scan_pages_total');
    for (const authorization of [undefined, clusterAuthorizationOf('not-the-cluster-secret-0123'), `Bearer ${clusterSecret}`]) {
      const refused = await call(`${node}${INTERNAL_SCAN_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body: scanBody });
      expect([refused.status, JSON.parse(refused.text).error.code, refused.headers.get('www-authenticate')]).toEqual([401, 'Unauthenticated', 'Cluster realm="mink"']);
    }
    expect(sampleSum(await nodeMetrics(), 'mink_internal_scan_pages_total')).toBe(pagesBefore);

    // A 50 MiB body without credentials is refused before it is read: the 401 comes while most of it is
    // still to be sent (a node reading it first would answer only after all of it), and the node closes the
    // connection. A caller that goes on sending regardless cannot get the body in: the node reads no more of
    // it and cuts the connection. The node goes on serving.
    const huge = 50 * 1024 * 1024;
    const nodePort = cluster.process('data-node', '1').ports.http;
    const polite = await flood(nodePort, INTERNAL_SCAN_PATH, huge, true);
    expect([polite.status, JSON.parse(polite.body).error.code, polite.closedByServer]).toEqual([401, 'Unauthenticated', true]);
    expect(polite.writtenBeforeAnswer).toBeLessThan(huge / 3);
    expect(polite.elapsedMs).toBeLessThan(10_000);
    const pushy = await flood(nodePort, INTERNAL_SCAN_PATH, huge, false);
    expect([pushy.status, pushy.closedByServer]).toEqual([401, true]);
    expect(pushy.written).toBeLessThan(huge / 2);
    expect(pushy.elapsedMs).toBeLessThan(10_000);
    expect((await call(`${node}/healthz`)).status).toBe(200);
    expect(cluster.process('data-node', '1').running).toBe(true);

    // (b) The right secret: 200 and the page of every row, read as Arrow by the client's HttpScanPages.
    pages = new HttpScanPages({ clusterSecret });
    const page = await pages.fetch(`127.0.0.1:${cluster.process('data-node', '1').ports.http}`, request, 10_000)!;
    expect([page.records, page.nextOffset, page.highWatermark]).toEqual([ROWS.length, ROWS.length, ROWS.length]);
    const arrow = tableFromIPC(page.batch);
    const scannedOverHttp = Array.from({ length: arrow.numRows }, (_, index) => ({ id: String(arrow.getChild('id')!.get(index)), name: arrow.getChild('name')!.get(index) as string }));
    expect(scannedOverHttp).toEqual(ROWS);
    const raw = await call(`${node}${INTERNAL_SCAN_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: clusterAuthorizationOf(clusterSecret) }, body: scanBody });
    expect([raw.status, raw.headers.get('content-type'), raw.headers.get('mink-records')]).toEqual([200, 'application/vnd.apache.arrow.stream', String(ROWS.length)]);

    // (c) The gateway has the secret: its scans keep the HTTP path (pages served over it, no 401 counted).
    const beforeGateway = await nodeMetrics();
    const viaGateway = await http(gateway, 'GET', '/v1/tables/events/scan?bucket=0&offset=0&limit=1000', undefined, adminToken);
    expect(viaGateway.status).toBe(200);
    expect(viaGateway.body.records.map((record: { row: unknown }) => record.row)).toEqual(ROWS);
    const afterGateway = await nodeMetrics();
    expect(sampleSum(afterGateway, 'mink_internal_scan_pages_total')).toBe(sampleSum(beforeGateway, 'mink_internal_scan_pages_total') + 1);
    const refusedScans = (text: string) => sampleSum(text, 'mink_http_requests_total', { route: INTERNAL_SCAN_PATH, status: '401' });
    expect(refusedScans(afterGateway)).toBe(refusedScans(beforeGateway));

    // (d) A client outside the cluster (NATS credentials, no cluster secret): one 401, then the rows over NATS,
    // and no more asking over HTTP for its next scan.
    const natsCredentials = cluster.natsCredentials!;
    outsideClient = await MinkClient.connect({ servers: cluster.natsUrl, user: natsCredentials.user, pass: natsCredentials.password });
    const outside = await outsideClient.table('events').scan({ bucket: 0, offset: 0, limit: 1_000 });
    expect(outside.records.map((record) => record.row)).toEqual(ROWS);
    const afterOutside = await nodeMetrics();
    expect(refusedScans(afterOutside)).toBe(refusedScans(afterGateway) + 1);
    expect(sampleSum(afterOutside, 'mink_internal_scan_pages_total')).toBe(sampleSum(afterGateway, 'mink_internal_scan_pages_total'));
    expect((await outsideClient.table('events').scan({ bucket: 0, offset: 10, limit: 5 })).records.map((record) => record.row)).toEqual(ROWS.slice(10, 15));
    expect(refusedScans(await nodeMetrics())).toBe(refusedScans(afterOutside));

    // (e) /metrics of every service asks for the metrics token; /healthz and /readyz stay open.
    const services = cluster.processes().filter((entry) => ['coordinator', 'data-node', 'gateway', 'tiering-worker'].includes(entry.role));
    expect(services.map((entry) => entry.role).sort()).toEqual(['coordinator', 'data-node', 'gateway', 'tiering-worker']);
    for (const service of services) {
      const base = `http://127.0.0.1:${service.ports.http}`;
      const anonymous = await call(`${base}/metrics`);
      const wrong = await call(`${base}/metrics`, { headers: { authorization: 'Bearer not-the-metrics-token-0123' } });
      const withClusterSecret = await call(`${base}/metrics`, { headers: { authorization: `Bearer ${clusterSecret}` } });
      const scraped = await call(`${base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
      expect([service.role, anonymous.status, JSON.parse(anonymous.text).error.code, anonymous.headers.get('www-authenticate'), wrong.status, withClusterSecret.status]).toEqual([
        service.role,
        401,
        'Unauthenticated',
        'Bearer realm="mink"',
        401,
        401,
      ]);
      expect([service.role, scraped.status, scraped.text]).toEqual([service.role, 200, expect.stringContaining('process_cpu_user_seconds_total')]);
      expect([service.role, (await call(`${base}/healthz`)).status, (await call(`${base}/readyz`)).status]).toEqual([service.role, 200, 200]);
    }
    // The data node's metrics name the table it holds, never a table a refused request made up.
    const refusedMadeUp = await call(`${node}${INTERNAL_SCAN_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: clusterAuthorizationOf(clusterSecret) },
      body: JSON.stringify({ ...request, table: 'made-up-table-name', tableId: 999_999 }),
    });
    expect(refusedMadeUp.status).toBeGreaterThanOrEqual(400);
    const finalMetrics = await nodeMetrics();
    expect(finalMetrics).toContain('table="events"');
    expect(finalMetrics).not.toContain('made-up-table-name');

    // The services got the paths of the secret files, never a secret: the data node and the gateway the
    // cluster secret's, every service the metrics token's.
    for (const service of services) {
      const environment = environmentOf(service.pid);
      const expectsClusterSecret = service.role === 'data-node' || service.role === 'gateway';
      expect([service.role, environment.get(ENV.clusterSecretFile), environment.get(ENV.metricsTokenFile)]).toEqual([
        service.role,
        expectsClusterSecret ? cluster.clusterSecretFile : undefined,
        cluster.metricsTokenFile,
      ]);
      const values = [...environment.values()].join('\n');
      expect([service.role, [clusterSecret, metricsToken].filter((secret) => values.includes(secret))]).toEqual([service.role, []]);
    }

    // Nor did any process log one, with every refusal and scan above behind it.
    await outsideClient.close();
    outsideClient = null;
    await cluster.stop();
    cluster = null;
    const logDir = join(directory.path, 'logs');
    const logs = readdirSync(logDir).map((name) => readFileSync(join(logDir, name), 'utf8'));
    expect(logs.join('').length).toBeGreaterThan(1_000);
    expect([clusterSecret, metricsToken].filter((secret) => logs.some((text) => text.includes(secret)))).toEqual([]);
  });
});
