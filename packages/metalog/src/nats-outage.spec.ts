import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, StringCodec, type NatsConnection } from 'nats';
import { startNatsCluster, startNatsServer, type NatsClusterHandle, type NatsServerHandle } from '@mink/devcluster';
import { emptyView, type Command, type View } from '@mink/meta';
import { eventually } from '@mink/testing';
import { CoordinatorLease, runLease, type LeaseRunner } from './lease';
import { Heartbeater, LivenessTracker } from './liveness';
import { JetStreamMetaLog } from './meta-log';
import { ensureMetaBuckets } from './meta-resources';
import { MetaStore } from './meta-store';
import { failRequestsFastAcrossReconnects } from './nats-connection';

jest.setTimeout(180_000);

const LEASE_TTL_MS = 3_000;
const HEARTBEAT_INTERVAL_MS = LEASE_TTL_MS / 5;
/** How long the single server stays dead: longer than a lease, so every lease and heartbeat lapses meanwhile. */
const OUTAGE_MS = 4_000;
/** How soon after the restart every piece must be back: a few reconnect waits, far below any request timeout. */
const RESUME_BOUND_MS = 3_000;
const codec = StringCodec();
const VIEW_WITH_NODE_1: View = { ...emptyView(), nodes: { '1': { id: '1', epoch: 1, address: 'mink.node.1', kafka: '', http: '' } } };

/** A connection as a mink process makes it (ClusterMember.join), to one server of `urls` first. */
async function connectLikeAService(urls: string[], name: string): Promise<NatsConnection> {
  return failRequestsFastAcrossReconnects(await connect({ servers: urls, name, noRandomize: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true }));
}

function registerNode(index: number): Command {
  return { type: 'RegisterNode', nodeId: `node-${index}`, address: `mink.node.${index}` };
}

/**
 * Every piece of a mink process that talks to NATS, each on a connection of its own as separate processes
 * would have: a proposer and a follower of the metadata log (MetaStores fail on any gap or repeat), a data
 * node's heartbeats, a coordinator's liveness tracker and lease, and a request/reply responder.
 */
async function startPieces(urlsOf: (role: string) => string[], connections: NatsConnection[], streamName: string, replicas: number) {
  const open = async (role: string) => {
    const connection = await connectLikeAService(urlsOf(role), role);
    connections.push(connection);
    return connection;
  };
  const proposerConnection = await open('proposer');
  const followerConnection = await open('follower');
  const nodeConnection = await open('data-node');
  const coordinatorConnection = await open('coordinator');
  await JetStreamMetaLog.create(proposerConnection, { streamName, replicas });
  await ensureMetaBuckets(proposerConnection, replicas);
  const fatal: Error[] = [];
  const proposer = await MetaStore.open(await JetStreamMetaLog.create(proposerConnection, { streamName }), { onFatal: (error) => fatal.push(error) });
  const follower = await MetaStore.open(await JetStreamMetaLog.create(followerConnection, { streamName }), { onFatal: (error) => fatal.push(error) });
  const followed: number[] = [];
  follower.onApplied((_view, seq) => followed.push(seq));
  await proposer.start();
  await follower.start();
  const heartbeater = await Heartbeater.create(nodeConnection);
  await heartbeater.start('1', 'data-node', 1, HEARTBEAT_INTERVAL_MS);
  const tracker = await LivenessTracker.start(coordinatorConnection);
  const lease = await CoordinatorLease.open(coordinatorConnection, 'coordinator-1', LEASE_TTL_MS);
  const runner: LeaseRunner = runLease({ lease, onAcquired: () => undefined, onLost: () => undefined });
  const responder = nodeConnection.subscribe('outage.echo', { callback: (_error, message) => message.respond(codec.encode(`echo ${codec.decode(message.data)}`)) });

  // Sampled all along: the node heartbeats every HEARTBEAT_INTERVAL_MS whenever NATS lets it, so the tracker
  // must never judge it dead; the moments it did are recorded.
  const judgedDead: number[] = [];
  const sampler = setInterval(() => {
    if (!tracker.liveNodes(VIEW_WITH_NODE_1, LEASE_TTL_MS).has('1')) judgedDead.push(Date.now());
  }, 50);
  let proposed = 0;
  const propose = () => eventually(`entry ${proposed + 1} proposed`, () => proposer.propose(registerNode(++proposed)), { timeoutMs: 60_000, intervalMs: 100 });
  await eventually('the lease held', () => runner.isHeld(), { timeoutMs: 15_000, intervalMs: 20 });
  await eventually('node 1 live', () => tracker.liveNodes(VIEW_WITH_NODE_1, LEASE_TTL_MS).has('1'), { timeoutMs: 15_000, intervalMs: 20 });
  return {
    proposer,
    follower,
    followed,
    fatal,
    tracker,
    lease,
    runner,
    judgedDead,
    nodeConnection,
    propose,
    /** The follower applied everything the proposer did, every entry once and in order. */
    async expectLogIntact(): Promise<void> {
      await eventually('the follower caught up', () => follower.view.seq === proposer.view.seq || undefined, { timeoutMs: 30_000, intervalMs: 20 });
      expect(fatal).toEqual([]);
      expect(followed).toEqual(Array.from({ length: proposer.view.seq }, (_, index) => index + 1));
    },
    async stop(): Promise<void> {
      clearInterval(sampler);
      responder.unsubscribe();
      await runner.stop();
      await heartbeater.stop().catch(() => undefined);
      await tracker.stop();
      await proposer.stop();
      await follower.stop();
    },
  };
}

