import { Command, Option } from 'commander';
import { LIMITS } from '@mink/config';
import { CliError, UsageError, printLine, type CliIo } from './io';
import { addGatewayOptions, gatewayClient, type GatewayFlags } from './gateway-options';
import type { GatewayClient } from './gateway-client';
import { jsonlBatches, rowsBody } from './jsonl';
import { commaSeparated, integerInRange, parseDurationOption } from './options';
import { ProgressReporter, formatLoadSummary, type LoadProgress } from './progress';

/** Rows of JSON text one append or put call carries at most, whatever --batch says (well under the gateway's body bound). */
export const LOAD_CALL_BYTES_MAX = 4 * 1024 * 1024;
/** Records one scan request asks for. */
export const SCAN_PAGE_RECORDS = 10_000;
/** How long a `--follow` request waits at the high watermark before asking again. */
export const FOLLOW_WAIT_MS = 10_000;

interface LoadFlags extends GatewayFlags {
  batch: number;
}

interface ScanFlags extends GatewayFlags {
  bucket?: number;
  partition?: string;
  from: number;
  limit?: number;
  follow?: boolean;
  columns?: string;
  wait: number;
}

interface LookupFlags extends GatewayFlags {
  columns?: string;
}

/** The data commands: bulk loads from JSON Lines (`append`, `put`), `scan` and `lookup`, all through the gateway. */
export function registerDataCommands(program: Command, io: CliIo): void {
  for (const [verb, route, done] of [
    ['append', 'append', 'appended'],
    ['put', 'put', 'put'],
  ] as const) {
    addGatewayOptions(
      program
        .command(`${verb} <table> [file]`)
        .description(
          `${verb === 'append' ? 'append the rows' : 'put (insert or replace) the rows'} of a JSON Lines file (one JSON object per line; - or none: standard input), ` +
            'in calls of --batch rows, showing progress on standard error',
        )
        .option('--batch <rows>', 'rows per call (also at most 4 MiB of JSON per call)', integerInRange(1, 100_000), 1_000),
    ).action(async (table: string, file: string | undefined, flags: LoadFlags) => {
      await loadRows(io, gatewayClient(flags, io), { table, route, done, file: file ?? '-', batchRows: flags.batch });
    });
  }

  addGatewayOptions(
    program
      .command('scan <table>')
      .description('print the records of a table (every bucket, or --bucket) as JSON Lines: {offset, timestamp, changeType?, row}; --follow waits for new ones')
      .option('--bucket <n>', 'only this bucket', integerInRange(0, LIMITS.bucketsPerTableMax - 1))
      .option('--partition <name>', 'the partition to scan (required for a partitioned table)')
      .option('--from <offset>', 'first offset of each bucket scanned', integerInRange(0, Number.MAX_SAFE_INTEGER), 0)
      .option('--limit <records>', 'stop after this many records in all', integerInRange(1, Number.MAX_SAFE_INTEGER))
      .option('--columns <names>', 'comma-separated projection')
      .option('--follow', 'at the end of a bucket, wait for new records instead of stopping (until Ctrl-C or --limit)')
      .addOption(new Option('--wait <duration>', 'with --follow: how long one request waits for new records').argParser(parseDurationOption).default(FOLLOW_WAIT_MS, '10s')),
  ).action(async (table: string, flags: ScanFlags) => {
    await scanTable(io, gatewayClient(flags, io), table, flags);
  });

  addGatewayOptions(
    program
      .command('lookup <table> <keys...>')
      .description('print the rows of a primary-key table with these keys (each a JSON object of the key columns), one JSON line each, null when absent')
      .option('--columns <names>', 'comma-separated projection'),
  ).action(async (table: string, keyTexts: string[], flags: LookupFlags) => {
    const keys = keyTexts.map((text, index) => {
      let key: unknown;
      try {
        key = JSON.parse(text);
      } catch {
        key = undefined;
      }
      if (typeof key !== 'object' || key === null || Array.isArray(key)) throw new UsageError(`key ${index + 1} ('${text}') is not a JSON object such as '{"id": 1}'`);
      return key;
    });
    const body = { keys, ...(flags.columns === undefined ? {} : { columns: commaSeparated(flags.columns) }) };
    const answer = await gatewayClient(flags, io).post<{ rows: unknown[] }>(`/v1/tables/${encodeURIComponent(table)}/lookup`, body);
    for (const row of answer.rows) printLine(io, JSON.stringify(row));
  });
}

/**
 * A bulk load: the JSON Lines input in calls of at most `batchRows` rows, one call at a time (so rows reach
 * each bucket in file order), with progress on standard error and a summary on standard output. A bad line or
 * a refused call stops the load, saying which rows were written before it.
 */
