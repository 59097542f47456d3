import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNatsServer, type NatsServerHandle } from '@mink/devcluster';
import type { Command } from '@mink/meta';
import { LIMITS } from '@mink/config';
import { JetStreamMetaLog, LogPurgedError, metaLogSubject } from './meta-log';
import { startPublishFilterProxy } from './nats-publish-filter.fixture';
import { startTcpProxy } from './tcp-proxy.fixture';

function registerNode(nodeId: string): Command {
  return { type: 'RegisterNode', nodeId };
}

/** Collects tail deliveries and resolves `until(n)` once n entries have arrived. */
function collector() {
  const entries: { seq: number; command: Command }[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  return {
    entries,
    onEntry: (seq: number, command: Command) => {
      entries.push({ seq, command });
      for (const waiter of waiting.filter((candidate) => entries.length >= candidate.count)) waiter.resolve();
    },
    until: (count: number, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (entries.length >= count) return resolve();
        const timer = setTimeout(() => reject(new Error(`only ${entries.length} of ${count} entries arrived`)), timeoutMs);
        waiting.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      }),
  };
}

describe('JetStreamMetaLog', () => {
  let dataDir: string;
  let server: NatsServerHandle;
  let connection: NatsConnection;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-meta-log-'));
    server = await startNatsServer({ dataDir });
    connection = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  });

  afterAll(async () => {
    await connection?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('derives one clean subject from the stream name', () => {
    // Proves the default stream MINK_META publishes on mink.meta.log.
    expect(metaLogSubject('MINK_META')).toBe('mink.meta.log');
    expect(metaLogSubject('TEST_META_2')).toBe('test.meta.2.log');
  });

  it('creates the stream once even when several processes race, with file storage, de-duplication and no single deletes', async () => {
    // Proves concurrent create() calls converge on one correctly configured stream.
    const logs = await Promise.all([1, 2, 3].map(() => JetStreamMetaLog.create(connection, { streamName: 'RACE_META' })));
    expect(logs.map((log) => log.subject)).toEqual(['race.meta.log', 'race.meta.log', 'race.meta.log']);
    const info = await (await connection.jetstreamManager()).streams.info('RACE_META');
    expect(info.config).toMatchObject({ subjects: ['race.meta.log'], storage: 'file', duplicate_window: 120_000_000_000, deny_delete: true });
  });

  it('appends in order and de-duplicates a repeated message id to the original sequence', async () => {
    // Proves a retried append (same message id) lands once and is told the sequence of the first one.
    const log = await JetStreamMetaLog.create(connection, { streamName: 'DEDUP_META' });
    expect(await log.lastSeq()).toBe(0);
    expect(await log.append(registerNode('1'), 'id-a')).toEqual({ seq: 1, duplicate: false });
    expect(await log.append(registerNode('2'), 'id-b')).toEqual({ seq: 2, duplicate: false });
    expect(await log.append(registerNode('1'), 'id-a')).toEqual({ seq: 1, duplicate: true });
    expect(await log.lastSeq()).toBe(2);

    const tail = collector();
    const subscription = log.tail(1, tail.onEntry);
    await tail.until(2);
    await subscription.stop();
    expect(tail.entries).toEqual([
      { seq: 1, command: registerNode('1') },
      { seq: 2, command: registerNode('2') },
    ]);
  });

  it('tails from a start sequence, then follows new appends, strictly in order', async () => {
    // Proves a process that loaded a view at seq 3 receives exactly 4, 5, ... including entries appended later.
    const log = await JetStreamMetaLog.create(connection, { streamName: 'TAIL_META' });
    for (let index = 1; index <= 5; index++) await log.append(registerNode(String(index)), `early-${index}`);
    const tail = collector();
    const subscription = log.tail(4, tail.onEntry);
    await tail.until(2);
    for (let index = 6; index <= 20; index++) await log.append(registerNode(String(index)), `late-${index}`);
    await tail.until(17);
    await subscription.stop();
    expect(tail.entries.map((entry) => entry.seq)).toEqual(Array.from({ length: 17 }, (_unused, index) => index + 4));
    expect(tail.entries.map((entry) => (entry.command as { nodeId: string }).nodeId)).toEqual(
      Array.from({ length: 17 }, (_unused, index) => String(index + 4)),
    );
  });

  it('keeps tailing in order when the server loses the consumer', async () => {
    // Proves the ordered consumer recreates itself after a server-side hiccup without skipping or repeating entries.
    const log = await JetStreamMetaLog.create(connection, { streamName: 'HICCUP_META' });
    const manager = await connection.jetstreamManager();
    await log.append(registerNode('1'), 'hiccup-1');
    const tail = collector();
    const subscription = log.tail(1, tail.onEntry);
    await tail.until(1);
    for await (const consumer of manager.consumers.list('HICCUP_META')) {
      await manager.consumers.delete('HICCUP_META', consumer.name);
    }
    for (let index = 2; index <= 6; index++) await log.append(registerNode(String(index)), `hiccup-${index}`);
    await tail.until(6, 20_000);
    await subscription.stop();
    expect(tail.entries.map((entry) => entry.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  }, 30_000);

  /**
   * Tails `streamName` from entry 1 through a proxy; once the first entry has arrived, the refill pulls of
   * the tail's first consumer are dropped on their way to the server (as nats-server < 2.9.15 drops a pull
   * that expires just as a message arrives), so after the 256 entries of its first pull it delivers nothing
   * while nats.js counts its pulls as pending. Then 299 more entries are appended through `appender` (the
   * tail's own log, or another); resolves with what arrived within `withinMs` and the pulls dropped.
   */
  async function tailWithLostPulls(
    streamName: string,
    options: { tailIdleHeartbeatMs?: number; appendThroughTail: boolean; withinMs: number },
  ): Promise<{ seqs: number[]; nodeIds: string[]; dropped: number }> {
    const proxy = await startPublishFilterProxy(Number(new URL(server.url).port));
    const proxied = await connect({ servers: `nats://127.0.0.1:${proxy.port}`, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      const log = await JetStreamMetaLog.create(proxied, { streamName, tailIdleHeartbeatMs: options.tailIdleHeartbeatMs });
      const appender = options.appendThroughTail ? log : await JetStreamMetaLog.create(connection, { streamName });
      await appender.append(registerNode('0'), `${streamName}-0`);
      const tail = collector();
      const subscription = log.tail(1, tail.onEntry);
      await tail.until(1);
      proxy.setDrop((subject) => subject.startsWith(`$JS.API.CONSUMER.MSG.NEXT.${streamName}.`) && subject.endsWith('_1'));
      for (let index = 1; index < 300; index++) await appender.append(registerNode(String(index)), `${streamName}-${index}`);
      await tail.until(300, options.withinMs).finally(() => subscription.stop());
      return {
        seqs: tail.entries.map((entry) => entry.seq),
        nodeIds: tail.entries.map((entry) => (entry.command as { nodeId: string }).nodeId),
        dropped: proxy.dropped.length,
      };
    } finally {
      await proxied.close();
      await proxy.close();
    }
  }

  it('replaces a consumer that stops delivering an entry this log appended, long before heartbeats or the stall check would', async () => {
    // Proves the appended-entry watch. Idle heartbeats are set to 2 s (the server refuses pulls whose
    // heartbeat is not well below their 5 s expiry), so nats.js would pull again only after 4 s, and the
    // stall check (no progress for metaTailStallMs, then the next entry held for metaTailStallMs more) needs
    // at least as long; the watch recovers the tail within a few looks of LIMITS.metaTailAppendedEntryWaitMs.
    const withinMs = Math.min(2 * LIMITS.metaTailStallMs, 2 * 2_000) - 1_000;
    const result = await tailWithLostPulls('STALL_META', { tailIdleHeartbeatMs: 2_000, appendThroughTail: true, withinMs });
    expect(result.dropped).toBeGreaterThan(0);
    expect(result.seqs).toEqual(Array.from({ length: 300 }, (_unused, index) => index + 1));
    expect(result.nodeIds).toEqual(Array.from({ length: 300 }, (_unused, index) => String(index)));
  }, 30_000);

  it('recovers a tail that appends nothing from a consumer that stops delivering through its idle heartbeats', async () => {
    // Proves the heartbeat path for the processes the appended-entry watch does not cover (gateway, idle
    // nodes): another log appends, and two missed heartbeats of LIMITS.metaTailIdleHeartbeatMs replace the
    // consumer: within 8 heartbeats and before the stall check could (4 s).
    const withinMs = Math.min(8 * LIMITS.metaTailIdleHeartbeatMs, 2 * LIMITS.metaTailStallMs - 1_000);
    const result = await tailWithLostPulls('QUIET_META', { appendThroughTail: false, withinMs });
    expect(result.dropped).toBeGreaterThan(0);
    expect(result.seqs).toEqual(Array.from({ length: 300 }, (_unused, index) => index + 1));
  }, 30_000);

  it('paces a tail: every entry once and in order, more than a batch at a time, and entries another log appends later', async () => {
    // Proves a paced tail (the gateway's, the coordinators', the tiering worker's) delivers exactly what an eager one does.
    const streamName = 'PACED_META';
    const writer = await JetStreamMetaLog.create(connection, { streamName });
    const reader = await JetStreamMetaLog.create(connection, { streamName, tailPaceMs: 200 });
    const early = LIMITS.metaTailBatchMessagesMax * 2 + 10;
    for (let index = 1; index <= early; index++) await writer.append(registerNode(String(index)), `paced-${index}`);
    const tail = collector();
    const subscription = reader.tail(3, tail.onEntry);
    await tail.until(early - 2);
    for (let index = early + 1; index <= early + 20; index++) await writer.append(registerNode(String(index)), `paced-${index}`);
    await tail.until(early + 18);
    await subscription.stop();
    expect(tail.entries.map((entry) => entry.seq)).toEqual(Array.from({ length: early + 18 }, (_unused, index) => index + 3));
    expect(tail.entries.map((entry) => (entry.command as { nodeId: string }).nodeId)).toEqual(Array.from({ length: early + 18 }, (_unused, index) => String(index + 3)));
  }, 30_000);

  it('wakes a paced tail at once for an entry its own log appended', async () => {
    // Proves a paced process's proposals do not wait for its pace: with a pace of a minute, its own entries
    // (and everything before them) still arrive, well within the collector's 10 s.
    const streamName = 'PACED_OWN_META';
    const other = await JetStreamMetaLog.create(connection, { streamName });
    const own = await JetStreamMetaLog.create(connection, { streamName, tailPaceMs: 60_000 });
    const tail = collector();
    const subscription = own.tail(1, tail.onEntry);
    // The first poll finds nothing and the tail pauses for its minute.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await other.append(registerNode('other'), 'paced-own-1');
    await own.append(registerNode('own'), 'paced-own-2');
    await tail.until(2);
    await own.append(registerNode('own-again'), 'paced-own-3');
    await tail.until(3);
    await subscription.stop();
    expect(tail.entries.map((entry) => [entry.seq, (entry.command as { nodeId: string }).nodeId])).toEqual([
      [1, 'other'],
      [2, 'own'],
      [3, 'own-again'],
    ]);
  }, 30_000);

  it('lets an idle paced tail wait on the server: it asks about once per wait, and takes another log\'s entry as it is stored', async () => {
    // Proves the paced tail's waiting poll: an idle coordinator or gateway no longer asks ten times a second,
    // and an entry appended elsewhere reaches it at once, not after its pace (here a minute, longer than
    // the collector waits) or after the end of the poll's wait.
    const streamName = 'PACED_IDLE_META';
    const other = await JetStreamMetaLog.create(connection, { streamName });
    const paced = await JetStreamMetaLog.create(connection, { streamName, tailPaceMs: 60_000 });
    const polls = connection.subscribe(`$JS.API.CONSUMER.MSG.NEXT.${streamName}.>`);
    const tail = collector();
    const subscription = paced.tail(1, tail.onEntry);
    const idleMs = 3_000;
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    const pollsWhileIdle = polls.getReceived();
    // At a poll per pause the services' paced tails (100 ms) asked about idleMs / 100 times.
    expect(pollsWhileIdle).toBeGreaterThanOrEqual(1);
    expect(pollsWhileIdle).toBeLessThanOrEqual(Math.ceil(idleMs / LIMITS.metaTailPollWaitMs) + 1);
    await other.append(registerNode('elsewhere'), 'paced-idle-1');
    // Sooner than the stall check could bring it (no progress for metaTailStallMs, then held as long again).
    await tail.until(1, LIMITS.metaTailStallMs);
    await subscription.stop();
    polls.unsubscribe();
    expect(tail.entries).toEqual([{ seq: 1, command: registerNode('elsewhere') }]);
  }, 30_000);

  it('checks an up-to-date idle tail for a stall only every metaTailIdleCheckIntervalMs', async () => {
    // Proves the stall check backs off while the log holds nothing undelivered: at every
    // metaTailCheckIntervalMs each process of an idle cluster asked for the stream's info twice a second.
    const streamName = 'IDLE_CHECK_META';
    const log = await JetStreamMetaLog.create(connection, { streamName });
    await log.append(registerNode('1'), 'idle-check-1');
    const infos = connection.subscribe(`$JS.API.STREAM.INFO.${streamName}`);
    const tail = collector();
    const subscription = log.tail(1, tail.onEntry);
    await tail.until(1);
    const idleMs = LIMITS.metaTailStallMs + 2 * LIMITS.metaTailIdleCheckIntervalMs + 500;
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    await subscription.stop();
    infos.unsubscribe();
    // The checks start once nothing arrived for metaTailStallMs; at metaTailCheckIntervalMs they would be 9.
    const checksDue = (idleMs - LIMITS.metaTailStallMs) / LIMITS.metaTailIdleCheckIntervalMs;
    expect(infos.getReceived()).toBeGreaterThanOrEqual(1);
    expect(infos.getReceived()).toBeLessThanOrEqual(Math.ceil(checksDue) + 1);
  }, 30_000);

  it('asks at once when someone waits for an entry of a paced tail (catchUp)', async () => {
    // Proves the hint MetaStore.waitForSeq gives: an entry another log appended arrives long before the pace of a minute.
    const streamName = 'PACED_CATCH_UP_META';
    const other = await JetStreamMetaLog.create(connection, { streamName });
    const paced = await JetStreamMetaLog.create(connection, { streamName, tailPaceMs: 60_000 });
    const tail = collector();
    const subscription = paced.tail(1, tail.onEntry);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { seq } = await other.append(registerNode('elsewhere'), 'paced-catch-up-1');
    subscription.catchUp!(seq);
    await tail.until(1);
    await subscription.stop();
    expect(tail.entries).toEqual([{ seq: 1, command: registerNode('elsewhere') }]);
  }, 30_000);

  it('keeps a paced tail going in order when the server loses its consumer', async () => {
    // Proves a poll that finds its consumer gone makes a new one at the next entry, skipping and repeating nothing.
    const streamName = 'PACED_HICCUP_META';
    const log = await JetStreamMetaLog.create(connection, { streamName, tailPaceMs: 100 });
    const manager = await connection.jetstreamManager();
    await log.append(registerNode('1'), 'paced-hiccup-1');
    const tail = collector();
    const subscription = log.tail(1, tail.onEntry);
    await tail.until(1);
    for await (const consumer of manager.consumers.list(streamName)) await manager.consumers.delete(streamName, consumer.name);
    const other = await JetStreamMetaLog.create(connection, { streamName });
    for (let index = 2; index <= 6; index++) await other.append(registerNode(String(index)), `paced-hiccup-${index}`);
    await tail.until(6, 20_000);
    await subscription.stop();
    expect(tail.entries.map((entry) => entry.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  }, 30_000);

  it('ends a paced tail that starts below the first held entry with LogPurgedError', async () => {
    // Proves the paced tail checks every sequence as the eager one does.
    const streamName = 'PACED_PURGED_META';
    const log = await JetStreamMetaLog.create(connection, { streamName, tailPaceMs: 100 });
    for (let index = 1; index <= 6; index++) await log.append(registerNode(String(index)), `paced-purged-${index}`);
    await log.purgeBefore(5);
    const tail = collector();
    const error = await new Promise<Error>((resolve) => {
      log.tail(2, tail.onEntry, resolve);
    });
    expect(error).toBeInstanceOf(LogPurgedError);
    expect(error).toMatchObject({ wantedSeq: 2, firstSeq: 5 });
    expect(tail.entries).toEqual([]);
  });

  it('refuses a tail pace that is not a whole number of milliseconds', async () => {
    await expect(JetStreamMetaLog.create(connection, { streamName: 'PACED_BAD_META', tailPaceMs: -1 })).rejects.toThrow('tailPaceMs');
    await expect(JetStreamMetaLog.create(connection, { streamName: 'PACED_BAD_META', tailPaceMs: 0.5 })).rejects.toThrow('tailPaceMs');
  });

  it('reports through onError when its connection closes for good', async () => {
    // Proves a tail never ends silently: a store that can no longer follow the log hears about it.
    const ownConnection = await connect({ servers: server.url });
    const log = await JetStreamMetaLog.create(ownConnection, { streamName: 'CLOSED_META' });
    const errors: Error[] = [];
    const reported = new Promise<void>((resolve) => {
      log.tail(1, () => undefined, (error) => {
        errors.push(error);
        resolve();
      });
    });
    await log.append(registerNode('1'), 'closed-1');
    await ownConnection.close();
    await reported;
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(Error);
  }, 15_000);

  it('delivers a payload that is not JSON as null so sequences stay gap-free', async () => {
    // Proves garbage published by anybody on the subject becomes an entry apply can reject, not a hole.
    const log = await JetStreamMetaLog.create(connection, { streamName: 'GARBAGE_META' });
    await connection.jetstream().publish(log.subject, new TextEncoder().encode('not json'));
    await log.append(registerNode('1'), 'after-garbage');
    const tail = collector();
    const subscription = log.tail(1, tail.onEntry);
    await tail.until(2);
    await subscription.stop();
    expect(tail.entries).toEqual([
      { seq: 1, command: null },
      { seq: 2, command: registerNode('1') },
    ]);
  });

  it('reads an entry damaged on its way to the tail again from the stream, and applies it as stored', async () => {
    // Proves a delivery that is not JSON is not skipped when the stream holds the entry whole: the tail's
    // connection goes through a proxy that damages the first delivery of one entry (its opening brace), as a
    // NATS server or a client library damaging bytes between the stream and this process would.
    const streamName = 'DAMAGED_META';
    const damaged = Buffer.from('{"type":"RegisterNode","nodeId":"damaged-on-delivery"}');
    let damagedOnce = false;
    const proxy = await startTcpProxy(Number(new URL(server.url).port), undefined, () => (chunk) => {
      const at = damagedOnce ? -1 : chunk.indexOf(damaged);
      if (at < 0) return chunk;
      damagedOnce = true;
      const changed = Buffer.from(chunk);
      changed[at] = 0x23;
      return changed;
    });
    const proxied = await connect({ servers: `nats://127.0.0.1:${proxy.port}` });
    try {
      const writer = await JetStreamMetaLog.create(connection, { streamName });
      await writer.append(registerNode('1'), 'before-damage');
      await writer.append(registerNode('damaged-on-delivery'), 'damaged');
      await writer.append(registerNode('2'), 'after-damage');
      const reader = await JetStreamMetaLog.create(proxied, { streamName });
      const tail = collector();
      const subscription = reader.tail(1, tail.onEntry);
      await tail.until(3);
      await subscription.stop();
      expect(damagedOnce).toBe(true);
      expect(tail.entries).toEqual([
        { seq: 1, command: registerNode('1') },
        { seq: 2, command: registerNode('damaged-on-delivery') },
        { seq: 3, command: registerNode('2') },
      ]);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });

  it('purges a prefix despite deny_delete, keeps every entry at or above the purge point and keeps numbering', async () => {
    // Proves purgeBefore(seq) removes exactly the entries below seq, firstSeq follows it, and appends continue at lastSeq + 1.
    const log = await JetStreamMetaLog.create(connection, { streamName: 'PURGE_META' });
    expect(await log.firstSeq()).toBe(1);
    for (let index = 1; index <= 10; index++) await log.append(registerNode(String(index)), `purge-${index}`);
    await log.purgeBefore(7);
    expect(await log.firstSeq()).toBe(7);
    expect(await log.lastSeq()).toBe(10);
    // A purge below what is already gone changes nothing.
    await log.purgeBefore(3);
    expect(await log.firstSeq()).toBe(7);
    expect(await log.append(registerNode('11'), 'purge-11')).toEqual({ seq: 11, duplicate: false });

    const tail = collector();
    const subscription = log.tail(7, tail.onEntry);
    await tail.until(5);
    await subscription.stop();
    expect(tail.entries.map((entry) => entry.seq)).toEqual([7, 8, 9, 10, 11]);
    expect(tail.entries.map((entry) => (entry.command as { nodeId: string }).nodeId)).toEqual(['7', '8', '9', '10', '11']);
    // Purging everything leaves an empty log whose first sequence is the next one to be appended.
    await log.purgeBefore(12);
    expect([await log.firstSeq(), await log.lastSeq()]).toEqual([12, 11]);
  });

  it('ends a tail that starts below the first held entry with LogPurgedError instead of skipping ahead', async () => {
    // Proves a reader whose next entry was purged is told so, and never receives a later entry across the hole.
    const log = await JetStreamMetaLog.create(connection, { streamName: 'PURGED_TAIL_META' });
    for (let index = 1; index <= 6; index++) await log.append(registerNode(String(index)), `purged-tail-${index}`);
    await log.purgeBefore(5);
    const tail = collector();
    const failure = new Promise<Error>((resolve) => {
      log.tail(2, tail.onEntry, resolve);
    });
    const error = await failure;
    expect(error).toBeInstanceOf(LogPurgedError);
    expect(error).toMatchObject({ code: 'Unavailable', wantedSeq: 2, firstSeq: 5 });
    expect(tail.entries).toEqual([]);
  });

  it('ends a running tail with LogPurgedError when a purge overtakes it', async () => {
    // Proves a tail that resumes after losing its consumer stops at the hole instead of jumping over purged entries.
    // The tail replaces a lost consumer within moments, so its process is cut off from NATS (a partition, through
    // a proxy) while its consumer is deleted, entries 2 to 5 are appended and the log is purged below 5.
    const log = await JetStreamMetaLog.create(connection, { streamName: 'OVERTAKEN_META' });
    const manager = await connection.jetstreamManager();
    const proxy = await startTcpProxy(server.port);
    const tailConnection = await connect({ servers: `nats://127.0.0.1:${proxy.port}`, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      const tailLog = await JetStreamMetaLog.create(tailConnection, { streamName: 'OVERTAKEN_META' });
      await log.append(registerNode('1'), 'overtaken-1');
      const tail = collector();
      const failure = new Promise<Error>((resolve) => {
        tailLog.tail(1, tail.onEntry, resolve);
      });
      await tail.until(1);
      proxy.partition();
      for await (const consumer of manager.consumers.list('OVERTAKEN_META')) await manager.consumers.delete('OVERTAKEN_META', consumer.name);
      for (let index = 2; index <= 5; index++) await log.append(registerNode(String(index)), `overtaken-${index}`);
      await log.purgeBefore(5);
      // The partition heals: the tail reconnects, and its new consumer starts at entry 2, which is purged.
      proxy.heal();
      const error = await failure;
      expect(error).toBeInstanceOf(LogPurgedError);
      expect(error).toMatchObject({ wantedSeq: 2, firstSeq: 5 });
      expect(tail.entries.map((entry) => entry.seq)).toEqual([1]);
    } finally {
      await tailConnection.close();
      await proxy.close();
    }
  }, 20_000);
});

describe('JetStreamMetaLog across a server restart', () => {
  it('resumes the tail after the server restarts on the same directory, without skipping or repeating', async () => {
    // Proves a process keeps following the log when nats-server goes away and comes back with its data.
    const dataDir = mkdtempSync(join(tmpdir(), 'mink-meta-restart-'));
    let server = await startNatsServer({ dataDir });
    const connection = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      const log = await JetStreamMetaLog.create(connection, { streamName: 'RESTART_META' });
      await log.append(registerNode('1'), 'before-1');
      await log.append(registerNode('2'), 'before-2');
      const tail = collector();
      const subscription = log.tail(1, tail.onEntry);
      await tail.until(2);

      const { port } = server;
      await server.stop();
      server = await startNatsServer({ dataDir, port });
      const appendAfterRestart = async (nodeId: string) => {
        // The client may still be reconnecting; the append is retried as a proposer would.
        for (let attempt = 1; ; attempt++) {
          try {
            return await log.append(registerNode(nodeId), `after-${nodeId}`);
          } catch (error) {
            if (attempt >= 50) throw error;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      };
      await appendAfterRestart('3');
      await appendAfterRestart('4');
      await tail.until(4, 20_000);
      await subscription.stop();
      expect(tail.entries.map((entry) => [entry.seq, (entry.command as { nodeId: string }).nodeId])).toEqual([
        [1, '1'],
        [2, '2'],
        [3, '3'],
        [4, '4'],
      ]);
    } finally {
      await connection.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
