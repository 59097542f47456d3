import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV } from '@mink/config';
import { CLUSTER_ROLES, LocalCluster, SERVICE_ROLES, fixedPortsOf, readClusterFile, type ClusterProcessInfo } from './local-cluster';
import { freePort } from './ports';
import { eventually } from '@mink/testing';

// Starting a cluster of real (stand-in) processes takes seconds on a loaded machine; a test that timed out
// mid-start would also leave its processes behind, since afterEach only stops a cluster that finished starting.
jest.setTimeout(60_000);

/**
 * LocalCluster against a stand-in repository whose four "apps" are tiny HTTP servers, so the process
 * management (ports, environment, cluster.json, kill, pause, restart, stop) is tested with a real
 * nats-server and S3 server but without depending on the real apps being built.
 */

// Each stand-in app answers 503 on /readyz for a moment and then 200, echoes its environment on
// /healthz, and exits 0 on SIGTERM like the real services. With FAKE_FAIL_ROLE set to its role it
// prints a line and exits with code 3, to exercise the failed-start path.
const FAKE_APP_SOURCE = `
const http = require('node:http');
const path = require('node:path');
const role = path.basename(path.dirname(path.dirname(__filename)));
if (process.env.FAKE_FAIL_ROLE === role) {
  console.log('fake ' + role + ' refuses to start');
  process.exit(3);
}
const startedAtMs = Date.now();
const server = http.createServer((request, response) => {
  if (request.url === '/readyz') {
    response.statusCode = Date.now() - startedAtMs > 200 ? 200 : 503;
    response.end();
    return;
  }
  response.setHeader('content-type', 'application/json');
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('MINK_')));
  response.end(JSON.stringify({ role, env }));
});
server.listen(Number(process.env.MINK_HTTP_PORT), '127.0.0.1', () => console.log('fake ' + role + ' listening'));
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
`;

