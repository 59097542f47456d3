import { Command } from 'commander';
import { DEFAULTS, LIMITS } from '@mink/config';
import { UsageError, type CliIo } from './io';
import { addGatewayOptions, gatewayClient, printResult, type GatewayFlags } from './gateway-options';
import { collect, commaSeparated, integerInRange, parseNameList } from './options';
import { formatValue, renderFields, renderTable } from './render';

/** The body of `POST /v1/tables` (docs/architecture.md §12). The gateway validates it; the CLI only checks its own syntax. */
export interface CreateTableBody {
  name: string;
  columns: { name: string; type: string }[];
  primaryKey?: string[];
  bucketKey?: string[];
  buckets: number;
  partition?: { column: string; unit: string; retain?: number; precreate?: number };
  properties?: Record<string, string>;
}

export interface CreateTableFlags extends GatewayFlags {
  columns: string;
  primaryKey?: string[];
  bucketKey?: string[];
  buckets: number;
  partition?: string;
  property?: string[];
}

const PARTITION_UNITS = ['hour', 'day'];

/** Turns `mink table create` flags into the request body; throws UsageError for a malformed flag. */
export function buildCreateTableBody(name: string, flags: CreateTableFlags): CreateTableBody {
  const body: CreateTableBody = { name, columns: parseColumns(flags.columns), buckets: flags.buckets };
  if (flags.primaryKey) body.primaryKey = flags.primaryKey;
  if (flags.bucketKey) body.bucketKey = flags.bucketKey;
  if (flags.partition !== undefined) body.partition = parsePartition(flags.partition);
  if (flags.property && flags.property.length > 0) body.properties = parseProperties(flags.property);
  return body;
}

/** "id:int64, name:string" → [{name:'id', type:'int64'}, {name:'name', type:'string'}]. */
export function parseColumns(text: string): { name: string; type: string }[] {
  const entries = commaSeparated(text);
  if (entries.length === 0) throw new UsageError(`--columns: expected name:type pairs such as "id:int64,name:string"`);
  return entries.map((entry) => {
    const match = /^([^:\s]+)\s*:\s*([^:\s]+)$/.exec(entry);
    if (!match) throw new UsageError(`--columns: '${entry}' is not name:type (for example id:int64)`);
    return { name: match[1]!, type: match[2]! };
  });
}

/** "ts:day", "ts:day:7" (keep the 7 newest partitions) or "ts:hour:24:3" (and create 3 ahead); an empty retain ("ts:hour::3") keeps every partition. */
export function parsePartition(text: string): { column: string; unit: string; retain?: number; precreate?: number } {
  const parts = text.split(':').map((part) => part.trim());
  if (parts.length < 2 || parts.length > 4 || parts[0] === '' || parts[1] === '' || (parts.length === 4 && parts[3] === '') || (parts.length === 3 && parts[2] === '')) {
    throw new UsageError(`--partition: '${text}' is not column:unit[:retain[:precreate]] (for example ts:day:7 or ts:hour:24:3)`);
  }
  const [column, unit, retainText, precreateText] = parts as [string, string, string | undefined, string | undefined];
  if (!PARTITION_UNITS.includes(unit)) {
    throw new UsageError(`--partition: unit '${unit}' is not one of ${PARTITION_UNITS.join(', ')}`);
  }
  const spec: { column: string; unit: string; retain?: number; precreate?: number } = { column, unit };
  if (retainText !== undefined && retainText !== '') {
    const retain = /^\d+$/.test(retainText) ? Number(retainText) : Number.NaN;
    if (!Number.isSafeInteger(retain) || retain < 1) throw new UsageError(`--partition: retain '${retainText}' is not a positive number of partitions`);
    spec.retain = retain;
  }
  if (precreateText !== undefined) {
    const precreate = /^\d+$/.test(precreateText) ? Number(precreateText) : Number.NaN;
    if (!Number.isSafeInteger(precreate)) throw new UsageError(`--partition: precreate '${precreateText}' is not a number of partitions`);
    spec.precreate = precreate;
  }
  return spec;
}

