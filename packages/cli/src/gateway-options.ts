import { Command, Option } from 'commander';
import { DEFAULT_GATEWAY_URL, GATEWAY_URL_VARIABLE, GatewayClient, TOKEN_VARIABLE, resolveGatewayUrl } from './gateway-client';
import { printLine, type CliIo } from './io';
import { renderJson } from './render';
import { gatewayFetch } from './tls-fetch';

/** The options every command that talks to the gateway accepts. */
export interface GatewayFlags {
  gateway?: string;
  json?: boolean;
}

/** Adds `--gateway` and `--json`; `jsonHelp` says what --json prints when it is not the gateway's answer as it is. */
export function addGatewayOptions(command: Command, jsonHelp = 'print the raw JSON answer'): Command {
  return command
    .addOption(
      new Option('--gateway <url>', `gateway base URL (env ${GATEWAY_URL_VARIABLE})`).default(undefined, DEFAULT_GATEWAY_URL),
    )
    .option('--json', jsonHelp);
}

/** The client of the gateway the flags and the environment name, with MINK_TOKEN, trusting MINK_TLS_CA_FILE for an https gateway. */
export function gatewayClient(flags: GatewayFlags, io: CliIo): GatewayClient {
  const token = io.env[TOKEN_VARIABLE];
  const fetcher = gatewayFetch(io.env, io.fetch);
  return new GatewayClient(resolveGatewayUrl(flags.gateway, io.env), { fetch: fetcher }, token === undefined || token === '' ? undefined : token);
}

/** Prints `result` as JSON when --json is given, otherwise as `render` formats it. */
export function printResult<T>(io: CliIo, flags: GatewayFlags, result: T, render: (result: T) => string): void {
  if (flags.json) io.writeOut(renderJson(result));
  else printLine(io, render(result));
}
