/**
 * `mink lake files` and `mink lake query`: the live Parquet files of a table's Iceberg lake, and SQL over
 * them with DuckDB. The decisions are pure (lake-tables.ts, lake-sql.ts, lake-settings.ts); this module
 * is the I/O around them: the gateway names each table's current metadata object, `IcebergTable` of
 * @mink/lake walks metadata → manifest list → manifests, `S3ObjectStore` fetches the objects, and an
 * in-memory DuckDB with no extension loading reads local copies of the data files (no httpfs or iceberg
 * extension: neither may be downloaded).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ClusterFile } from '@mink/devcluster';
import { CLUSTER_FILE_NAME } from '@mink/devcluster';
import { type DataFile, type IcebergSchema, IcebergTable, icebergSchemaOf, lakeStoreUri } from '@mink/lake';
import { S3ObjectStore } from '@mink/s3stream';
import { addGatewayOptions, gatewayClient, printResult, type GatewayFlags } from './gateway-options';
import type { GatewayClient } from './gateway-client';
import { CliError, type CliIo } from './io';
import { oneLineError, renderQueryJsonLines, renderQueryTable, tablesNamedIn, viewSql } from './lake-sql';
import { resolveS3Settings, s3Failure, type S3Flags, type S3Settings } from './lake-settings';
import { lakeFileListing, lakeOfTable, noLakeReason, renderLakeFiles, requireLake, type DescribedTable, type TableLake } from './lake-tables';
import { ProgressReporter, type LoadProgress } from './progress';
import { tablePath, tablesOf } from './table-commands';
import { DEFAULT_DATA_DIR } from './up-command';

/** Data files fetched from S3 at once by `lake query`. */
export const LAKE_DOWNLOADS_IN_FLIGHT = 4;
/** How long `lake query` fetches before it shows progress: a fetch done sooner needs none. */
export const LAKE_PROGRESS_DELAY_MS = 1_000;
/** Attempts of one S3 request of the lake commands: fewer than a service makes, so a wrong endpoint fails within seconds. */
export const LAKE_S3_ATTEMPTS = 3;

interface LakeFlags extends GatewayFlags, S3Flags {}

function addLakeOptions(command: Command, jsonHelp: string): Command {
  return addGatewayOptions(command, jsonHelp)
    .option('--s3-endpoint <url>', "S3 endpoint of the cluster's bucket (env MINK_S3_ENDPOINT; default: the S3 server in --data-dir's cluster.json)")
    .option('--s3-bucket <name>', "the cluster's bucket (env MINK_S3_BUCKET; default: cluster.json's, else mink)")
    .option('--s3-region <region>', 'S3 region (env MINK_S3_REGION; default us-east-1)')
    .option('--s3-access-key-id <id>', 'S3 access key id (env MINK_S3_ACCESS_KEY_ID; default S3RVER, as mink up)')
    .option('--s3-secret-access-key <secret>', 'S3 secret access key (env MINK_S3_SECRET_ACCESS_KEY, which keeps it out of the process list; default S3RVER)')
    .option('--data-dir <path>', 'data dir of a local `mink up`, whose cluster.json names its S3 server', DEFAULT_DATA_DIR);
}

/** `mink lake files|query`. */
export function registerLakeCommands(program: Command, io: CliIo): void {
  const lake = program.command('lake').description("read tables' Iceberg lakes: their live Parquet files, and SQL over them with DuckDB");

  addLakeOptions(
    lake
      .command('files')
      .description("list the live Parquet data files of the table's current Iceberg snapshot: key, __bucket, records, bytes")
      .argument('<table>', 'table name'),
    'print the listing as JSON: {table, metadataKey, metadataLocation, snapshotId, files:[{key, path, bucket, records, bytes}]}',
  ).action(async (table: string, flags: LakeFlags) => {
    const described = await gatewayClient(flags, io).get<DescribedTable>(tablePath(table));
    const tableLake = requireLake(table, described);
    const bucket = LakeBucket.open(flags, io);
    try {
      const { iceberg, snapshotId, files } = await bucket.liveFiles(tableLake);
      const listing = lakeFileListing(tableLake, bucket.storeUri, snapshotId, files, (path) => iceberg.keyOf(path));
      printResult(io, flags, listing, renderLakeFiles);
    } finally {
      bucket.close();
    }
  });

  addLakeOptions(
    lake
      .command('query')
      .description(
        'run SQL with DuckDB over the lakes of the tables it names (each a view of its live files, columns plus __bucket, __offset, __timestamp); ' +
          'prints an aligned table and a row count, or JSON Lines with --json',
      )
      .argument('<sql>', 'the query, e.g. "select count(*) from events"; quote a table name with - or . in double quotes'),
    'print JSON Lines, one object per row (BIGINT, HUGEINT and DECIMAL as strings, timestamps as text in UTC)',
  ).action(async (sql: string, flags: LakeFlags) => {
    await queryLakes(io, flags, sql);
  });
}

