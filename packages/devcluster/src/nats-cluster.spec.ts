import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, StringCodec, type NatsConnection } from 'nats';
import { eventually } from '@mink/testing';
import { checkNatsClusterSize, natsClusterConfig, natsServerNames, startNatsCluster, type NatsClusterHandle } from './nats-cluster';
import { natsConnectionOutcome } from './nats-server';
import { isPortOpen } from './ports';

jest.setTimeout(90_000);

const codec = StringCodec();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('natsClusterConfig and the cluster size', () => {
  it('writes a loopback-only server with its name, JetStream store, monitoring port and routes to the others', () => {
    // Proves every listener of a local cluster server binds 127.0.0.1 and the server knows its peers.
    const config = natsClusterConfig({
      name: 'nats-2',
      clusterName: 'mink',
      folder: '/data/nats-2',
      ports: { client: 4302, cluster: 6302, monitor: 8302 },
      routes: [6301, 6303],
    });
    expect(config.split('\n')).toEqual([
      'server_name: "nats-2"',
      'listen: "127.0.0.1:4302"',
      'http: "127.0.0.1:8302"',
      'max_payload: 8388608',
      'jetstream {',
      '  store_dir: "/data/nats-2/jetstream"',
      '}',
      'cluster {',
      '  name: "mink"',
      '  listen: "127.0.0.1:6302"',
      '  routes: ["nats-route://127.0.0.1:6301", "nats-route://127.0.0.1:6303"]',
      '}',
      '',
    ]);
    expect(natsServerNames(3)).toEqual(['nats-1', 'nats-2', 'nats-3']);
  });

  it('asks clients and routes for the credentials: an authorization block at the top and in cluster {}, routes carrying them', () => {
    // Proves a secure cluster's servers refuse both an anonymous client and an anonymous route, and dial each other with the credentials.
    const config = natsClusterConfig({
      name: 'nats-1',
      clusterName: 'mink',
      folder: '/data/nats-1',
      ports: { client: 4301, cluster: 6301, monitor: 8301 },
      routes: [6302],
      credentials: { user: 'mink', password: 'f00d' },
    });
    expect(config.split('\n')).toEqual([
      'server_name: "nats-1"',
      'listen: "127.0.0.1:4301"',
      'http: "127.0.0.1:8301"',
      'max_payload: 8388608',
      'authorization {',
      '  user: "mink"',
      '  password: "f00d"',
      '}',
      'jetstream {',
      '  store_dir: "/data/nats-1/jetstream"',
      '}',
      'cluster {',
      '  name: "mink"',
      '  listen: "127.0.0.1:6301"',
      '  authorization {',
      '    user: "mink"',
      '    password: "f00d"',
      '  }',
      '  routes: ["nats-route://mink:f00d@127.0.0.1:6302"]',
      '}',
      '',
    ]);
  });

  it.each([3, 5])('accepts %d servers', (size) => {
    expect(() => checkNatsClusterSize(size)).not.toThrow();
  });

  it.each([0, 1, 2, 4, 6, 7, 2.5])('refuses %p servers: JetStream needs a majority of an odd count, from 3 to 5', (size) => {
    // Proves 1 (not a cluster: the single server is started otherwise) and even sizes (a quorum no better than one server fewer) are refused.
    expect(() => checkNatsClusterSize(size)).toThrow(`a NATS cluster has an odd number of servers from 3 to 5, not ${size}`);
  });
});

