import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '@mink/devcluster';
import { eventually } from '@mink/testing';

/**
 * `mink up` as a user runs it: the built CLI starts a whole cluster of real processes, survives the
 * death of one of them, and on SIGTERM stops every process it started and exits 0 (docs/architecture.md §12).
 */

jest.setTimeout(120_000);

const REPO_ROOT = resolve(__dirname, '..', '..');
const CLI_PATH = join(REPO_ROOT, 'packages', 'cli', 'dist', 'main.js');
const APPS = ['coordinator', 'data-node', 'gateway', 'tiering-worker'];
const DATA_NODES = 3;
const EXPECTED_ROLE_COUNTS = { nats: 1, s3: 1, coordinator: 2, 'data-node': DATA_NODES, gateway: 1, 'tiering-worker': 1 };
const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 45_000;
const POLL_INTERVAL_MS = 200;

interface ClusterEntry {
  role: keyof typeof EXPECTED_ROLE_COUNTS;
  nodeId: string | null;
  pid: number;
  ports: Record<string, number>;
}

/**
 * The listening TCP sockets of process `pid` as `address:port` ("127.0.0.1:8080", "[::1]:4222",
 * "0.0.0.0:9092"), from /proc: the socket inodes among its open descriptors, looked up in /proc/net/tcp{,6}.
 */
function listeningSockets(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // The descriptor closed while we looked.
    }
  }
  const sockets: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is fields[1] (hex address:port), st is fields[3] (0A = LISTEN), inode is fields[9].
      if (fields.length < 10 || fields[3] !== '0A' || !inodes.has(fields[9]!)) continue;
      const [hexAddress, hexPort] = fields[1]!.split(':') as [string, string];
      sockets.push(`${addressOfProcHex(hexAddress)}:${parseInt(hexPort, 16)}`);
    }
  }
  return sockets;
}