/**
 * `lake query`: the lakes of the tables `sql` names, fetched into a temporary folder (removed afterwards, also
 * on Ctrl-C), each made a DuckDB view named after its table; then the query. A named table without a lake
 * gets no view, and DuckDB's "does not exist" then says why it has none.
 */
async function queryLakes(io: CliIo, flags: LakeFlags, sql: string): Promise<void> {
  const client = gatewayClient(flags, io);
  const named = tablesNamedIn(
    sql,
    tablesOf(await client.get<unknown>('/v1/tables')).flatMap((table) => (table.name === undefined ? [] : [table.name])),
  );
  const { lakes, withoutLake } = await lakesOf(client, named);
  const folder = mkdtempSync(join(tmpdir(), 'mink-lake-query-'));
  const removeFolder = (): void => rmSync(folder, { recursive: true, force: true });
  const onInterrupt = (): void => {
    removeFolder();
    process.exit(130);
  };
  process.once('SIGINT', onInterrupt);
  try {
    const views = lakes.length === 0 ? [] : await fetchLakes(io, LakeBucket.open(flags, io), lakes, folder);
    const { names, rows } = await runDuckDb(views, sql, withoutLake);
    io.writeOut(flags.json ? renderQueryJsonLines(names, rows) : `${renderQueryTable(names, rows)}\n`);
  } finally {
    process.removeListener('SIGINT', onInterrupt);
    removeFolder();
  }
}

/** The lakes of `tables` as the gateway describes them, and for each without one why (for DuckDB's error). */
async function lakesOf(client: GatewayClient, tables: readonly string[]): Promise<{ lakes: TableLake[]; withoutLake: Map<string, string> }> {
  const lakes: TableLake[] = [];
  const withoutLake = new Map<string, string>();
  for (const table of tables) {
    const described = await client.get<DescribedTable>(tablePath(table));
    const tableLake = lakeOfTable(table, described);
    if (tableLake === null) withoutLake.set(table, noLakeReason(described));
    else lakes.push(tableLake);
  }
  return { lakes, withoutLake };
}

/** A table's view: its name, its local Parquet files and its schema (for a lake without files). */
interface LakeView {
  table: string;
  paths: string[];
  schema: IcebergSchema;
}

/** Fetches the live files of every lake into `folder`, `LAKE_DOWNLOADS_IN_FLIGHT` at a time, with progress on standard error. */
async function fetchLakes(io: CliIo, bucket: LakeBucket, lakes: readonly TableLake[], folder: string): Promise<LakeView[]> {
  try {
    const views: LakeView[] = [];
    const downloads: LakeDownload[] = [];
    for (const [tableIndex, tableLake] of lakes.entries()) {
      const { iceberg, files, schema } = await bucket.liveFiles(tableLake);
      const tableFolder = join(folder, String(tableIndex));
      mkdirSync(tableFolder);
      const paths = files.map((file, fileIndex) => join(tableFolder, `${fileIndex}.parquet`));
      files.forEach((file, fileIndex) => downloads.push({ key: iceberg.keyOf(file.path), path: paths[fileIndex]!, file }));
      views.push({ table: tableLake.table, paths, schema });
    }
    const now = io.now ?? (() => Date.now());
    await bucket.download(downloads, new ProgressReporter(io, io.errorIsTerminal === true, now), now);
    return views;
  } finally {
    bucket.close();
  }
}

/** Runs `sql` in an in-memory DuckDB that loads no extension, over a view per lake; DuckDB's error becomes a one-line CliError. */
async function runDuckDb(views: readonly LakeView[], sql: string, withoutLake: ReadonlyMap<string, string>): Promise<{ names: string[]; rows: unknown[][] }> {
  // Loaded here, not at the top: the other commands need not load DuckDB's native module.
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
  let connection: DuckDBConnection | null = null;
  try {
    connection = await instance.connect();
    // Timestamps (timestamptz columns) print the same wherever the CLI runs.
    await connection.run("SET TimeZone = 'UTC'");
    for (const view of views) await connection.run(viewSql(view.table, view.paths, view.schema));
    let result;
    try {
      result = await connection.runAndReadAll(sql);
    } catch (error) {
      // Read as a field: the native module's errors are not always of this realm's Error (under Jest, say).
      const message = (error as { message?: unknown } | null)?.message;
      throw new CliError(oneLineError(typeof message === 'string' ? message : String(error), withoutLake));
    }
    return { names: result.columnNames(), rows: result.getRowsJson() as unknown[][] };
  } finally {
    connection?.closeSync();
    instance.closeSync();
  }
}

