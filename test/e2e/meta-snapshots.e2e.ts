/**
 * Snapshots of the metadata view on real processes: with MINK_META_SNAPSHOT_EVERY=10 the coordinator lease
 * holder snapshots the view to `meta/snapshots/` and purges the log below the oldest kept snapshot while
 * tables are created and rows appended; after a whole-cluster restart on the same data dir every service
 * starts from the snapshots (a replay from entry 1 is impossible by then), at least from the last entry
 * written before the stop (the lease holder snapshots on a clean stop), and every table and row is back.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'nats';
import { DEFAULTS } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { SNAPSHOT_BUCKET } from '@mink/metalog';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

const SNAPSHOT_EVERY_COMMANDS = 10;
const BUCKETS = 4;
const ROWS_PER_APPEND = 20;
const APPENDS = 30;
/** Appends at most, while waiting for three kept snapshots. */
const APPENDS_MAX = 200;

async function startCluster(dataDir: string): Promise<LocalCluster> {
  return LocalCluster.start({
    dataDir,
    nodes: 2,
    coordinators: 1,
    gatewayPort: 0,
    kafkaPort: 0,
    leaseTtlMs: 3_000,
    coordinatorTickMs: 500,
    env: { MINK_META_SNAPSHOT_EVERY: String(SNAPSHOT_EVERY_COMMANDS) },
  });
}

/** The first and last sequence of the metadata log, and the sequences the snapshot pointer names. */
async function logAndSnapshots(natsUrl: string): Promise<{ firstSeq: number; lastSeq: number; snapshotSeqs: number[] }> {
  const connection = await connect({ servers: natsUrl });
  try {
    const info = await (await connection.jetstreamManager()).streams.info(DEFAULTS.metaStream);
    const kv = await connection.jetstream().views.kv(SNAPSHOT_BUCKET);
    const entry = await kv.get(DEFAULTS.metaStream);
    const pointer = entry?.json<{ snapshots: { seq: number }[] }>();
    return { firstSeq: info.state.first_seq, lastSeq: info.state.last_seq, snapshotSeqs: (pointer?.snapshots ?? []).map((snapshot) => snapshot.seq) };
  } finally {
    await connection.close();
  }
}

/** The last lines of the coordinators' logs about snapshots, the lease or registration. */
function coordinatorSnapshotLines(dataDir: string): string[] {
  const logDir = join(dataDir, 'logs');
  const files = existsSync(logDir) ? readdirSync(logDir).filter((file) => file.startsWith('coordinator')) : [];
  const lines = files.flatMap((file) => readFileSync(join(logDir, file), 'utf8').split('\n').filter((line) => /snapshot|lease|coordinator|regist/i.test(line)));
  return lines.slice(-20);
}

async function rowCount(gateway: string, table: string): Promise<number> {
  let count = 0;
  for (let bucket = 0; bucket < BUCKETS; bucket++) {
    const response = await http(gateway, 'GET', `/v1/tables/${table}/scan?bucket=${bucket}&offset=0&limit=10000`);
    if (response.status !== 200) throw new Error(`scan of bucket ${bucket} answered ${response.status}: ${JSON.stringify(response.body)}`);
    count += response.body.records.length;
  }
  return count;
}

