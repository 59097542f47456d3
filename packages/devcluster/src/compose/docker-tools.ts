import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LIMITS } from '@mink/config';

/** The programs the compose stack is run with. */
export interface DockerTools {
  /** The Docker client: Debian's (/usr/bin/docker) first, which matches Debian's dockerd, else the one on PATH. */
  docker: string;
  /** The compose command: v1 `docker-compose` when installed, else v2 `docker compose`. */
  compose: string[];
  debootstrap: string;
}

/** Runs a program to its end and resolves with its output; rejects naming the command and its stderr when it fails. */
export function runTool(command: string, args: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { env: options.env ?? process.env, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 0 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${[command, ...args].join(' ')} failed: ${(stderr || error.message).trim().split('\n').slice(-5).join(' | ')}`));
      else resolve({ stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

async function succeeds(command: string, args: readonly string[]): Promise<boolean> {
  return runTool(command, args, { timeoutMs: 20_000 }).then(
    () => true,
    () => false,
  );
}

/** The first of `candidates` that exists as a file, or is found on PATH by `command -v`. */
async function findProgram(candidates: readonly string[]): Promise<string | null> {
  for (const candidate of candidates) {
    if (candidate.startsWith('/')) {
      if (existsSync(candidate)) return candidate;
    } else if (await succeeds('sh', ['-c', `command -v ${candidate}`])) {
      return candidate;
    }
  }
  return null;
}

const DEBIAN_PACKAGES = ['docker.io', 'docker-compose', 'debootstrap'];

/**
 * Finds Docker, compose and debootstrap, installing Debian's packages when one is missing and this runs as
 * root on Debian; otherwise fails with one line saying what to install.
 */
export async function ensureDockerTools(log: (line: string) => void): Promise<DockerTools> {
  const find = async (): Promise<DockerTools | null> => {
    const docker = await findProgram(['/usr/bin/docker', 'docker']);
    const debootstrap = await findProgram(['/usr/sbin/debootstrap', 'debootstrap']);
    const composeV1 = await findProgram(['/usr/bin/docker-compose', 'docker-compose']);
    const compose = composeV1 !== null ? [composeV1] : docker !== null && (await succeeds(docker, ['compose', 'version'])) ? [docker, 'compose'] : null;
    return docker !== null && debootstrap !== null && compose !== null && existsSync('/usr/sbin/dockerd') ? { docker, compose, debootstrap } : null;
  };
  const found = await find();
  if (found !== null) return found;
  const root = process.getuid?.() === 0;
  if (!root || (await findProgram(['apt-get'])) === null) {
    throw new Error(`Docker, compose or debootstrap not found: install them (Debian: apt-get install ${DEBIAN_PACKAGES.join(' ')})`);
  }
  log(`installing ${DEBIAN_PACKAGES.join(', ')} from Debian's packages`);
  await runTool('apt-get', ['update', '-qq']);
  await runTool('apt-get', ['install', '-y', '-qq', ...DEBIAN_PACKAGES], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const installed = await find();
  if (installed === null) throw new Error(`Docker, compose or debootstrap still not found after installing ${DEBIAN_PACKAGES.join(' ')}`);
  return installed;
}

/** The file holding the pid of the dockerd `compose:up` started, so that `compose:down` stops that one only. */
function dockerdPidFile(stateDir: string): string {
  return join(stateDir, 'dockerd.pid');
}

/**
 * Makes sure a Docker engine answers: when none does, starts Debian's dockerd (as root; its log in
 * `<stateDir>/dockerd.log`), says so, and records its pid for `compose:down`. Fails with one line when it
 * cannot start one.
 */
export async function ensureDockerDaemon(tools: DockerTools, stateDir: string, log: (line: string) => void): Promise<void> {
  if (await succeeds(tools.docker, ['info', '--format', '{{.ServerVersion}}'])) return;
  if (process.getuid?.() !== 0) throw new Error('no Docker engine answers: start dockerd (as root: dockerd &) or run compose:up as root');
  mkdirSync(stateDir, { recursive: true });
  const logFile = join(stateDir, 'dockerd.log');
  const output = openSync(logFile, 'a');
  const daemon = spawn('/usr/sbin/dockerd', [], { detached: true, stdio: ['ignore', output, output] });
  daemon.unref();
  if (daemon.pid === undefined) throw new Error('could not start /usr/sbin/dockerd');
  writeFileSync(dockerdPidFile(stateDir), `${daemon.pid}\n`);
  const deadline = Date.now() + LIMITS.composeDockerdStartTimeoutMs;
  while (!(await succeeds(tools.docker, ['info', '--format', '{{.ServerVersion}}']))) {
    if (Date.now() > deadline) throw new Error(`dockerd (pid ${daemon.pid}) did not answer within ${LIMITS.composeDockerdStartTimeoutMs / 1000} s: see ${logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  log(`started dockerd (pid ${daemon.pid}, log ${logFile}); npm run compose:down stops it`);
}

/** Stops the dockerd `ensureDockerDaemon` started, if it did: SIGTERM, then SIGKILL after the stop timeout. */
export async function stopStartedDockerDaemon(stateDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = dockerdPidFile(stateDir);
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  const alive = (): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (Number.isInteger(pid) && pid > 0 && alive()) {
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + LIMITS.composeDockerdStopTimeoutMs;
    while (alive() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    if (alive()) process.kill(pid, 'SIGKILL');
    log(`stopped dockerd (pid ${pid}), which compose:up had started`);
  }
  rmSync(pidFile, { force: true });
}
