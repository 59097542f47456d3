import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import { emptyView, type NodeRecord, type View } from '@mink/meta';
import { Heartbeater, heartbeatKey, isJoiningHeartbeat, LivenessTracker, openHeartbeatBucket, type Heartbeat } from './liveness';
import { eventually } from '@mink/testing';

const LEASE_TTL_MS = 1_000;
const HEARTBEAT_INTERVAL_MS = LEASE_TTL_MS / 5;

function viewWithNodes(epochs: Record<string, number>): View {
  const nodes: Record<string, NodeRecord> = {};
  for (const [id, epoch] of Object.entries(epochs)) nodes[id] = { id, epoch, address: `mink.node.${id}`, kafka: '', http: '' };
  return { ...emptyView(), nodes };
}

/** `probe`'s value once `accept` takes it, polled by the shared `eventually`. */
async function valueOnceAccepted<T>(probe: () => T, accept: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const accepted = await eventually(
    'a probe of the liveness tracker to be accepted',
    () => {
      const value = probe();
      return accept(value) ? { value } : undefined;
    },
    { timeoutMs, intervalMs: 20 },
  );
  return accepted.value;
}

describe('heartbeats and liveness', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let nodeConnection: NatsConnection;
  let trackerConnection: NatsConnection;
  let tracker: LivenessTracker;
  const heartbeaters: Heartbeater[] = [];
  let bucketCounter = 0;
  let bucket: string;

  async function startHeartbeat(nodeId: string, epoch: number, appliedSeq?: () => number): Promise<Heartbeater> {
    const heartbeater = await Heartbeater.create(nodeConnection, { bucket });
    heartbeaters.push(heartbeater);
    if (appliedSeq) heartbeater.reportAppliedSeq(appliedSeq);
    await heartbeater.start(nodeId, 'data-node', epoch, HEARTBEAT_INTERVAL_MS);
    return heartbeater;
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-liveness-'));
    server = await startNatsServer({ dataDir });
    nodeConnection = await connect({ servers: server.url });
    trackerConnection = await connect({ servers: server.url });
  });

  beforeEach(async () => {
    bucketCounter += 1;
    bucket = `heartbeats_${bucketCounter}`;
    tracker = await LivenessTracker.start(trackerConnection, { bucket });
  });

  afterEach(async () => {
    for (const heartbeater of heartbeaters.splice(0)) heartbeater.halt();
    await tracker.stop();
  });

  afterAll(async () => {
    await nodeConnection?.close();
    await trackerConnection?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('tells how far each live data node has applied the log, and since when it has not moved', async () => {
    // Proves the purge margin and admission see each node's applied sequence through its heartbeats, that
    // an unchanged sequence keeps the time it was first seen (a stalled node), and that a dead node is left out.
    const view = viewWithNodes({ '1': 1, '2': 1 });
    let appliedByOne = 40;
    const one = await Heartbeater.create(nodeConnection, { bucket });
    heartbeaters.push(one);
    one.reportAppliedSeq(() => appliedByOne);
    await one.start('1', 'data-node', 1, HEARTBEAT_INTERVAL_MS);
    const two = await Heartbeater.create(nodeConnection, { bucket });
    heartbeaters.push(two);
    two.reportAppliedSeq(() => 7);
    await two.start('2', 'data-node', 1, HEARTBEAT_INTERVAL_MS);
    const progress = () => Object.fromEntries(tracker.progressOfLiveNodes(view, LEASE_TTL_MS).map((member) => [member.nodeId, member]));
    const first = await valueOnceAccepted(progress, (members) => members['1']?.appliedSeq === 40 && members['2']?.appliedSeq === 7);
    expect({ one: first['1']?.appliedSeq, two: first['2']?.appliedSeq }).toEqual({ one: 40, two: 7 });

    appliedByOne = 41;
    const moved = await valueOnceAccepted(progress, (members) => members['1']?.appliedSeq === 41 && members['2'] !== undefined);
    expect(moved['1']?.appliedSeq).toBe(41);
    expect(moved['1']!.sinceMs).toBeGreaterThan(first['1']!.sinceMs);
    // Node 2 beat several times meanwhile at the same sequence: it has been there since its first beat.
    expect(moved['2']!.sinceMs).toBe(first['2']!.sinceMs);

    two.halt();
    const afterDeath = await valueOnceAccepted(progress, (members) => members['2'] === undefined, LEASE_TTL_MS * 3);
    expect(Object.keys(afterDeath)).toEqual(['1']);
  });

  it('counts as joining a node at epoch 0 and one registered beyond the view, never one at the view epoch', async () => {
    // Proves the lease holder holds back the buckets of a node whose registration its view has not applied yet
    // (a whole-cluster restart of 100 000 buckets gave all of one node's buckets away in that window).
    const view = viewWithNodes({ '1': 1, '2': 1, '3': 1 });
    await startHeartbeat('1', 1);
    await startHeartbeat('2', 2);
    await startHeartbeat('4', 0);
    const joining = await valueOnceAccepted(
      () => tracker.joiningNodes(view, LEASE_TTL_MS),
      (nodes) => nodes.size === 2 && tracker.liveNodes(view, LEASE_TTL_MS).size === 1,
    );
    expect(new Set(joining.keys())).toEqual(new Set(['2', '4']));
    expect(tracker.liveNodes(view, LEASE_TTL_MS)).toEqual(new Set(['1']));
    // Once the view has the registration, the node is live and no longer joining.
    const caughtUp = viewWithNodes({ '1': 1, '2': 2, '3': 1 });
    expect(new Set(tracker.joiningNodes(caughtUp, LEASE_TTL_MS).keys())).toEqual(new Set(['4']));
    expect(tracker.liveNodes(caughtUp, LEASE_TTL_MS)).toEqual(new Set(['1', '2']));
  });

  it('tells how long ago each joining node last advanced its applied sequence', async () => {
    // Proves the lease holder can tell a joining node still catching up from a stuck one: past the joining
    // grace it keeps waiting only for the first. The progressing node starts first, so an age counted from
    // its first beat would make it the older of the two.
    const view = viewWithNodes({ '1': 1 });
    let applied = 0;
    await startHeartbeat('4', 0, () => (applied += 1));
    await startHeartbeat('5', 0, () => 7);
    const ages = await valueOnceAccepted(
      () => tracker.joiningNodes(view, LEASE_TTL_MS),
      (joining) => (joining.get('5') ?? 0) >= 5 * HEARTBEAT_INTERVAL_MS && joining.has('4'),
    );
    expect(ages.get('4')!).toBeLessThan(ages.get('5')!);
  });

  it('counts a node live while it heartbeats and drops it one ttl after its heartbeats stop', async () => {
    // Proves live_nodes() follows the server-stamped age of the last heartbeat: a crashed node leaves after lease_ttl.
    const view = viewWithNodes({ '1': 1, '2': 1 });
    const first = await startHeartbeat('1', 1);
    await startHeartbeat('2', 1);
    expect(await valueOnceAccepted(() => tracker.liveNodes(view, LEASE_TTL_MS), (live) => live.size === 2)).toEqual(new Set(['1', '2']));

    first.halt();
    const haltedAtMs = Date.now();
    // Still live well inside the ttl: the last beat is younger than lease_ttl.
    await new Promise((resolve) => setTimeout(resolve, LEASE_TTL_MS / 2));
    expect(tracker.liveNodes(view, LEASE_TTL_MS)).toEqual(new Set(['1', '2']));
    const afterTtl = await valueOnceAccepted(() => tracker.liveNodes(view, LEASE_TTL_MS), (live) => !live.has('1'), 3 * LEASE_TTL_MS);
    expect(afterTtl).toEqual(new Set(['2']));
    expect(Date.now() - haltedAtMs).toBeGreaterThanOrEqual(LEASE_TTL_MS - HEARTBEAT_INTERVAL_MS);
    expect(tracker.heartbeatOf('1')!.ageMs).toBeGreaterThanOrEqual(LEASE_TTL_MS);
  }, 15_000);

  it('does not judge a beating node dead when its own event loop was held up past lease_ttl', async () => {
    // Proves a lease holder whose event loop stalls (2 s at 100 000 buckets) does not re-lead the buckets of a
    // node that kept beating: the beats that arrived meanwhile are unread when the tick runs, so ages count
    // only up to the last probe that came through. The beats come from another process, which the stall
    // does not hold up.
    const view = viewWithNodes({ '1': 1 });
    const natsModule = require.resolve('nats');
    const script = `
      const { connect } = require(${JSON.stringify(natsModule)});
      (async () => {
        const nc = await connect({ servers: ${JSON.stringify(server.url)} });
        const kv = await (nc.jetstream()).views.kv(${JSON.stringify(bucket)});
        const value = new TextEncoder().encode(JSON.stringify({ nodeId: '1', role: 'data-node', epoch: 1 }));
        for (;;) {
          await kv.put(${JSON.stringify(heartbeatKey('data-node', '1'))}, value);
          await new Promise((resolve) => setTimeout(resolve, ${HEARTBEAT_INTERVAL_MS}));
        }
      })();`;
    const beater = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    try {
      await valueOnceAccepted(() => tracker.liveNodes(view, LEASE_TTL_MS), (live) => live.has('1'));
      // Let a few probes come through, then hold the event loop for 1.5 lease_ttl.
      await new Promise((resolve) => setTimeout(resolve, 3 * HEARTBEAT_INTERVAL_MS));
      const heldUntilMs = performance.now() + 1.5 * LEASE_TTL_MS;
      while (performance.now() < heldUntilMs) {
        // Busy: nothing else runs, as in a long apply.
      }
      expect(tracker.liveNodes(view, LEASE_TTL_MS)).toEqual(new Set(['1']));
    } finally {
      beater.kill('SIGKILL');
    }
  });

  it('does not count a node whose heartbeat carries another epoch than the view', async () => {
    // Proves a zombie incarnation heartbeating at an old epoch does not make the registered node live.
    const heartbeater = await startHeartbeat('1', 1);
    await valueOnceAccepted(() => tracker.heartbeatOf('1'), (heartbeat) => heartbeat?.epoch === 1);
    expect(tracker.liveNodes(viewWithNodes({ '1': 1 }), LEASE_TTL_MS)).toEqual(new Set(['1']));
    expect(tracker.liveNodes(viewWithNodes({ '1': 2 }), LEASE_TTL_MS)).toEqual(new Set());

    await heartbeater.setEpoch(2);
    const live = await valueOnceAccepted(() => tracker.liveNodes(viewWithNodes({ '1': 2 }), LEASE_TTL_MS), (set) => set.has('1'));
    expect(live).toEqual(new Set(['1']));
    expect(tracker.liveNodes(viewWithNodes({ '1': 1 }), LEASE_TTL_MS)).toEqual(new Set());
  });

  it('ignores heartbeats of nodes the view does not know and of other roles', async () => {
    // Proves live_nodes() is a subset of the registered data nodes.
    await startHeartbeat('9', 1);
    const coordinator = await Heartbeater.create(nodeConnection, { bucket });
    heartbeaters.push(coordinator);
    await coordinator.start('1', 'coordinator', 1, HEARTBEAT_INTERVAL_MS);
    await valueOnceAccepted(() => tracker.heartbeatOf('1', 'coordinator'), (heartbeat) => heartbeat !== null);
    await valueOnceAccepted(() => tracker.heartbeatOf('9'), (heartbeat) => heartbeat !== null);
    expect(tracker.liveNodes(viewWithNodes({ '1': 1 }), LEASE_TTL_MS)).toEqual(new Set());
  });

  it('drops a node at once when it leaves cleanly and reports every change', async () => {
    // Proves stop() deletes the key so a clean shutdown does not wait for lease_ttl.
    const changes: (Heartbeat | null)[] = [];
    tracker.onChange((_role, nodeId, heartbeat) => {
      if (nodeId === '1') changes.push(heartbeat);
    });
    const heartbeater = await startHeartbeat('1', 3);
    const view = viewWithNodes({ '1': 3 });
    await valueOnceAccepted(() => tracker.liveNodes(view, LEASE_TTL_MS), (live) => live.has('1'));
    await heartbeater.stop();
    const live = await valueOnceAccepted(() => tracker.liveNodes(view, LEASE_TTL_MS), (set) => set.size === 0, LEASE_TTL_MS / 2);
    expect(live).toEqual(new Set());
    expect(tracker.heartbeatOf('1')).toBeNull();
    expect(changes.at(0)).toMatchObject({ nodeId: '1', role: 'data-node', epoch: 3 });
    expect(changes.at(-1)).toBeNull();
  });

  it('judges old heartbeats by the server clock when it starts after they were written', async () => {
    // Proves a tracker starting late does not mistake a heartbeat written long ago for a fresh one.
    const kv = await openHeartbeatBucket(nodeConnection, bucket);
    await kv.put(heartbeatKey('data-node', '5'), new TextEncoder().encode(JSON.stringify({ nodeId: '5', role: 'data-node', epoch: 1 })));
    await new Promise((resolve) => setTimeout(resolve, LEASE_TTL_MS + 100));
    const lateTracker = await LivenessTracker.start(trackerConnection, { bucket });
    try {
      expect(lateTracker.heartbeatOf('5')).toMatchObject({ epoch: 1 });
      expect(lateTracker.heartbeatOf('5')!.ageMs).toBeGreaterThanOrEqual(LEASE_TTL_MS);
      expect(lateTracker.liveNodes(viewWithNodes({ '5': 1 }), LEASE_TTL_MS)).toEqual(new Set());
      expect(lateTracker.liveNodes(viewWithNodes({ '5': 1 }), 10 * LEASE_TTL_MS)).toEqual(new Set(['5']));
    } finally {
      await lateTracker.stop();
    }
  }, 15_000);
});

