import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { LIMITS } from '@mink/config';

/**
 * A child process started by a launcher: its output goes to a log file (when given) and the last
 * `LIMITS.devServerOutputTailBytesMax` bytes are kept in memory so a failed start can say why.
 * `stop()` sends SIGTERM, waits up to `LIMITS.devServerStopTimeoutMs`, then sends SIGKILL.
 */
export interface ManagedProcess {
  readonly process: ChildProcess;
  readonly pid: number;
  /** Resolves with the exit code (null when killed by a signal) once the process has exited. */
  readonly exited: Promise<number | null>;
  hasExited(): boolean;
  /** The most recent output of the process (stdout and stderr interleaved). */
  outputTail(): string;
  stop(): Promise<void>;
}

export interface ManagedProcessOptions {
  logFile?: string;
  env?: NodeJS.ProcessEnv;
  /** Called with each complete line the process writes to stdout. */
  onStdoutLine?: (line: string) => void;
}

/**
 * Children still running. They are killed when this process exits, so a crashed test run or an
 * interrupted `mink up` does not leave servers holding ports and directories behind.
 */
const runningChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of runningChildren) child.kill('SIGKILL');
  });
}

export function spawnManaged(command: string, args: string[], options: ManagedProcessOptions = {}): ManagedProcess {
  installExitHook();
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env });
  // A failed spawn (or a failed kill) is reported as an 'error' event; without a listener it would crash
  // the launcher instead of failing the start, which is reported below or by the exit.
  child.on('error', () => undefined);
  if (child.pid === undefined) {
    // spawn reports a missing binary asynchronously; without a pid there is nothing to manage.
    throw new Error(`could not start ${command}`);
  }
  runningChildren.add(child);

  let logStream: WriteStream | undefined;
  if (options.logFile) {
    mkdirSync(dirname(options.logFile), { recursive: true });
    logStream = createWriteStream(options.logFile, { flags: 'a' });
  }
  let tail = '';
  const remember = (chunk: Buffer): void => {
    logStream?.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-LIMITS.devServerOutputTailBytesMax);
  };
  let partialLine = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    remember(chunk);
    if (!options.onStdoutLine) return;
    const lines = (partialLine + chunk.toString('utf8')).split('\n');
    partialLine = lines.pop() ?? '';
    for (const line of lines) options.onStdoutLine(line);
  });
  child.stderr!.on('data', remember);

  let hasExited = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      hasExited = true;
      runningChildren.delete(child);
      resolve(code);
    });
  });
  // The log ends once the output pipes have: output can still arrive after 'exit' (read late, or written by
  // a process the child left behind holding them), and a write after the end would crash the launcher.
  child.once('close', () => logStream?.end());

  const stop = async (): Promise<void> => {
    if (hasExited) return;
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), LIMITS.devServerStopTimeoutMs);
    });
    const result = await Promise.race([exited, timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') {
      child.kill('SIGKILL');
      await exited;
    }
  };

  return {
    process: child,
    pid: child.pid,
    exited,
    hasExited: () => hasExited,
    outputTail: () => tail,
    stop,
  };
}
