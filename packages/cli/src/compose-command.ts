import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { COMPOSE_FILES, composeDown, composeSecretsDirOf, composeUp, ensureComposeSecrets, type ComposeOptions } from '@mink/devcluster';
import { CliError, EXIT_CODES, type CliIo } from './io';

/** What `mink compose` runs: the real stack, or a recorder in tests. */
export interface ComposeRunner {
  up(userArguments: readonly string[], options: ComposeOptions): Promise<void>;
  down(userArguments: readonly string[], options: ComposeOptions): Promise<void>;
  /** Makes the stack's secrets folder (kept where it exists) and says where it is. */
  secrets(options: ComposeOptions): Promise<void>;
}

/** `mink compose secrets`: the secrets folder docker-compose.yml reads, for a `docker compose up` run by hand. */
async function composeSecrets(options: ComposeOptions): Promise<void> {
  const secrets = await ensureComposeSecrets(composeSecretsDirOf(options.root, options.env ?? process.env), options.log);
  options.log(`the stack's secrets are in ${secrets.folder} (admin token: ${secrets.adminTokenFile})`);
}

/** The checkout this CLI runs from (packages/cli/dist/…): the compose files live there. */
const REPOSITORY_ROOT = resolve(__dirname, '..', '..', '..');

function optionsOf(io: CliIo, registry: boolean): ComposeOptions {
  if (!existsSync(join(REPOSITORY_ROOT, COMPOSE_FILES.base))) {
    throw new CliError(`mink compose runs from a checkout of mink: ${COMPOSE_FILES.base} is not under ${REPOSITORY_ROOT}`, EXIT_CODES.failure);
  }
  return { root: REPOSITORY_ROOT, source: registry ? 'registry' : 'local', log: (line) => io.writeError(`compose: ${line}\n`) };
}

/**
 * `mink compose up [compose up options…]`, `mink compose down [--keep-data]` (`npm run compose:up` and
 * `compose:down`) and `mink compose secrets`: the docker-compose deployment of docker/ on this machine, with images built here unless
 * `--registry` (packages/devcluster/src/compose).
 */
export function registerComposeCommands(program: Command, io: CliIo, runner: ComposeRunner = { up: composeUp, down: composeDown, secrets: composeSecrets }): void {
  const compose = program.command('compose').description('run the docker-compose deployment (docker/docker-compose.yml) on this machine');
  compose
    .command('up')
    .description('build the images (from Debian and this workspace unless --registry), start the stack detached and wait until every service is healthy')
    .option('--registry', 'use the official images of a registry and build the mink images from docker/Dockerfile instead')
    .argument('[compose-options...]', 'options of docker-compose up, e.g. --scale data-node=5')
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (composeOptions: string[], flags: { registry?: boolean }) => {
      await runner.up(composeOptions, optionsOf(io, flags.registry === true)).catch(failed);
    });
  compose
    .command('down')
    .description("remove the stack's containers, networks and volumes (unless --keep-data); stop dockerd if compose up started it")
    .option('--keep-data', 'keep the volumes: every table and row is back at the next compose up')
    .action(async (flags: { keepData?: boolean }) => {
      await runner.down(flags.keepData === true ? ['--keep-data'] : [], optionsOf(io, false)).catch(failed);
    });
  compose
    .command('secrets')
    .description(`make the stack's secrets (NATS users and TLS, tokens, cluster secret, metrics token, S3 key) in docker/secrets, or $MINK_COMPOSE_SECRETS_DIR, keeping those there; compose up does it too`)
    .action(async () => {
      await runner.secrets(optionsOf(io, false)).catch(failed);
    });
}

function failed(error: unknown): never {
  throw new CliError(error instanceof Error ? error.message : String(error), EXIT_CODES.failure);
}