describe('startNatsCluster', () => {
  let dataDir: string;
  let cluster: NatsClusterHandle | undefined;
  let connection: NatsConnection | undefined;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-nats-cluster-'));
  });

  afterEach(async () => {
    await connection?.close().catch(() => undefined);
    connection = undefined;
    await cluster?.stop();
    cluster = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts three JetStream servers that replicate a stream, survives kill -9 of the meta leader and restarts it on the same ports and store', async () => {
    // Proves the launcher returns a working R3 JetStream cluster, names its meta leader, and restarts a killed server into the cluster.
    cluster = await startNatsCluster({ dataDir, size: 3, logDir: join(dataDir, 'logs') });
    const nodes = cluster.nodes();
    expect(nodes.map((node) => node.spec.name)).toEqual(['nats-1', 'nats-2', 'nats-3']);
    expect(cluster.urls).toEqual(nodes.map((node) => `nats://127.0.0.1:${node.spec.ports.client}`));
    const ports = nodes.flatMap((node) => Object.values(node.spec.ports));
    expect(new Set(ports).size).toBe(9);
    expect(ports).not.toContain(4222);
    expect(readFileSync(join(dataDir, 'logs', 'nats-2.log'), 'utf8')).toContain('nats-2');

    connection = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const manager = await connection.jetstreamManager();
    await manager.streams.add({ name: 'PROBE', subjects: ['probe'], num_replicas: 3 });
    const js = connection.jetstream();
    await js.publish('probe', codec.encode('one'));
    expect(existsSync(join(dataDir, 'nats-1', 'jetstream'))).toBe(true);

    const leader = await cluster.metaLeader();
    expect(natsServerNames(3)).toContain(leader);
    const killed = cluster.node(leader!);
    process.kill(killed.pid, 'SIGKILL');
    await killed.exited;
    const newLeader = await eventually('a new meta leader', async () => {
      const current = await cluster!.metaLeader();
      return current !== null && current !== leader ? current : undefined;
    }, { timeoutMs: 30_000, intervalMs: 200 });
    expect(newLeader).not.toBe(leader);
    // The stream keeps a quorum of two: publishes go on while one server is down.
    await eventually('a publish with one server down', () => js.publish('probe', codec.encode('two'), { timeout: 2_000 }), { timeoutMs: 30_000, intervalMs: 200 });

    const restarted = await cluster.restart(leader!);
    expect(restarted.pid).not.toBe(killed.pid);
    expect(restarted.spec.ports).toEqual(killed.spec.ports);
    expect(cluster.node(leader!).pid).toBe(restarted.pid);
    // Back in the cluster with its store: it holds the stream's messages again, the one published while it was down included.
    await eventually('the restarted server caught up with the stream', async () => {
      const info = await manager.streams.info('PROBE');
      const replicas = [info.cluster?.leader, ...(info.cluster?.replicas ?? []).filter((replica) => replica.current).map((replica) => replica.name)];
      return info.state.messages === 2 && replicas.includes(leader!) ? true : undefined;
    }, { timeoutMs: 30_000, intervalMs: 200 });

    const pids = cluster.nodes().map((node) => node.pid);
    const clientPorts = cluster.nodes().map((node) => node.spec.ports.client);
    await cluster.stop();
    cluster = undefined;
    expect(pids.filter(isAlive)).toEqual([]);
    for (const port of clientPorts) expect(await isPortOpen('127.0.0.1', port)).toBe(false);
  });

  it('forms a JetStream cluster whose routes and clients need the credentials, with the password in no argument and only 0600 files', async () => {
    // Proves routes authenticate (else JetStream never gets a quorum and the start times out) and an anonymous client is refused.
    const credentials = { user: 'mink', password: 'cafe0123456789abcdef' };
    cluster = await startNatsCluster({ dataDir, size: 3, logDir: join(dataDir, 'logs'), credentials });
    expect(await natsConnectionOutcome(cluster.urls)).toBe('AUTHORIZATION_VIOLATION');
    connection = await connect({ servers: cluster.urls, user: credentials.user, pass: credentials.password });
    const manager = await connection.jetstreamManager();
    const info = await manager.streams.add({ name: 'SECURE', subjects: ['secure'], num_replicas: 3 });
    expect(info.config.num_replicas).toBe(3);
    expect((await connection.jetstream().publish('secure', codec.encode('x'))).seq).toBe(1);
    for (const node of cluster.nodes()) {
      expect(readFileSync(`/proc/${node.pid}/cmdline`, 'utf8')).not.toContain(credentials.password);
      expect((statSync(join(node.spec.folder, 'nats-server.conf')).mode & 0o777).toString(8)).toBe('600');
    }
    const logs = natsServerNames(3).map((name) => readFileSync(join(dataDir, 'logs', `${name}.log`), 'utf8')).join('');
    expect(logs).toContain('nats-2');
    expect(logs).not.toContain(credentials.password);
  });
});