/** Resolves with how long it took (ms from `sinceMs`) until `what` held. */
async function resumedAfter(sinceMs: number, what: string, probe: () => unknown): Promise<number> {
  await eventually(what, async () => ((await probe()) ? true : undefined), { timeoutMs: 60_000, intervalMs: 20 });
  return Date.now() - sinceMs;
}

describe('a NATS outage: kill -9 of the only nats-server and a restart on the same store', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-nats-outage-'));
    server = await startNatsServer({ dataDir, logFile: join(dataDir, 'nats.log') });
  });

  afterAll(async () => {
    for (const connection of connections) await connection.close().catch(() => undefined);
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('every piece resumes by itself within moments of the restart; the log has no gap or repeat and no live node is judged dead', async () => {
    // Proves the reconnect fixes: before them a request lost with the server waited out its whole timeout
    // (appends and heartbeats 5 s, so nodes looked dead after the restart), and the heartbeat watch served
    // a frozen picture until nats.js noticed its consumer was gone.
    const pieces = await startPieces(() => [server.url], connections, 'OUTAGE_META', 1);
    for (let index = 0; index < 5; index++) await pieces.propose();
    const watchesBefore = pieces.tracker.watchCount;

    process.kill(server.pid, 'SIGKILL');
    await new Promise((resolve) => server.process.once('exit', resolve));
    // The fault's duration, not a synchronisation: the server stays dead this long.
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    const restartedAtMs = Date.now();
    server = await startNatsServer({ dataDir, port: server.port, logFile: join(dataDir, 'nats.log') });

    const [proposalMs, followerMs, heartbeatMs, leaseMs, replyMs] = await Promise.all([
      resumedAfter(restartedAtMs, 'a proposal after the restart', async () => (await pieces.proposer.propose(registerNode(99))).ok !== undefined),
      resumedAfter(restartedAtMs, 'the follower past entry 5', () => pieces.follower.view.seq > 5),
      resumedAfter(restartedAtMs, 'a heartbeat written after the restart seen by the tracker', () => {
        const beat = pieces.tracker.heartbeatOf('1');
        return beat !== null && beat.createdAtMs >= restartedAtMs - 1_000 && !pieces.tracker.isBlind();
      }),
      resumedAfter(restartedAtMs, 'the lease held again', () => pieces.runner.isHeld() && pieces.lease.isHeld()),
      resumedAfter(restartedAtMs, 'a reply', async () => codec.decode((await pieces.nodeConnection.request('outage.echo', codec.encode('again'), { timeout: 500 })).data) === 'echo again'),
    ]);
    const resumedMs = { proposalMs, followerMs, heartbeatMs, leaseMs, replyMs };
    expect(Object.entries(resumedMs).filter(([, ms]) => ms > RESUME_BOUND_MS)).toEqual([]);
    // The heartbeat watch was opened again after the reconnect (the restarted server had lost its consumer).
    expect(pieces.tracker.watchCount).toBeGreaterThan(watchesBefore);
    // The node beat whenever NATS let it: it was never judged dead, though its last beat before the outage
    // was older than lease_ttl when the server came back.
    expect(pieces.judgedDead).toEqual([]);
    await pieces.propose();
    await pieces.expectLogIntact();
    await pieces.stop();
  });
});