function parseProperties(entries: string[]): Record<string, string> {
  const properties: Record<string, string> = {};
  for (const entry of entries) {
    const separator = entry.indexOf('=');
    if (separator <= 0) throw new UsageError(`--property: '${entry}' is not key=value`);
    properties[entry.slice(0, separator)] = entry.slice(separator + 1);
  }
  return properties;
}

/** A table as list and describe return it; every field is optional so a newer gateway cannot break the CLI. */
interface TableSummary {
  name?: string;
  kind?: string;
  columns?: { name: string; type: string }[];
  primaryKey?: string[];
  bucketKey?: string[];
  buckets?: number | BucketSummary[];
  partition?: { column: string; unit: string; retain?: number; precreate?: number };
  /** The live partitions, in creation order. */
  partitions?: string[];
  properties?: Record<string, string>;
  /** Describe's list of buckets with their leaders. */
  bucketLeaders?: BucketSummary[];
}

interface BucketSummary {
  bucket?: number;
  partition?: string | null;
  leader?: string | null;
  leaderEpoch?: number;
  state?: string;
  /** The bucket's stream as the metadata view records it; its state stands in when `state` is absent. */
  stream?: { state?: string; epoch?: number };
}

/** The tables of a `GET /v1/tables` answer (`{tables:[…]}`, or a bare list). */
export function tablesOf(result: unknown): TableSummary[] {
  if (Array.isArray(result)) return result as TableSummary[];
  const tables = (result as { tables?: unknown } | undefined)?.tables;
  return Array.isArray(tables) ? (tables as TableSummary[]) : [];
}

function kindOf(table: TableSummary): string {
  if (table.kind) return table.kind;
  return table.primaryKey && table.primaryKey.length > 0 ? 'pk' : 'log';
}

function bucketCountOf(table: TableSummary): string {
  return Array.isArray(table.buckets) ? String(table.buckets.length) : formatValue(table.buckets);
}

/** The partition spec: `ts by hour, keep 24, create 2 ahead` (the parts the table sets). */
function describePartition(partition: TableSummary['partition']): string {
  if (!partition) return '-';
  const retain = partition.retain === undefined ? '' : `, keep ${partition.retain}`;
  const precreate = partition.precreate === undefined ? '' : `, create ${partition.precreate} ahead`;
  return `${partition.column} by ${partition.unit}${retain}${precreate}`;
}

/** The live partitions of a table in short, for the list: how many, and the oldest and newest names. */
function summarizePartitions(table: TableSummary): string {
  if (!table.partition) return '-';
  const live = table.partitions ?? [];
  if (live.length === 0) return 'none yet';
  if (live.length === 1) return `1 (${live[0]})`;
  return `${live.length} (${live[0]} to ${live[live.length - 1]})`;
}

/** Every live partition of a table, for describe; '-' for an unpartitioned table. */
function listPartitions(table: TableSummary): string {
  if (!table.partition) return '-';
  const live = table.partitions ?? [];
  return live.length === 0 ? 'none yet' : live.join(', ');
}

export function renderTableList(result: unknown): string {
  const tables = tablesOf(result);
  if (tables.length === 0) return 'no tables';
  return renderTable(
    ['NAME', 'KIND', 'COLUMNS', 'PRIMARY KEY', 'BUCKETS', 'PARTITION', 'PARTITIONS'],
    tables.map((table) => [
      formatValue(table.name),
      kindOf(table),
      String(table.columns?.length ?? '-'),
      formatValue(table.primaryKey),
      bucketCountOf(table),
      describePartition(table.partition),
      summarizePartitions(table),
    ]),
  );
}

