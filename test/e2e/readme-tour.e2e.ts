/**
 * The README's five-minute tour, run as a reader runs it (issue 44: docs that cannot drift): `mink up` as a
 * real process in a fresh folder, then every ```sh tour block of README.md in order through bash, in the
 * folder that holds the cluster's `.mink` data dir (as the reader's repository folder does), with the
 * README's addresses turned into the cluster's free ports (`MINK_GATEWAY_URL` set for the CLI) and
 * `pnpm mink` into the built CLI. A block fails the test when it exits non-zero, when the API answers an
 * error, or when its output lacks a text a `# expect:` comment names; a `tour retry` block (the lake, which
 * fills after its freshness) is run again until it passes or 120 s have gone by.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '@mink/devcluster';
import { eventually } from '@mink/testing';
import { scriptForCluster, tourBlocks, tourOutputProblem, type TourBlock, type TourCluster } from '../support/readme-tour';

jest.setTimeout(600_000);

const REPO_ROOT = resolve(__dirname, '..', '..');
const CLI_PATH = join(REPO_ROOT, 'packages', 'cli', 'dist', 'main.js');
const BLOCK_TIMEOUT_MS = 90_000;
const RETRY_DEADLINE_MS = 120_000;

interface ClusterEntry {
  role: string;
  nodeId: string | null;
  pid: number;
  ports: Record<string, number>;
}

interface BlockRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a block through bash in `cwd`; the CLI finds the gateway through `MINK_GATEWAY_URL`, as a reader's would at 8080. */
function runBlock(script: string, cwd: string, gatewayUrl: string): Promise<BlockRun> {
  const env = { ...process.env, MINK_GATEWAY_URL: gatewayUrl };
  return new Promise((resolveRun) => {
    execFile('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd, env, timeout: BLOCK_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolveRun({ code, stdout, stderr });
    });
  });
}

/** Null when the block passed, else what went wrong with its output. */
function blockProblem(block: TourBlock, run: BlockRun): string | null {
  if (run.code !== 0) return `exit ${run.code}`;
  return tourOutputProblem(block, run.stdout);
}

let folder: string;
let minkUp: ChildProcess | undefined;
let output = '';

afterAll(async () => {
  if (minkUp && minkUp.exitCode === null && minkUp.signalCode === null) {
    const exited = new Promise((resolveExit) => minkUp!.once('exit', resolveExit));
    minkUp.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolveLater) => (timer = setTimeout(resolveLater, 45_000)))]);
    clearTimeout(timer);
  }
  try {
    const entries = (JSON.parse(readFileSync(join(folder, '.mink', 'cluster.json'), 'utf8')) as { processes: ClusterEntry[] }).processes;
    for (const entry of entries) {
      try {
        process.kill(entry.pid, 'SIGKILL');
      } catch {
        // Already gone, as it should be after the SIGTERM.
      }
    }
  } catch {
    // No cluster.json: nothing was started.
  }
  rmSync(folder, { recursive: true, force: true });
});

describe('the README tour', () => {
  const blocks = tourBlocks(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'));
  let cluster: TourCluster;

  beforeAll(async () => {
    if (!existsSync(CLI_PATH)) throw new Error('build first (pnpm run build)');
    folder = mkdtempSync(join(tmpdir(), 'mink-readme-tour-'));
    const gatewayPort = await freePort();
    const args = [CLI_PATH, 'up', '--data-dir', join(folder, '.mink'), '--gateway-port', String(gatewayPort), '--grpc-port', '0', '--kafka-port', '0'];
    args.push('--lease-ttl', '3s', '--coordinator-tick', '500ms');
    const child = spawn(process.execPath, args, { cwd: folder, stdio: ['ignore', 'pipe', 'pipe'] });
    minkUp = child;
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    await eventually('mink up to be ready', () => {
      if (child.exitCode !== null) throw new Error(`mink up exited with code ${child.exitCode}:\n${output}`);
      return output.includes('Ctrl-C to stop');
    }, { timeoutMs: 120_000, intervalMs: 200 });
    const entries = (JSON.parse(readFileSync(join(folder, '.mink', 'cluster.json'), 'utf8')) as { processes: ClusterEntry[] }).processes;
    const kafka = entries.find((entry) => entry.role === 'data-node' && entry.nodeId === '1')!.ports.kafka!;
    cluster = { gatewayUrl: `http://127.0.0.1:${gatewayPort}`, kafkaAddress: `127.0.0.1:${kafka}`, mink: `node ${CLI_PATH}` };
  });

  it('has blocks to run', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
  });

  it.each(blocks.map((block) => [block.line, block]))('runs the block at README line %i as written', async (_line, block) => {
    const script = scriptForCluster(block.script, cluster);
    let run = await runBlock(script, folder, cluster.gatewayUrl);
    if (block.retry) {
      const deadline = Date.now() + RETRY_DEADLINE_MS;
      while (blockProblem(block, run) !== null && Date.now() < deadline) {
        await new Promise((resolveLater) => setTimeout(resolveLater, 2_000));
        run = await runBlock(script, folder, cluster.gatewayUrl);
      }
    }
    const problem = blockProblem(block, run);
    if (problem !== null) {
      throw new Error(`README block at line ${block.line}: ${problem}\n--- script\n${script}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
    }
  });
});