describe('a NATS cluster of three: kill -9 of the JetStream meta leader, then of the leader of the heartbeat bucket', () => {
  let dataDir: string;
  let cluster: NatsClusterHandle;
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-nats-cluster-outage-'));
    cluster = await startNatsCluster({ dataDir, size: 3, logDir: join(dataDir, 'logs') });
  });

  afterAll(async () => {
    for (const connection of connections) await connection.close().catch(() => undefined);
    await cluster?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('with 3 replicas everything resumes while the server is down: no gap or repeat in the log, no live node judged dead', async () => {
    // Proves the pieces follow a failover inside the cluster: tails and the heartbeat watch replace consumers
    // lost with their server, and a tracker does not count a leaderless heartbeat bucket against the nodes.
    const metaLeader = (await cluster.metaLeader())!;
    // Every piece starts on the server that is killed first, so each must move to another one.
    const urlsOf = () => [cluster.node(metaLeader).url, ...cluster.urls.filter((url) => url !== cluster.node(metaLeader).url)];
    const pieces = await startPieces(urlsOf, connections, 'CLUSTER_OUTAGE_META', 3);
    const manager = await connections[0]!.jetstreamManager();
    expect((await manager.streams.info('CLUSTER_OUTAGE_META')).config.num_replicas).toBe(3);
    expect((await manager.streams.info('KV_mink_heartbeats')).config.num_replicas).toBe(3);
    for (let index = 0; index < 5; index++) await pieces.propose();

    for (const victimOf of [async () => metaLeader, async () => (await manager.streams.info('KV_mink_heartbeats')).cluster!.leader!]) {
      const victim = await victimOf();
      const killed = cluster.node(victim);
      const killedAtMs = Date.now();
      process.kill(killed.pid, 'SIGKILL');
      await killed.exited;
      const before = pieces.proposer.view.seq;
      // While the victim is still down: proposals, the follower, heartbeats and the lease all come back.
      await resumedAfter(killedAtMs, `a proposal with ${victim} down`, async () => (await pieces.proposer.propose(registerNode(100))).ok !== undefined);
      await resumedAfter(killedAtMs, `the follower past ${before} with ${victim} down`, () => pieces.follower.view.seq > before);
      await resumedAfter(killedAtMs, `a fresh heartbeat seen with ${victim} down`, () => {
        const beat = pieces.tracker.heartbeatOf('1');
        return beat !== null && beat.createdAtMs > killedAtMs + 500 && !pieces.tracker.isBlind();
      });
      await resumedAfter(killedAtMs, `the lease held with ${victim} down`, () => pieces.runner.isHeld());
      expect(killed.hasExited()).toBe(true);
      await cluster.restart(victim);
      await pieces.propose();
    }
    expect(pieces.judgedDead).toEqual([]);
    await pieces.expectLogIntact();
    await pieces.stop();
  });
});
