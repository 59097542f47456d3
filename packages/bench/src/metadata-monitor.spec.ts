import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEARTBEAT_BUCKET } from '@mink/metalog';
import { HEARTBEAT_BUCKET_NAME, lastFatalLine, processLabel } from './metadata-monitor';

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
});
