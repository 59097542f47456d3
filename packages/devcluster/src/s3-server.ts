import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LIMITS } from '@mink/config';
import { spawnManaged, type ManagedProcess } from './managed-process';
import { freePort } from './ports';
import { s3LatencyArguments, type S3Latency } from './s3-latency';

export interface S3ServerOptions {
  /** Folder that keeps the objects; restarting on the same folder keeps them. */
  dataDir: string;
  /** Port on 127.0.0.1; a free one is picked when absent. */
  port?: number;
  /** Bucket created at start when it does not exist yet. */
  bucket: string;
  /** Where the server's output goes (appended); kept in memory only when absent. */
  logFile?: string;
  /** Answers held back by this first-byte latency, as a cloud object store's come (the bench's `--s3-latency`); none when absent. */
  latency?: S3Latency;
}

/** A running s3rver (S3-compatible, path-style, credentials S3RVER/S3RVER) listening on 127.0.0.1. */
export interface S3ServerHandle {
  /** `http://127.0.0.1:<port>`; use it with `forcePathStyle: true`. */
  endpoint: string;
  port: number;
  pid: number;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL if the server has not exited within `LIMITS.devServerStopTimeoutMs`. */
  stop(): Promise<void>;
}

/** The runner script; the same relative path works from `src/` under Jest and from `dist/` after a build. */
export const S3RVER_RUNNER_PATH = join(__dirname, '..', 'bin', 's3rver-main.js');

const HOST = '127.0.0.1';
const READY_LINE_PREFIX = 's3rver ready ';

/**
 * Starts s3rver in its own Node process (with `--openssl-legacy-provider`, which its paging needs) and
 * resolves once it prints its ready line. When no port is given and the picked one is taken before the
 * server binds it, the start is retried on another port.
 */
export async function startS3Server(options: S3ServerOptions): Promise<S3ServerHandle> {
  mkdirSync(options.dataDir, { recursive: true });
  const attemptsMax = options.port === undefined ? LIMITS.devServerStartAttemptsMax : 1;
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= attemptsMax; attempt++) {
    const port = options.port ?? (await freePort(HOST));
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    const args = [
      '--openssl-legacy-provider',
      S3RVER_RUNNER_PATH,
      '--port',
      String(port),
      '--directory',
      options.dataDir,
      '--bucket',
      options.bucket,
      ...s3LatencyArguments(options.latency),
    ];
    const server = spawnManaged(process.execPath, args, {
      logFile: options.logFile,
      onStdoutLine: (line) => {
        if (line.startsWith(READY_LINE_PREFIX)) markReady();
      },
    });
    try {
      await waitForReady(server, ready, port);
      return { endpoint: `http://${HOST}:${port}`, port, pid: server.pid, process: server.process, stop: server.stop };
    } catch (error) {
      await server.stop();
      lastError = error as Error;
    }
  }
  throw lastError;
}

async function waitForReady(server: ManagedProcess, ready: Promise<void>, port: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), LIMITS.devServerStartTimeoutMs);
  });
  try {
    const result = await Promise.race([ready.then(() => 'ready' as const), server.exited.then(() => 'exited' as const), timedOut]);
    if (result === 'exited') throw new Error(`s3rver exited during start on port ${port}: ${server.outputTail().trim()}`);
    if (result === 'timeout') throw new Error(`s3rver did not get ready on port ${port} within ${LIMITS.devServerStartTimeoutMs} ms`);
  } finally {
    clearTimeout(timer);
  }
}
