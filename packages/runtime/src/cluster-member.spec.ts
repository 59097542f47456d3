import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ENV, readServiceConfig, type ServiceConfig } from '@mink/config';
import { startNatsServer, startS3Server, type NatsServerHandle, type S3ServerHandle } from '@mink/devcluster';
import type { Command } from '@mink/meta';
import { SnapshotScheduler, type SnapshotRound } from '@mink/metalog';
import { ClusterMember } from './cluster-member';

const BUCKET = 'mink-cluster-member-test';
const SNAPSHOT_EVERY_COMMANDS = 100;
const ENTRIES = 450;

/** A logger that keeps every line as parsed JSON, so a test can read what `join` reported. */
function recordingLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, destination), lines };
}

function registerNode(index: number): Command {
  return { type: 'RegisterNode', nodeId: `node-${index % 9}`, address: `mink.node.${index % 9}` };
}

describe('ClusterMember.join with snapshots of the view', () => {
  let dataDir: string;
  let nats: NatsServerHandle;
  let s3: S3ServerHandle;
  let config: ServiceConfig;
  const members: ClusterMember[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-cluster-member-'));
    [nats, s3] = await Promise.all([
      startNatsServer({ dataDir: join(dataDir, 'nats') }),
      startS3Server({ dataDir: join(dataDir, 's3'), bucket: BUCKET }),
    ]);
    config = readServiceConfig({
      [ENV.natsUrl]: nats.url,
      [ENV.s3Endpoint]: s3.endpoint,
      [ENV.s3Bucket]: BUCKET,
      [ENV.metaSnapshotEveryCommands]: String(SNAPSHOT_EVERY_COMMANDS),
    });
  }, 30_000);

  afterAll(async () => {
    await Promise.all(members.map((member) => member.close()));
    await Promise.all([nats?.stop(), s3?.stop()]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lets a process that joins after the log was purged start from the newest snapshot and see the same view', async () => {
    // Proves the production join path loads the snapshot and tails after it: a replay from entry 1 is impossible once the log is purged.
    expect(config.metaSnapshotEveryCommands).toBe(SNAPSHOT_EVERY_COMMANDS);
    const first = recordingLogger();
    const veteran = await ClusterMember.join(config, first.logger, 'veteran');
    members.push(veteran);
    expect(first.lines.find((line) => line.msg === 'joined the cluster: metadata view caught up')).toMatchObject({ seq: 0, snapshotSeq: 0, replayedEntries: 0 });

    const rounds: SnapshotRound[] = [];
    const scheduler = new SnapshotScheduler({
      store: veteran.store,
      log: veteran.log,
      snapshots: veteran.snapshots,
      everyCommands: veteran.config.metaSnapshotEveryCommands,
      onSnapshot: (round) => rounds.push(round),
    });
    await scheduler.start();
    for (let index = 0; index < ENTRIES; index += 50) {
      await Promise.all(Array.from({ length: 50 }, (_unused, offset) => veteran.store.propose(registerNode(index + offset))));
      await scheduler.idle();
    }
    await scheduler.stop();
    expect(rounds.map((round) => round.seq)).toEqual([100, 200, 300, 400]);
    expect(await veteran.log.firstSeq()).toBe(201);
    expect(await veteran.snapshots.oldestKeptSeq()).toBe(200);

    const second = recordingLogger();
    const late = await ClusterMember.join(config, second.logger, 'late');
    members.push(late);
    expect(late.view).toEqual(veteran.view);
    expect(late.view.seq).toBe(ENTRIES);
    expect(late.view.nodes['node-3']?.epoch).toBe(veteran.view.nodes['node-3']?.epoch);
    expect(second.lines.find((line) => line.msg === 'joined the cluster: metadata view caught up')).toMatchObject({
      seq: ENTRIES,
      snapshotSeq: 400,
      replayedEntries: 50,
      attempts: 1,
    });

    // The late member keeps following the log like any other.
    await veteran.store.propose(registerNode(1));
    await late.store.waitForSeq(ENTRIES + 1, 10_000);
    expect(late.view).toEqual(veteran.view);
  }, 30_000);
});