async function loadRows(io: CliIo, client: GatewayClient, load: { table: string; route: string; done: string; file: string; batchRows: number }): Promise<void> {
  if (io.openInput === undefined) throw new Error('this CLI cannot read input');
  const now = io.now ?? (() => Date.now());
  const input = io.openInput(load.file);
  const started = now();
  const progress: LoadProgress = { rows: 0, bytes: 0, totalBytes: input.size, elapsedMs: 0 };
  const reporter = new ProgressReporter(io, io.errorIsTerminal === true, now);
  const path = `/v1/tables/${encodeURIComponent(load.table)}/${load.route}`;
  // The lines of the call in flight, named when it is refused; a bad line names itself.
  let callLines: string | null = null;
  try {
    for await (const batch of jsonlBatches(input.chunks, { rowsMax: load.batchRows, bytesMax: LOAD_CALL_BYTES_MAX })) {
      if (batch.rows.length > 0) {
        callLines = `lines ${batch.firstLine}-${batch.firstLine + batch.rows.length - 1}`;
        await client.postJsonText(path, rowsBody(batch.rows));
        callLines = null;
      }
      progress.rows += batch.rows.length;
      progress.bytes += batch.inputBytes;
      progress.elapsedMs = now() - started;
      reporter.update(progress);
    }
  } catch (error) {
    reporter.finish();
    if (!(error instanceof CliError) && callLines === null) throw error;
    const failedCall = callLines === null ? '' : `the call of ${callLines} failed; `;
    throw new CliError(`${(error as Error).message} (${failedCall}the ${progress.rows} rows before it were ${load.done})`);
  }
  reporter.finish();
  progress.elapsedMs = now() - started;
  printLine(io, formatLoadSummary(load.done, load.table, progress));
}

interface ScanReply {
  text: string;
  nextOffset: number;
  highWatermark: number;
}

/**
 * `mink scan`: every bucket asked for, in order, from `--from` to its high watermark as NDJSON records, or
 * with `--follow` every bucket at once, each waiting at its end for new records, until `--limit` records.
 */
async function scanTable(io: CliIo, client: GatewayClient, table: string, flags: ScanFlags): Promise<void> {
  const described = await client.get<{ buckets: number; partition?: unknown; bucketLeaders: { partition?: string }[] }>(`/v1/tables/${encodeURIComponent(table)}`);
  if (described.partition !== undefined && flags.partition === undefined) {
    const partitions = [...new Set(described.bucketLeaders.map((bucket) => bucket.partition).filter((name) => name !== undefined))];
    throw new UsageError(`table '${table}' is partitioned: name one with --partition (${partitions.length > 0 ? partitions.join(', ') : 'none exists now'})`);
  }
  const buckets = flags.bucket !== undefined ? [flags.bucket] : Array.from({ length: described.buckets }, (_, bucket) => bucket);
  let left = flags.limit ?? Number.POSITIVE_INFINITY;
  // With --follow, the buckets still waiting are called off once --limit records are printed.
  const done = new AbortController();
  const scanBucket = async (bucket: number): Promise<void> => {
    let offset = flags.from;
    while (left > 0) {
      let reply: ScanReply;
      try {
        reply = await scanPage(client, table, bucket, offset, Math.min(SCAN_PAGE_RECORDS, left), flags, flags.follow === true ? flags.wait : 0, done.signal);
      } catch (error) {
        if (done.signal.aborted) return;
        throw error;
      }
      const lines = reply.text === '' ? [] : reply.text.replace(/\n$/, '').split('\n');
      const taken = lines.slice(0, Math.max(0, Math.min(lines.length, left)));
      if (taken.length > 0) io.writeOut(`${taken.join('\n')}\n`);
      left -= taken.length;
      if (left <= 0) done.abort();
      offset = reply.nextOffset;
      if (flags.follow !== true && offset >= reply.highWatermark) return;
    }
  };
  if (flags.follow === true) await Promise.all(buckets.map(scanBucket));
  else for (const bucket of buckets) await scanBucket(bucket);
}

async function scanPage(
  client: GatewayClient,
  table: string,
  bucket: number,
  offset: number,
  limit: number,
  flags: ScanFlags,
  waitMs: number,
  signal: AbortSignal,
): Promise<ScanReply> {
  const query = new URLSearchParams({ bucket: String(bucket), offset: String(offset), limit: String(limit) });
  if (flags.partition !== undefined) query.set('partition', flags.partition);
  if (flags.columns !== undefined) query.set('columns', flags.columns);
  if (waitMs > 0) query.set('wait', `${waitMs}ms`);
  const { text, headers } = await client.getText(`/v1/tables/${encodeURIComponent(table)}/scan?${query.toString()}`, 'application/x-ndjson', LIMITS.cliRequestTimeoutMs + waitMs, signal);
  const nextOffset = Number(headers.get('mink-next-offset'));
  const highWatermark = Number(headers.get('mink-high-watermark'));
  if (!Number.isSafeInteger(nextOffset) || !Number.isSafeInteger(highWatermark)) throw new CliError('the gateway answered a scan without Mink-Next-Offset and Mink-High-Watermark headers');
  return { text, nextOffset, highWatermark };
}