describe('Heartbeater lease (lease reads)', () => {
  it('holds only while a heartbeat sent within the window was stored, counting from when it was sent', async () => {
    // Proves a paused or cut-off process stops trusting its own liveness until a heartbeat gets through again.
    let nowMs = 1_000;
    let failPuts = false;
    let putDelayMs = 0;
    const kv = {
      put: async () => {
        nowMs += putDelayMs;
        if (failPuts) throw new Error('NATS is unreachable');
        return 1;
      },
    } as unknown as ConstructorParameters<typeof Heartbeater>[0];
    const heartbeater = new Heartbeater(kv, () => undefined, () => nowMs);
    heartbeater.trackLease(3_000);
    const held = () => heartbeater.leaseHeldSinceMs() !== null;
    expect(held()).toBe(false);

    await heartbeater.start('1', 'data-node', 1, 60_000);
    expect(held()).toBe(true);
    nowMs += 2_999;
    expect(held()).toBe(true);
    nowMs += 1;
    expect(held()).toBe(false);

    // A failed heartbeat renews nothing.
    failPuts = true;
    await expect(heartbeater.beat()).rejects.toThrow();
    expect(held()).toBe(false);

    // A heartbeat counts from when it was sent, not from when its reply came back.
    failPuts = false;
    putDelayMs = 2_500;
    await heartbeater.beat();
    expect(held()).toBe(true);
    nowMs += 500;
    expect(held()).toBe(false);
    heartbeater.halt();
  });
});