describe('metadata view snapshots on a real local cluster', () => {
  const directory = temporaryDirectory('meta-snapshots');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('snapshots and purges the metadata log while it grows, and restarts the whole cluster from the snapshots', async () => {
    // Proves the coordinator wiring end to end: snapshots are written every 10 entries, the log is purged behind them, and a restart needs nothing older.
    cluster = await startCluster(directory.path);
    const gateway = cluster.gatewayUrl;
    const created = await http(gateway, 'POST', '/v1/tables', { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'body', type: 'string' }], buckets: BUCKETS });
    expect(created.status).toBe(201);
    let nextId = 0;
    let appends = 0;
    const appendOnce = async (): Promise<void> => {
      const rows = Array.from({ length: ROWS_PER_APPEND }, () => ({ id: String(nextId++), body: `row ${nextId}` }));
      const appended = await eventually('an append to be accepted', async () => {
        const response = await http(gateway, 'POST', '/v1/tables/events/append', { rows });
        return response.status === 200 ? response : undefined;
      });
      expect(appended.body.appended).toBe(ROWS_PER_APPEND);
      appends += 1;
    };
    while (appends < APPENDS) await appendOnce();

    // Appends go on, one per poll, until three snapshots are kept and the log is purged behind them: how many
    // log entries an append costs depends on how the WAL writers group their commits.
    let lastSeen: Awaited<ReturnType<typeof logAndSnapshots>> | undefined;
    const before = await eventually('a purged log behind three kept snapshots', async () => {
      const state = await logAndSnapshots(cluster!.natsUrl);
      lastSeen = state;
      if (state.snapshotSeqs.length === 3 && state.firstSeq > 1) return state;
      if (appends < APPENDS_MAX) await appendOnce();
      return undefined;
    }).catch((error: Error) => {
      // What the wait saw last and what the lease holder said of its snapshot rounds: the cause, not just the timeout.
      throw new Error(`${error.message}; last seen ${JSON.stringify(lastSeen)} after ${appends} appends; coordinator log:\n${coordinatorSnapshotLines(directory.path).join('\n')}`);
    });
    // The log is purged, never above the oldest kept snapshot (every kept snapshot can be started from); it
    // may keep a few more entries that a data node had not applied yet by its last heartbeat (the purge margin).
    expect(before.firstSeq).toBeGreaterThan(1);
    expect(before.firstSeq).toBeLessThanOrEqual(Math.min(...before.snapshotSeqs) + 1);
    expect(Math.max(...before.snapshotSeqs)).toBeGreaterThan(before.lastSeq - 2 * SNAPSHOT_EVERY_COMMANDS);
    expect(await rowCount(gateway, 'events')).toBe(appends * ROWS_PER_APPEND);

    // The lease holder's clean stop leaves a snapshot of the view as it then is, so every process of the
    // restarted cluster starts from the last entry written before the stop or later (the due snapshots alone
    // lag by up to 9 entries). The holder has applied that entry before the stop begins.
    // Appends first take the last entry past the newest due snapshot, so that only the stop's can cover it.
    const holder = cluster.processes().find((entry) => entry.role === 'coordinator')!;
    const holderApplied = async (): Promise<number> => {
      const metrics = (await http(`http://127.0.0.1:${holder.ports.http}`, 'GET', '/metrics')).body as string;
      return Number(/^mink_meta_applied_seq(?:\{[^}]*\})? (\d+)$/m.exec(metrics)?.[1] ?? 0);
    };
    let lastSeqBeforeStop = 0;
    await eventually('the last entry past every due snapshot, applied by the lease holder', async () => {
      await appendOnce();
      const state = await logAndSnapshots(cluster!.natsUrl);
      lastSeqBeforeStop = state.lastSeq;
      const applied = await eventually('the lease holder applied the last entry', async () => ((await holderApplied()) >= state.lastSeq ? true : undefined));
      return applied && state.lastSeq > Math.max(...(await logAndSnapshots(cluster!.natsUrl)).snapshotSeqs) ? true : undefined;
    });
    await cluster.stop();
    cluster = await startCluster(directory.path);
    const restarted = cluster.gatewayUrl;
    expect((await http(restarted, 'GET', '/v1/tables')).body.tables.map((table: any) => table.name)).toEqual(['events']);
    const after = await logAndSnapshots(cluster.natsUrl);
    expect(after.firstSeq).toBeGreaterThanOrEqual(before.firstSeq);
    // Every service of the restarted cluster says it started from a snapshot, replaying less than a full replay would.
    const joins = readdirSync(cluster.logDir)
      .filter((file) => /^(coordinator|data-node|gateway|tiering)-/.test(file))
      .map((file) => {
        const lines = readFileSync(join(cluster!.logDir, file), 'utf8').split('\n').filter((line) => line.includes('joined the cluster'));
        const last = JSON.parse(lines[lines.length - 1]!) as { snapshotSeq: number; replayedEntries: number };
        return { file, snapshotSeq: last.snapshotSeq, replayedEntries: last.replayedEntries };
      });
    expect(joins).toHaveLength(5);
    for (const joined of joins) {
      expect(joined.snapshotSeq).toBeGreaterThanOrEqual(lastSeqBeforeStop);
      expect(joined.replayedEntries).toBeLessThan(before.lastSeq);
    }
    expect(
      await eventually('every row readable after the restart', async () => {
        const count = await rowCount(restarted, 'events').catch(() => 0);
        return count === appends * ROWS_PER_APPEND ? count : undefined;
      }),
    ).toBe(appends * ROWS_PER_APPEND);
  });
});