function makeFakeRepository(root: string): void {
  writeFileSync(join(root, 'pnpm-workspace.yaml'), 'packages: []\n');
  for (const role of SERVICE_ROLES) {
    mkdirSync(join(root, 'apps', role, 'dist'), { recursive: true });
    writeFileSync(join(root, 'apps', role, 'dist', 'main.js'), FAKE_APP_SOURCE);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function fetchJson(url: string, timeoutMs = 2_000): Promise<{ role: string; env: Record<string, string> }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return (await response.json()) as { role: string; env: Record<string, string> };
}

describe('fixedPortsOf', () => {
  it.each([
    ['every port picked free', { gatewayPort: 0, grpcPort: 0, kafkaPort: 0, nodes: 3, natsPort: undefined, s3Port: undefined }, []],
    ['mink up defaults: the gateway, gRPC and a Kafka port per data node', { gatewayPort: 8080, grpcPort: 50051, kafkaPort: 9092, nodes: 3, natsPort: undefined, s3Port: undefined }, [8080, 50051, 9092, 9093, 9094]],
    ['fixed NATS and S3 ports, Kafka ports picked free', { gatewayPort: 0, grpcPort: 0, kafkaPort: 0, nodes: 2, natsPort: 4333, s3Port: 9000 }, [4333, 9000]],
    ['one data node', { gatewayPort: 0, grpcPort: 0, kafkaPort: 31000, nodes: 1, natsPort: undefined, s3Port: undefined }, [31000]],
  ])('%s', (_case, options, expected) => {
    expect(fixedPortsOf(options)).toEqual(expected);
  });
});

describe('LocalCluster', () => {
  let workDirectory: string;
  let repoRoot: string;
  let dataDir: string;
  let cluster: LocalCluster | undefined;
  const logLines: string[] = [];

  beforeEach(() => {
    workDirectory = mkdtempSync(join(tmpdir(), 'mink-local-cluster-'));
    repoRoot = join(workDirectory, 'repo');
    dataDir = join(workDirectory, 'data');
    mkdirSync(repoRoot);
    makeFakeRepository(repoRoot);
    logLines.length = 0;
  });

  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
    rmSync(workDirectory, { recursive: true, force: true });
  });

  async function startCluster(extra: { env?: Record<string, string>; natsCluster?: number } = {}): Promise<LocalCluster> {
    cluster = await LocalCluster.start({
      natsCluster: extra.natsCluster,
      dataDir,
      repoRoot,
      nodes: 2,
      coordinators: 1,
      gatewayPort: 0,
      kafkaPort: kafkaBasePort,
      leaseTtlMs: 3_000,
      coordinatorTickMs: 500,
      logger: (line) => logLines.push(line),
      env: extra.env,
    });
    return cluster;
  }

  let kafkaBasePort: number;
  beforeEach(async () => {
    // A free port with room above it; the stand-in data nodes never bind their Kafka port.
    kafkaBasePort = await freePort();
  });

  it('starts every role in order, gives services their environment and ports, and lists them in cluster.json', async () => {
    // Proves the start contract: roles in order, one ready line each, MINK_* variables and ports as documented.
    const started = await startCluster();
    const processes = started.processes();
    expect(processes.map((entry) => [entry.role, entry.nodeId])).toEqual([
      ['nats', null],
      ['s3', null],
      ['coordinator', 'coordinator-1'],
      ['data-node', '1'],
      ['data-node', '2'],
      ['gateway', 'gateway-1'],
      ['tiering-worker', 'tiering-1'],
    ]);
    expect(processes.every((entry) => entry.running && isAlive(entry.pid))).toBe(true);
    expect(logLines.filter((line) => line.includes(' ready (pid '))).toHaveLength(processes.length);

    const file = readClusterFile(dataDir);
    expect(file.processes.map(({ role, nodeId, pid, ports }) => ({ role, nodeId, pid, ports }))).toEqual(
      processes.map(({ role, nodeId, pid, ports }) => ({ role, nodeId, pid, ports })),
    );
    expect(new Set(file.processes.map((entry) => entry.role))).toEqual(new Set(CLUSTER_ROLES));
    expect(file.endpoints).toEqual({ gateway: started.gatewayUrl, nats: started.natsUrl, s3: started.s3Endpoint, s3Bucket: 'mink' });

    expect(started.process('data-node', '1').ports.kafka).toBe(kafkaBasePort);
    expect(started.process('data-node', '2').ports.kafka).toBe(kafkaBasePort + 1);
    expect(started.process('nats').ports.client).toBe(Number(new URL(started.natsUrl).port));

    const node = started.process('data-node', '2');
    const { role, env } = await fetchJson(`http://127.0.0.1:${node.ports.http}/healthz`);
    expect(role).toBe('data-node');
    expect(env).toEqual(
      expect.objectContaining({
        [ENV.natsUrl]: started.natsUrl,
        [ENV.s3Endpoint]: started.s3Endpoint,
        [ENV.s3Bucket]: 'mink',
        [ENV.nodeId]: '2',
        [ENV.leaseTtlMs]: '3000',
        [ENV.coordinatorTickMs]: '500',
        [ENV.httpPort]: String(node.ports.http),
        [ENV.kafkaPort]: String(kafkaBasePort + 1),
        [ENV.metaReplicas]: '1',
      }),
    );
    const gateway = await fetchJson(`${started.gatewayUrl}/healthz`);
    expect(gateway.env[ENV.kafkaPort]).toBeUndefined();
    expect(readFileSync(node.logFile, 'utf8')).toContain('fake data-node listening');
    expect(node.logFile).toBe(join(dataDir, 'logs', 'data-node-2.log'));
    expect(started.process('coordinator', 'coordinator-1').logFile).toBe(join(dataDir, 'logs', 'coordinator-1.log'));
  });

  it('logs a killed process, keeps the others running, restarts it on the same ports and adds a data node', async () => {
    // Proves that a death is reported but never repaired by itself, and that restart and addDataNode work.
    const started = await startCluster();
    const victim = started.process('data-node', '2');
    started.kill('data-node', '2');
    expect(await started.waitForExit('data-node', '2')).toEqual({ code: null, signal: 'SIGKILL' });
    await eventually('the exit logged', () => logLines.includes(`data-node 2 (pid ${victim.pid}) exited with signal SIGKILL`), { timeoutMs: 2_000, intervalMs: 20 });
    expect(started.process('data-node', '2').running).toBe(false);
    expect(readClusterFile(dataDir).processes.find((entry) => entry.nodeId === '2')).toEqual(
      expect.objectContaining({ pid: victim.pid, running: false }),
    );
    const others = started.processes().filter((entry) => entry.nodeId !== '2');
    expect(others.every((entry) => entry.running && isAlive(entry.pid))).toBe(true);

    const restarted = await started.restart('data-node', '2');
    expect(restarted.pid).not.toBe(victim.pid);
    expect(restarted.ports).toEqual(victim.ports);
    expect(readClusterFile(dataDir).processes.find((entry) => entry.nodeId === '2')).toEqual(
      expect.objectContaining({ pid: restarted.pid, running: true }),
    );

    const added = await started.addDataNode();
    expect(added).toEqual(expect.objectContaining({ role: 'data-node', nodeId: '3', running: true }));
    expect(added.ports.kafka).toBe(kafkaBasePort + 2);
    expect((await fetchJson(`http://127.0.0.1:${added.ports.http}/healthz`)).env[ENV.nodeId]).toBe('3');
  });

  it('pauses and resumes a process', async () => {
    // Proves pause is SIGSTOP (the process stops answering but lives) and resume brings it back.
    const started = await startCluster();
    started.pause('gateway', 'gateway-1');
    await expect(fetchJson(`${started.gatewayUrl}/healthz`, 500)).rejects.toThrow();
    expect(isAlive(started.process('gateway', 'gateway-1').pid)).toBe(true);
    started.resume('gateway', 'gateway-1');
    expect((await fetchJson(`${started.gatewayUrl}/healthz`)).role).toBe('gateway');
  });

  it('stops every process, a paused one included, and leaves none behind', async () => {
    // Proves stop() ends services and then nats and s3, and records every process as not running.
    const started = await startCluster();
    started.pause('data-node', '1');
    const pids = started.processes().map((entry) => entry.pid);
    await started.stop();
    expect(pids.filter(isAlive)).toEqual([]);
    expect(readClusterFile(dataDir).processes.map((entry) => entry.running)).toEqual(pids.map(() => false));
    expect(logLines.filter((line) => line.includes('exited with'))).toEqual([]);
  });

  it('fails a start whose service exits, naming it and quoting its log, and cleans up', async () => {
    // Proves a failed start rejects with the process name and log tail and leaves no process running.
    await expect(startCluster({ env: { FAKE_FAIL_ROLE: 'gateway' } })).rejects.toThrow(
      /gateway gateway-1 \(pid \d+\) exited with code 3 before it was ready; last 1 lines of .*gateway-1\.log:\nfake gateway refuses to start/,
    );
    const leftovers = readClusterFile(dataDir).processes.filter((entry: Pick<ClusterProcessInfo, 'pid'>) => isAlive(entry.pid));
    expect(leftovers).toEqual([]);
  });

  it('refuses a second cluster on a data dir whose cluster still runs', async () => {
    // Proves two clusters never share NATS and S3 files: the second start fails before it spawns anything.
    const first = await startCluster();
    const second = LocalCluster.start({ dataDir, repoRoot, gatewayPort: 0, kafkaPort: 0 });
    await expect(second).rejects.toThrow(/a cluster still runs in .*\(nats pid \d+, s3 pid \d+, coordinator coordinator-1 pid \d+/);
    expect(readClusterFile(dataDir).processes.map((entry) => entry.pid)).toEqual(first.processes().map((entry) => entry.pid));
  });

  it('runs a NATS cluster of three servers: each tracked, listed and restartable, services given every URL and 3 replicas', async () => {
    // Proves --nats-cluster 3 end to end in the launcher: three clustered servers, MINK_NATS_URL lists all, MINK_META_REPLICAS=3,
    // and a server killed with kill -9 comes back on the same ports into the same JetStream cluster.
    const started = await startCluster({ natsCluster: 3 });
    const nats = started.processes().filter((entry) => entry.role === 'nats');
    expect(nats.map((entry) => entry.nodeId)).toEqual(['nats-1', 'nats-2', 'nats-3']);
    expect(started.processes().map((entry) => entry.role).slice(0, 4)).toEqual(['nats', 'nats', 'nats', 's3']);
    expect(nats.every((entry) => Object.keys(entry.ports).sort().join() === 'client,cluster,monitor')).toBe(true);
    expect(started.natsServers).toBe(3);
    expect(started.natsUrls).toEqual(nats.map((entry) => `nats://127.0.0.1:${entry.ports.client}`));
    expect(started.natsUrl).toBe(started.natsUrls.join(','));
    expect(nats.map((entry) => entry.logFile)).toEqual(['nats-1', 'nats-2', 'nats-3'].map((name) => join(dataDir, 'logs', `${name}.log`)));
    expect(logLines.filter((line) => /^nats nats-\d ready \(pid \d+, client \d+, cluster \d+, monitor \d+\)$/.test(line))).toHaveLength(3);

    const { env } = await fetchJson(`http://127.0.0.1:${started.process('coordinator', 'coordinator-1').ports.http}/healthz`);
    expect(env[ENV.natsUrl]).toBe(started.natsUrl);
    expect(env[ENV.metaReplicas]).toBe('3');
    const file = readClusterFile(dataDir);
    expect(file.processes.filter((entry) => entry.role === 'nats').map(({ nodeId, pid, ports, running }) => ({ nodeId, pid, ports, running }))).toEqual(
      nats.map(({ nodeId, pid, ports }) => ({ nodeId, pid, ports, running: true })),
    );
    expect(file.endpoints.nats).toBe(started.natsUrl);

    const leader = await started.natsMetaLeader();
    expect(['nats-1', 'nats-2', 'nats-3']).toContain(leader);
    const victim = started.process('nats', 'nats-2');
    started.kill('nats', 'nats-2');
    expect(await started.waitForExit('nats', 'nats-2')).toEqual({ code: null, signal: 'SIGKILL' });
    expect(readClusterFile(dataDir).processes.find((entry) => entry.nodeId === 'nats-2')).toEqual(expect.objectContaining({ pid: victim.pid, running: false }));
    const restarted = await started.restart('nats', 'nats-2');
    expect(restarted.pid).not.toBe(victim.pid);
    expect(restarted.ports).toEqual(victim.ports);
    expect(restarted.running).toBe(true);
    expect(started.process('nats', 'nats-2').running).toBe(true);
    expect(['nats-1', 'nats-2', 'nats-3']).toContain(await started.natsMetaLeader());
  });

  it.each([
    [{ natsCluster: 2 }, 'natsCluster must be 1 (one nats-server) or an odd number from 3 to 5 (a JetStream cluster), not 2'],
    [{ natsCluster: 0 }, 'natsCluster must be 1 (one nats-server) or an odd number from 3 to 5 (a JetStream cluster), not 0'],
    [{ natsCluster: 7 }, 'natsCluster must be 1 (one nats-server) or an odd number from 3 to 5 (a JetStream cluster), not 7'],
    [{ natsCluster: 3, natsPort: 4301 }, 'natsPort sets the port of a single nats-server; the servers of a NATS cluster get free ports'],
  ])('refuses %p before starting anything', async (options, message) => {
    await expect(LocalCluster.start({ dataDir, repoRoot, ...options })).rejects.toThrow(message);
  });

  it('refuses to start a data dir in the other NATS layout, which would start an empty metadata log next to its data', async () => {
    // Proves a data dir made with one nats-server is not restarted as a NATS cluster (its log is in another folder), nor the other way round.
    mkdirSync(join(dataDir, 'nats', 'jetstream'), { recursive: true });
    await expect(LocalCluster.start({ dataDir, repoRoot, natsCluster: 3 })).rejects.toThrow('holds the store of a single nats-server');
    rmSync(join(dataDir, 'nats'), { recursive: true });
    mkdirSync(join(dataDir, 'nats', 'nats-1', 'jetstream'), { recursive: true });
    await expect(LocalCluster.start({ dataDir, repoRoot })).rejects.toThrow('holds the stores of a NATS cluster');
  });

  it('refuses to start when an app is not built', async () => {
    // Proves the missing-build error names the file to build before any process is started.
    rmSync(join(repoRoot, 'apps', 'gateway', 'dist'), { recursive: true });
    await expect(startCluster()).rejects.toThrow(/apps\/gateway\/dist\/main\.js does not exist: run 'pnpm run build' first/);
  });
});
