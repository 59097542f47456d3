import { Command, CommanderError } from 'commander';
import { registerClusterCommands } from './cluster-commands';
import { registerComposeCommands, type ComposeRunner } from './compose-command';
import { registerDataCommands } from './data-commands';
import { CliError, EXIT_CODES, processIo, type CliIo } from './io';
import { registerLakeCommands } from './lake-commands';
import { registerTableCommands } from './table-commands';
import { registerUpCommand, type StartCluster } from './up-command';

/**
 * The `mink` command tree. Output goes through `io`, and commander never exits the process itself
 * (exitOverride), so `run` decides every exit code and tests can drive the whole CLI in-process.
 * Settings are made before the subcommands are added because commander copies them at creation.
 */
export function buildProgram(io: CliIo = processIo(), startCluster?: StartCluster, composeRunner?: ComposeRunner): Command {
  const program = new Command('mink')
    .description('mink: streaming storage for real-time analytics on object storage')
    .exitOverride()
    .allowExcessArguments(false)
    .configureOutput({ writeOut: (text) => io.writeOut(text), writeErr: (text) => io.writeError(text) });
  registerUpCommand(program, io, startCluster);
  registerTableCommands(program, io);
  registerClusterCommands(program, io);
  registerDataCommands(program, io);
  registerLakeCommands(program, io);
  registerComposeCommands(program, io, composeRunner);
  return program;
}

/**
 * Runs the CLI on `args` (without the node and script paths) and returns the exit code: 0 on success and
 * for --help, 1 when an operation failed, 2 when the command line is wrong.
 */
export async function run(args: string[], io: CliIo = processIo(), startCluster?: StartCluster, composeRunner?: ComposeRunner): Promise<number> {
  return runProgram(() => buildProgram(io, startCluster, composeRunner), args, io);
}

/**
 * Parses `args` with the program `build` returns and turns the outcome into an exit code, as `run` does for
 * `mink` (and the bench for `mink-bench`): 0 on success and for --help, 1 when an operation failed, 2 when
 * the command line is wrong. The program must be built with exitOverride. Commander has already printed its
 * own one-line message for a usage error; every other error is printed here as `error: <message>`.
 */
export async function runProgram(build: () => Command, args: string[], io: CliIo): Promise<number> {
  try {
    await build().parseAsync(withoutForwardedSeparator(args), { from: 'user' });
    return EXIT_CODES.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT_CODES.ok;
      return EXIT_CODES.usage;
    }
    if (error instanceof CliError) {
      io.writeError(`error: ${error.message}\n`);
      return error.exitCode;
    }
    io.writeError(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT_CODES.failure;
  }
}

/**
 * `pnpm run <script> -- --flag` forwards the `--` to the script (`pnpm mink -- table list --json`), where commander
 * would take every flag after it as an excess argument. The first lone `--` is therefore dropped; no
 * command of mink takes an operand that starts with `-`, so nothing meant literally is lost.
 */
export function withoutForwardedSeparator(args: string[]): string[] {
  const separator = args.indexOf('--');
  return separator === -1 ? args : [...args.slice(0, separator), ...args.slice(separator + 1)];
}
