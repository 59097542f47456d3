import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BucketEventsLog } from '@mink/data-plane';
import { HEARTBEAT_BUCKET } from '@mink/metalog';
import { TAKEOVER_MESSAGE } from './metadata';
import { HEARTBEAT_BUCKET_NAME, bucketsInLogText, lastFatalLine, processLabel } from './metadata-monitor';

describe('reading the cluster from outside', () => {
  it('watches the heartbeat bucket the processes write to', () => {
    // Proves the bench's copy of the bucket name (the CLI does not depend on @mink/metalog) has not drifted.
    expect(HEARTBEAT_BUCKET_NAME).toBe(HEARTBEAT_BUCKET);
  });

  it.each<[string, string | null, string]>([
    ['data-node', '2', 'data-node 2'],
    ['coordinator', 'coordinator-1', 'coordinator-1'],
    ['nats', null, 'nats'],
  ])('labels %s %s', (role, nodeId, expected) => {
    expect(processLabel({ role: role as 'data-node', nodeId })).toBe(expected);
  });

  it('quotes the last fatal line of a log, and nothing when there is none', () => {
    // Proves a process that fell over is reported with the error that ended it.
    const directory = mkdtempSync(join(tmpdir(), 'mink-metadata-figures-'));
    try {
      const log = join(directory, 'data-node-1.log');
      writeFileSync(
        log,
        [
          '{"level":30,"msg":"bucket opened"}',
          '{"level":60,"err":{"type":"LogPurgedError","message":"entries 8193..10000 of the metadata log were purged"},"msg":"uncaught exception"}',
          'not json at all',
          '',
        ].join('\n'),
      );
      expect(lastFatalLine(log)).toBe('uncaught exception: LogPurgedError: entries 8193..10000 of the metadata log were purged');
      writeFileSync(log, '{"level":30,"msg":"stopped"}\n');
      expect(lastFatalLine(log)).toBeNull();
      expect(lastFatalLine(join(directory, 'missing.log'))).toBeNull();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it.each([
    ['no such line', ['{"level":30,"msg":"buckets opened","buckets":9}'], 0],
    ['one line', ['{"level":30,"msg":"buckets taken over","buckets":4,"first":["t/1@2 from 2@1"]}'], 4],
    [
      'lines of several seconds among others, one cut short',
      ['{"level":30,"msg":"buckets taken over","buckets":4}', '{"level":30,"msg":"buckets opened","buckets":4}', '{"level":30,"msg":"buckets taken over","buckets":30}', '{"level":30,"msg":"buckets taken o'],
      34,
    ],
    ['a line that only mentions it', ['{"level":30,"msg":"something else","note":"buckets taken over","buckets":5}'], 0],
  ])('counts the buckets of the takeover lines in a log: %s', (_what, lines, expected) => {
    expect(bucketsInLogText(lines.join('\n'), TAKEOVER_MESSAGE)).toBe(expected);
  });

  it("counts what a data node's BucketEventsLog writes for takeovers", () => {
    // Proves the bench's copy of the message has not drifted from the data node's.
    // pino's JSON line is its bindings with `msg` (the data node's own spec checks the lines pino writes).
    let text = '';
    const logger = { isLevelEnabled: () => false, info: (fields: object, msg: string) => (text += `${JSON.stringify({ level: 30, ...fields, msg })}\n`) };
    const events = new BucketEventsLog(logger as unknown as ConstructorParameters<typeof BucketEventsLog>[0], 60_000);
    for (let bucket = 0; bucket < 3; bucket++) events.note('taken over', { table: 't', partition: null, bucket, epoch: 2, from: { node: '2', nodeEpoch: 1 } });
    events.flush();
    expect(bucketsInLogText(text, TAKEOVER_MESSAGE)).toBe(3);
  });
});
