export { buildProgram, run, runProgram, withoutForwardedSeparator } from './program';
export { processIo, CliError, UsageError, EXIT_CODES, type CliIo } from './io';
export { commaSeparated, integerInRange } from './options';
export { renderJson, renderTable } from './render';
export { buildCreateTableBody, parseColumns, parsePartition, type CreateTableBody } from './table-commands';
export { clusterOptionsFromFlags, DEFAULT_DATA_DIR, type StartCluster, type UpFlags } from './up-command';
export { GATEWAY_URL_VARIABLE, DEFAULT_GATEWAY_URL, TOKEN_VARIABLE, resolveGatewayUrl } from './gateway-client';
export { MEGABYTE_BYTES, formatCount, formatMegabytes } from './format';
