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
}

export function processIo(): CliIo {
  return {
    writeOut: (text) => void process.stdout.write(text),
    writeError: (text) => void process.stderr.write(text),
    env: process.env,
    fetch: (input, init) => fetch(input, init),
  };
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