describe('Heartbeater.leaseHeldSinceMs', () => {
  it('dates the lease from the first renewal after the last gap as long as the window', async () => {
    // Proves a pause (no renewal for a window) starts a new chain, so a reader knows it must catch up again.
    let nowMs = 0;
    let failPuts = false;
    const kv = {
      put: async () => {
        if (failPuts) throw new Error('NATS is unreachable');
        return 1;
      },
    } as unknown as ConstructorParameters<typeof Heartbeater>[0];
    const heartbeater = new Heartbeater(kv, () => undefined, () => nowMs);
    heartbeater.trackLease(1_000);
    expect(heartbeater.leaseHeldSinceMs()).toBeNull();
    await heartbeater.start('1', 'data-node', 1, 60_000);
    expect(heartbeater.leaseHeldSinceMs()).toBe(0);
    for (const at of [400, 800, 1_200]) {
      nowMs = at;
      await heartbeater.beat();
    }
    expect(heartbeater.leaseHeldSinceMs()).toBe(0);
    // Paused: no renewal gets through for longer than the window.
    failPuts = true;
    nowMs = 1_900;
    await expect(heartbeater.beat()).rejects.toThrow();
    nowMs = 2_300;
    expect(heartbeater.leaseHeldSinceMs()).toBeNull();
    failPuts = false;
    await heartbeater.beat();
    expect(heartbeater.leaseHeldSinceMs()).toBe(2_300);
    nowMs = 2_700;
    await heartbeater.beat();
    expect(heartbeater.leaseHeldSinceMs()).toBe(2_300);
    heartbeater.halt();
  });
});

describe('isJoiningHeartbeat', () => {
  it.each<[string, number, number | undefined, boolean]>([
    ['epoch 0, never registered', 0, undefined, true],
    ['epoch 0, registered before (a restarted node catching up)', 0, 4, true],
    ['registered in entries the view has not applied', 5, 4, true],
    ['registered for the first time beyond the view', 1, undefined, true],
    ['at the view epoch: live or dead, not joining', 4, 4, false],
    ['below the view epoch (a fenced incarnation still heartbeating)', 3, 4, false],
  ])('%s', (_case, heartbeatEpoch, viewEpoch, joining) => {
    // Proves a node that just registered is never taken for dead by a lease holder whose view lags its registration.
    expect(isJoiningHeartbeat(heartbeatEpoch, viewEpoch)).toBe(joining);
  });
});
