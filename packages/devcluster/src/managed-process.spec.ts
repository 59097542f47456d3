import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@mink/testing';
import { spawnManaged } from './managed-process';

describe('spawnManaged', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mink-managed-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('logs output that arrives after the process exited (a child it left behind still holds its pipes)', async () => {
    // Proves the log stays open until the output pipes close: ending it at 'exit' made the late write
    // throw "write after end" in the launcher (seen once in CI, in nats-cluster.spec.ts).
    const logFile = join(dir, 'child.log');
    const managed = spawnManaged('sh', ['-c', 'echo early; (sleep 0.3; echo late) & exit 0'], { logFile });
    expect(await managed.exited).toBe(0);
    await eventually('the late line in the log', () => readFileSync(logFile, 'utf8').includes('late'), { timeoutMs: 10_000, intervalMs: 20 });
    expect(readFileSync(logFile, 'utf8')).toBe('early\nlate\n');
    expect(managed.outputTail()).toBe('early\nlate\n');
  });
});
