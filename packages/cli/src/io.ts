import { createReadStream, statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
/**
 * Where the CLI writes and what it reads from its surroundings. `main.ts` binds it to the real process;
 * tests bind it to buffers and a fake `fetch`, so every command can be run without a network or a TTY.
 */
export interface CliIo {
  /** Writes text to standard output as is (callers add the newline). */
  writeOut(text: string): void;
  /** Writes text to standard error as is. */
  writeError(text: string): void;
  env: NodeJS.ProcessEnv;
  fetch: typeof fetch;
  /** The bytes of a file, or of standard input for `-`, and the file's size (null for standard input). */
  openInput?(path: string): CliInput;
  /** Whether standard error is a terminal (progress is then redrawn in place). */
  errorIsTerminal?: boolean;
  /** Milliseconds of a monotonic clock. */
  now?(): number;
}

export interface CliInput {
  chunks: AsyncIterable<Uint8Array>;
  size: number | null;
}

export function processIo(): CliIo {
  return {
    writeOut: (text) => void process.stdout.write(text),
    writeError: (text) => void process.stderr.write(text),
    env: process.env,
    fetch: (input, init) => fetch(input, init),
    openInput: openProcessInput,
    errorIsTerminal: process.stderr.isTTY === true,
    now: () => performance.now(),
  };
}

function openProcessInput(path: string): CliInput {
  if (path === '-') return { chunks: process.stdin, size: null };
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new CliError(`${path} is not a file`);
    size = stat.size;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return { chunks: createReadStream(path), size };
}

/** Exit codes of `mink`: 0 success, 1 a failed operation, 2 a command line that cannot be run. */
export const EXIT_CODES = { ok: 0, failure: 1, usage: 2 } as const;

/**
 * An expected failure of a command. `run` prints it as one line, `error: <message>`, and exits with
 * `exitCode`, so no stack trace reaches the user for something they can fix.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_CODES.failure,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A command line that parsed but makes no sense (a malformed `--columns`, say): exit code 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_CODES.usage);
    this.name = 'UsageError';
  }
}

export function printLine(io: CliIo, text = ''): void {
  io.writeOut(`${text}\n`);
}