/** A data file to fetch: its object key and the local path it goes to. */
export interface LakeDownload {
  key: string;
  path: string;
  file: Pick<DataFile, 'recordCount' | 'fileSizeBytes'>;
}

/**
 * Runs `fetchOne` (which returns the bytes it wrote) for every download, `LAKE_DOWNLOADS_IN_FLIGHT` at a
 * time, and reports the records and bytes done after each once `LAKE_PROGRESS_DELAY_MS` passed; the
 * reporter is finished (its line cleared) whatever the outcome. The first failure fails the whole, once the
 * fetches in flight are done. Returns what was fetched.
 */
export async function fetchAll(
  downloads: readonly LakeDownload[],
  fetchOne: (download: LakeDownload) => Promise<number>,
  reporter: Pick<ProgressReporter, 'update' | 'finish'>,
  now: () => number,
): Promise<LoadProgress> {
  const started = now();
  const progress: LoadProgress = { rows: 0, bytes: 0, totalBytes: downloads.reduce((sum, { file }) => sum + file.fileSizeBytes, 0), elapsedMs: 0 };
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < downloads.length && !failed) {
      const download = downloads[next++]!;
      try {
        // Read into a constant first: `progress.bytes += await …` would add to the total as it was before the wait.
        const bytes = await fetchOne(download);
        progress.bytes += bytes;
      } catch (error) {
        failed = true;
        throw error;
      }
      progress.rows += download.file.recordCount;
      progress.elapsedMs = now() - started;
      if (progress.elapsedMs >= LAKE_PROGRESS_DELAY_MS) reporter.update(progress);
    }
  };
  try {
    const results = await Promise.allSettled(Array.from({ length: Math.min(LAKE_DOWNLOADS_IN_FLIGHT, downloads.length) }, worker));
    const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    return progress;
  } finally {
    reporter.finish();
  }
}

/**
 * The cluster's bucket as the lake commands read it: S3 settings from the flags, the environment or the
 * cluster.json of a local `mink up` (`resolveS3Settings`), and every S3 failure as a one-line CliError
 * naming the endpoint and where it came from (`s3Failure`).
 */
class LakeBucket {
  readonly storeUri: string;

  private constructor(
    private readonly settings: S3Settings,
    private readonly store: S3ObjectStore,
  ) {
    this.storeUri = lakeStoreUri(settings.bucket);
  }

  static open(flags: S3Flags, io: Pick<CliIo, 'env'>): LakeBucket {
    const settings = resolveS3Settings(flags, io.env, readClusterFileIfAny(flags.dataDir));
    const store = new S3ObjectStore({
      endpoint: settings.endpoint,
      bucket: settings.bucket,
      region: settings.region,
      accessKeyId: settings.accessKeyId,
      secretAccessKey: settings.secretAccessKey,
      maxAttempts: LAKE_S3_ATTEMPTS,
    });
    return new LakeBucket(settings, store);
  }

  /** The live data files of the lake's current snapshot, its id and the schema of its metadata. */
  async liveFiles(tableLake: TableLake): Promise<{ iceberg: IcebergTable; snapshotId: number | null; files: DataFile[]; schema: IcebergSchema }> {
    const iceberg = new IcebergTable({
      store: this.store,
      tableName: tableLake.table,
      storeUri: this.storeUri,
      schema: icebergSchemaOf(tableLake.columns, tableLake.primaryKey),
    });
    return this.translated(async () => {
      const loaded = await iceberg.load(tableLake.metadataKey);
      return { iceberg, snapshotId: loaded.currentSnapshot?.['snapshot-id'] ?? null, files: await iceberg.dataFiles(), schema: iceberg.schema() };
    });
  }

  /** Fetches each data file to its path (`fetchAll`). */
  async download(downloads: readonly LakeDownload[], reporter: ProgressReporter, now: () => number): Promise<void> {
    await this.translated(() => fetchAll(downloads, ({ key, path }) => this.store.getToFile(key, path), reporter, now));
  }

  close(): void {
    this.store.close();
  }

  private async translated<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw s3Failure(error, this.settings);
    }
  }
}

/** The cluster.json of a local `mink up` in `dataDir`, or null when there is none; one that cannot be parsed is a CliError. */
function readClusterFileIfAny(dataDir: string): ClusterFile | null {
  const path = join(dataDir, CLUSTER_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CliError(`cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  try {
    return JSON.parse(text) as ClusterFile;
  } catch {
    throw new CliError(`${path} is not JSON: is --data-dir the data dir of a \`mink up\`?`);
  }
}