export function renderTableDescription(result: unknown): string {
  const table = ((result as { table?: TableSummary } | undefined)?.table ?? result ?? {}) as TableSummary;
  const properties = Object.entries(table.properties ?? {}).map(([key, value]) => `${key}=${value}`);
  const sections = [
    renderFields([
      ['table', formatValue(table.name)],
      ['kind', kindOf(table)],
      ['primary key', formatValue(table.primaryKey)],
      ['bucket key', formatValue(table.bucketKey)],
      ['buckets', bucketCountOf(table)],
      ['partition', describePartition(table.partition)],
      ...(table.partition ? [['partitions', listPartitions(table)] as [string, string]] : []),
      ['properties', properties.length === 0 ? '-' : properties.join(', ')],
    ]),
    renderTable(
      ['COLUMN', 'TYPE'],
      (table.columns ?? []).map((column) => [column.name, column.type]),
    ),
  ];
  const buckets = table.bucketLeaders ?? (Array.isArray(table.buckets) ? table.buckets : undefined);
  if (Array.isArray(buckets) && buckets.length > 0) {
    const partitioned = buckets.some((bucket) => bucket.partition);
    sections.push(
      renderTable(
        [...(partitioned ? ['PARTITION'] : []), 'BUCKET', 'LEADER', 'EPOCH', 'STATE'],
        buckets.map((bucket) => [
          ...(partitioned ? [formatValue(bucket.partition)] : []),
          formatValue(bucket.bucket),
          formatValue(bucket.leader),
          formatValue(bucket.leaderEpoch),
          formatValue(bucket.state ?? bucket.stream?.state),
        ]),
      ),
    );
  }
  return sections.join('\n\n');
}

export function tablePath(name: string): string {
  return `/v1/tables/${encodeURIComponent(name)}`;
}

/** `mink table create|list|describe|drop`. */
export function registerTableCommands(program: Command, io: CliIo): void {
  const table = program.command('table').description('create, list, describe and drop tables');

  addGatewayOptions(
    table
      .command('create')
      .description('create a table')
      .argument('<name>', 'table name')
      .requiredOption('--columns <list>', 'columns as name:type pairs, e.g. "id:int64,name:string"')
      .option('--primary-key <columns>', 'primary key columns (comma-separated); makes a PK table', parseNameList)
      .option('--bucket-key <columns>', 'bucket key columns (default: the primary key)', parseNameList)
      .option('--buckets <count>', 'buckets per table or partition', integerInRange(1, LIMITS.bucketsPerTableMax), DEFAULTS.tableBuckets)
      .option('--partition <spec>', 'partition by a column: column:hour|day[:retain[:precreate]], e.g. ts:day:7 or ts:hour:24:3')
      .option('--property <key=value>', 'a table property (repeatable)', collect),
  ).action(async (name: string, flags: CreateTableFlags) => {
    const body = buildCreateTableBody(name, flags);
    const result = await gatewayClient(flags, io).post<unknown>('/v1/tables', body);
    printResult(io, flags, result, () => `created ${body.primaryKey ? 'pk' : 'log'} table ${name} with ${body.buckets} buckets`);
  });

  addGatewayOptions(table.command('list').description('list tables')).action(async (flags: GatewayFlags) => {
    const result = await gatewayClient(flags, io).get<unknown>('/v1/tables');
    printResult(io, flags, result, renderTableList);
  });

  addGatewayOptions(
    table.command('describe').description('show a table: schema, partitions, buckets and their leaders').argument('<name>', 'table name'),
  ).action(async (name: string, flags: GatewayFlags) => {
    const result = await gatewayClient(flags, io).get<unknown>(tablePath(name));
    printResult(io, flags, result, renderTableDescription);
  });

  addGatewayOptions(
    table
      .command('alter')
      .description('change a table\'s lake switch, lake freshness or retention TTL')
      .argument('<name>', 'table name')
      .option('--property <key=value>', 'set a property (repeatable), e.g. table.log.ttl=3d', collect)
      .option('--unset <key>', 'remove a property, back to its default (repeatable)', collect),
  ).action(async (name: string, flags: GatewayFlags & { property?: string[]; unset?: string[] }) => {
    const properties: Record<string, string | null> = { ...parseProperties(flags.property ?? []) };
    for (const key of flags.unset ?? []) properties[key] = null;
    if (Object.keys(properties).length === 0) throw new UsageError('table alter: give at least one --property or --unset');
    const result = await gatewayClient(flags, io).patch<unknown>(tablePath(name), { properties });
    printResult(io, flags, result, renderTableDescription);
  });

  addGatewayOptions(table.command('drop').description('drop a table and its data').argument('<name>', 'table name')).action(
    async (name: string, flags: GatewayFlags) => {
      const result = await gatewayClient(flags, io).delete<unknown>(tablePath(name));
      printResult(io, flags, result ?? { dropped: name }, () => `dropped table ${name}`);
    },
  );
}
