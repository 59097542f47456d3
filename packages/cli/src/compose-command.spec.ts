import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ComposeOptions } from '@mink/devcluster';
import type { ComposeRunner } from './compose-command';
import type { CliIo } from './io';
import { run } from './program';

/** Runs `mink <args>` with a recorder in place of the compose stack; `fail` makes the stack call fail. */
async function runCompose(args: string[], fail?: Error): Promise<{ exitCode: number; stderr: string; calls: { verb: string; args: readonly string[]; options: ComposeOptions }[] }> {
  let stderr = '';
  const calls: { verb: string; args: readonly string[]; options: ComposeOptions }[] = [];
  const io: CliIo = { writeOut: () => undefined, writeError: (text) => void (stderr += text), env: {}, fetch: () => Promise.reject(new Error('no fetch')) };
  const record =
    (verb: string) =>
    async (userArguments: readonly string[], options: ComposeOptions): Promise<void> => {
      calls.push({ verb, args: userArguments, options });
      if (fail) throw fail;
    };
  const runner: ComposeRunner = { up: record('up'), down: record('down'), secrets: (options) => record('secrets')([], options) };
  const exitCode = await run(args, io, undefined, runner);
  return { exitCode, stderr, calls };
}

describe('mink compose', () => {
  it.each<[string[], string, string[], 'local' | 'registry']>([
    [['compose', 'up'], 'up', [], 'local'],
    // `npm run compose:up -- --scale data-node=5`: compose's own options pass through as they are.
    [['compose', 'up', '--', '--scale', 'data-node=5'], 'up', ['--scale', 'data-node=5'], 'local'],
    [['compose', 'up', '--scale', 'data-node=5', '--no-color'], 'up', ['--scale', 'data-node=5', '--no-color'], 'local'],
    [['compose', 'up', '--registry'], 'up', [], 'registry'],
    [['compose', 'down'], 'down', [], 'local'],
    [['compose', 'down', '--keep-data'], 'down', ['--keep-data'], 'local'],
    [['compose', 'secrets'], 'secrets', [], 'local'],
  ])('%p runs %s with %p and %s images from the checkout', async (args, verb, passed, source) => {
    const { exitCode, calls } = await runCompose(args);
    expect(exitCode).toBe(0);
    expect(calls.map((call) => ({ verb: call.verb, args: call.args, source: call.options.source }))).toEqual([{ verb, args: passed, source }]);
    // The compose files are found in the checkout the CLI runs from.
    expect(existsSync(join(calls[0]!.options.root, 'docker', 'docker-compose.yml'))).toBe(true);
  });

  it('prints a failure of the stack as one line and exits 1', async () => {
    const { exitCode, stderr } = await runCompose(['compose', 'up'], new Error('Docker, compose or debootstrap not found: install them (Debian: apt-get install docker.io docker-compose debootstrap)'));
    expect(exitCode).toBe(1);
    expect(stderr).toBe('error: Docker, compose or debootstrap not found: install them (Debian: apt-get install docker.io docker-compose debootstrap)\n');
  });

  it('refuses an option compose down does not take', async () => {
    const { exitCode, calls } = await runCompose(['compose', 'down', '--volumes']);
    expect(exitCode).toBe(2);
    expect(calls).toEqual([]);
  });
});