/** An address of /proc/net/tcp{,6}: 32-bit words in host (little-endian) byte order. */
function addressOfProcHex(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((word) => word.match(/../g)!.reverse().join(''));
  if (words.length === 1) return words[0]!.match(/../g)!.map((byte) => parseInt(byte, 16)).join('.');
  const groups = words.join('').match(/.{4}/g)!.map((group) => parseInt(group, 16).toString(16));
  const text = groups.join(':');
  if (text === '0:0:0:0:0:0:0:1') return '[::1]';
  if (text === '0:0:0:0:0:0:0:0') return '[::]';
  return `[${text}]`;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `probe` until it returns a value, failing with `what` (and the CLI's output) after `timeoutMs`. */
async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  try {
    return await eventually(what, probe, { timeoutMs, intervalMs: POLL_INTERVAL_MS });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}; mink up printed:\n${output}`);
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolveListen) => {
    const server = createServer();
    server.once('error', () => resolveListen(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolveListen(true)));
  });
}

/** The first of `count` consecutive free ports, for --kafka-port (node n listens on base + n - 1). */
async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = await freePort();
    if (base + count - 1 > 65_535) continue;
    const ports = Array.from({ length: count - 1 }, (_, index) => base + index + 1);
    if ((await Promise.all(ports.map(canListen))).every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

function readCluster(dataDir: string): ClusterEntry[] | undefined {
  try {
    return (JSON.parse(readFileSync(join(dataDir, 'cluster.json'), 'utf8')) as { processes: ClusterEntry[] }).processes;
  } catch {
    return undefined;
  }
}

async function gatewayReadyStatus(url: string): Promise<number> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

let output = '';
let minkUp: ChildProcess | undefined;
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
let dataDir: string;
let processes: ClusterEntry[] = [];

beforeAll(() => {
  const missing = [CLI_PATH, ...APPS.map((app) => join(REPO_ROOT, 'apps', app, 'dist', 'main.js'))].filter((path) => !existsSync(path));
  if (missing.length > 0) throw new Error(`build first (pnpm run build); missing: ${missing.join(', ')}`);
  dataDir = mkdtempSync(join(tmpdir(), 'mink-up-e2e-'));
});

afterAll(async () => {
  // Whatever happened above, leave no process behind: SIGKILL skips mink up's own clean-up, so kill
  // every process cluster.json lists as well.
  if (minkUp && minkUp.exitCode === null && minkUp.signalCode === null) {
    minkUp.kill('SIGKILL');
    await exited;
  }
  for (const entry of readCluster(dataDir) ?? processes) {
    if (isAlive(entry.pid)) process.kill(entry.pid, 'SIGKILL');
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe('mink up', () => {
  it('starts every role as its own live process, lists them in cluster.json and serves the gateway', async () => {
    // Proves the start contract: all eight processes with live pids in cluster.json, and a ready gateway.
    const gatewayPort = await freePort();
    const grpcPort = await freePort();
    const kafkaPort = await freePortRange(DATA_NODES);
    const args = [CLI_PATH, 'up', '--data-dir', dataDir, '--gateway-port', String(gatewayPort), '--grpc-port', String(grpcPort), '--kafka-port', String(kafkaPort)];
    args.push('--lease-ttl', '3s', '--coordinator-tick', '500ms');
    minkUp = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    minkUp.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    minkUp.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const child = minkUp;
    exited = new Promise((resolveExit) => child.once('exit', (code, signal) => resolveExit({ code, signal })));

    processes = await waitFor('cluster.json to list every role with live pids', START_TIMEOUT_MS, () => {
      if (child.exitCode !== null) throw new Error(`mink up exited with code ${child.exitCode}:\n${output}`);
      const entries = readCluster(dataDir);
      if (!entries) return undefined;
      const counts = Object.fromEntries(Object.keys(EXPECTED_ROLE_COUNTS).map((role) => [role, entries.filter((entry) => entry.role === role).length]));
      const complete = JSON.stringify(counts) === JSON.stringify(EXPECTED_ROLE_COUNTS);
      return complete && entries.every((entry) => isAlive(entry.pid)) ? entries : undefined;
    });
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    await waitFor('the gateway to answer 200 on /readyz', START_TIMEOUT_MS, async () => ((await gatewayReadyStatus(gatewayUrl)) === 200 ? true : undefined));

    expect(processes.find((entry) => entry.role === 'gateway')?.ports).toEqual({ http: gatewayPort, grpc: grpcPort });
    expect(processes.filter((entry) => entry.role === 'data-node').map((entry) => [entry.nodeId, entry.ports.kafka])).toEqual([
      ['1', kafkaPort],
      ['2', kafkaPort + 1],
      ['3', kafkaPort + 2],
    ]);
    expect(processes.filter((entry) => entry.role === 'coordinator').map((entry) => entry.nodeId)).toEqual(['coordinator-1', 'coordinator-2']);
    expect(new Set(processes.map((entry) => entry.pid)).size).toBe(processes.length);
    await waitFor('mink up to print its endpoints', 10_000, () => (output.includes('Ctrl-C to stop') ? true : undefined));
    expect(output).toContain(gatewayUrl);
    expect(output).toContain(`127.0.0.1:${grpcPort} (mink.v1.Mink`);
  });

  it('listens on loopback only: every socket of every process it started is bound to 127.0.0.1 or ::1', () => {
    // Proves secure by default: nothing `mink up` starts (gateway, data nodes' HTTP and Kafka listeners,
    // coordinators, tiering worker, nats-server, the S3 server) accepts connections from another machine.
    const listening = processes.map((entry) => ({ process: `${entry.role} ${entry.nodeId ?? ''}`.trim(), sockets: listeningSockets(entry.pid) }));
    expect(listening.filter((entry) => entry.sockets.length === 0).map((entry) => entry.process)).toEqual([]);
    const exposed = listening.flatMap((entry) => entry.sockets.filter((socket) => !/^(127\.0\.0\.1|\[::1\]):/.test(socket)).map((socket) => `${entry.process} ${socket}`));
    expect(exposed).toEqual([]);
    const gateway = listening.find((entry) => entry.process === 'gateway gateway-1' || entry.process.startsWith('gateway'))!;
    const gatewayPorts = processes.find((entry) => entry.role === 'gateway')!.ports;
    expect(gateway.sockets).toEqual(expect.arrayContaining([`127.0.0.1:${gatewayPorts.http}`, `127.0.0.1:${gatewayPorts.grpc}`]));
  });

  it('logs the death of a data node killed with SIGKILL and keeps everything else running', async () => {
    // Proves a dying service is reported and not restarted, and that its death takes nothing else down.
    const victim = processes.find((entry) => entry.role === 'data-node' && entry.nodeId === '2')!;
    process.kill(victim.pid, 'SIGKILL');
    const line = `data-node 2 (pid ${victim.pid}) exited with signal SIGKILL`;
    await waitFor(`mink up to print "${line}"`, 10_000, () => (output.includes(line) ? true : undefined));
    expect(minkUp!.exitCode).toBeNull();
    const survivors = processes.filter((entry) => entry !== victim);
    expect(survivors.filter((entry) => !isAlive(entry.pid)).map((entry) => `${entry.role} ${entry.nodeId}`)).toEqual([]);
    expect(readCluster(dataDir)?.find((entry) => entry.nodeId === '2')).toEqual(expect.objectContaining({ pid: victim.pid, running: false }));
  });

  it('stops every process on SIGTERM and exits 0', async () => {
    // Proves the stop contract: exit code 0, and no pid listed in cluster.json is still alive.
    minkUp!.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolveTimeout) => {
      timer = setTimeout(() => resolveTimeout('timeout'), STOP_TIMEOUT_MS);
    });
    const status = await Promise.race([exited, timedOut]);
    clearTimeout(timer);
    expect(status).toEqual({ code: 0, signal: null });
    const listed = readCluster(dataDir) ?? [];
    expect(listed.map((entry) => entry.pid).sort()).toEqual(processes.map((entry) => entry.pid).sort());
    expect(listed.filter((entry) => isAlive(entry.pid)).map((entry) => `${entry.role} ${entry.nodeId} pid ${entry.pid}`)).toEqual([]);
    expect(output).toContain('stopped');
  });
});
