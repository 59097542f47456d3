import { LIMITS, parseDurationMs } from '@mink/config';
import { bucketId, bucketsOfTable, compareNodeIds, getIn, ownRecord, streamBucketOfLake, valuesIn, type TableRecord, type View } from '@mink/meta';
import { InvalidArgumentError, KAFKA_OFFSETS_BUCKET_KEY, KAFKA_OFFSETS_TABLE, NotFoundError, SUBJECTS, type BucketServingState, type CoordinatedGroup, type KafkaGroupsAnswer, type KafkaGroupsRequest, type NodeStatus, type ScanPage } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import type { MinkClient } from '@mink/client';
import { RawJsonBody, type ClusterMember } from '@mink/runtime';
import { readDeleteBody, readLookupBody, readPrefixLookupBody, readPutBody } from './request-bodies';
import { bucketOfRow, readAppendBody } from '@mink/records';
import { scanFormatOf, scanReplyOf, type ScanReply } from './scan-reply';
import { bucketFiguresOf, clusterSummaryOf, servingState } from './bucket-figures';
import { groupLagOf } from './group-lag';

/**
 * The gateway's answers. Writes of metadata go to the coordinator through the client; reads come from
 * the gateway's own copy of the view, after waiting until that copy has applied the write the caller
 * just made (so a create is immediately visible in a describe). The gateway's tail of the log is paced
 * (it takes others' entries up to `LIMITS.metaTailPacedIntervalMs` late), so a metadata read first catches
 * up with everything the log holds: a table created or dropped through another process (a Kafka client,
 * another gateway) is seen as it is now. The gateway app (apps/gateway) serves them through its controllers.
 */
export class GatewayService {
  constructor(
    private readonly member: ClusterMember,
    private readonly client: MinkClient,
  ) {}

  async createTable(body: unknown) {
    const result = await this.client.createTable(body);
    await this.member.store.waitForSeq(result.metaSeq, LIMITS.proposeTimeoutMs);
    return this.describe(this.member.view, getIn(this.member.view.tables, result.name)!);
  }

  async listTables() {
    const view = await this.currentView();
    return { tables: [...valuesIn(view.tables)].sort((a, b) => a.name.localeCompare(b.name)).map((table) => this.summary(table)) };
  }

  async describeTable(name: string) {
    return this.describeIn(await this.currentView(), name);
  }

  private describeIn(view: View, name: string) {
    const table = getIn(view.tables, name);
    if (!table) throw new NotFoundError(`table '${name}' does not exist`);
    return this.describe(view, table);
  }

  /** The view once it has applied everything the log holds now (a read that sees every write acknowledged before it). */
  private currentView(): Promise<View> {
    return this.member.store.catchUp(LIMITS.proposeTimeoutMs);
  }

  /**
   * Refuses a write or read of a table this gateway does not know (NotFound), as the data node would. The
   * gateway's view is consulted as it is; only a table missing there makes it catch up first (created a
   * moment ago through another process), so the check costs nothing on the data path.
   */
  private async requireTable(name: string): Promise<void> {
    if (getIn(this.member.view.tables, name)) return;
    if (!getIn((await this.currentView()).tables, name)) throw new NotFoundError(`table '${name}' does not exist`);
  }

  /**
   * An append. A body that came as bytes (the append route's `RawJsonBody`) is read in one pass straight
   * into each bucket's Arrow batch (`readAppendBody`); one outside that reader's shape is parsed the
   * general way, which also gives every error its message.
   */
  async append(name: string, body: unknown) {
    if (body instanceof RawJsonBody) {
      await this.requireTable(name);
      const bytes = body.bytes;
      const appended = await this.client.table(name).appendEncoded((bucketing) => readAppendBody(bytes, bucketing));
      if (appended !== null) return appended;
      body = body.parse();
    }
    const rows = (body as { rows?: unknown } | null)?.rows;
    if (!Array.isArray(rows)) throw new InvalidArgumentError('body must be {rows: [...]}');
    await this.requireTable(name);
    return this.client.table(name).append(rows);
  }

  async put(name: string, body: unknown) {
    const { rows, columns } = readPutBody(body);
    await this.requireTable(name);
    return this.client.table(name).put(rows, columns === undefined ? {} : { columns });
  }

  async delete(name: string, body: unknown) {
    const { keys } = readDeleteBody(body);
    await this.requireTable(name);
    return this.client.table(name).delete(keys);
  }

  async lookup(name: string, body: unknown) {
    const { keys, columns } = readLookupBody(body);
    await this.requireTable(name);
    return this.client.table(name).lookup(keys, columns === undefined ? {} : { columns });
  }

  /** An addition to docs/architecture.md §12: POST /v1/tables/{name}/prefix-lookup. */
  async prefixLookup(name: string, body: unknown) {
    const { prefixes, ...options } = readPrefixLookupBody(body);
    await this.requireTable(name);
    return this.client.table(name).prefixLookup(prefixes, options);
  }

  /**
   * A scan in the form the Accept header asks for (see scan-reply.ts). The first page is awaited here, so
   * a bad request or an unavailable bucket is an ordinary error reply; the rest stream as they arrive.
   */
  async scan(name: string, query: Record<string, string | undefined>, accept: string | undefined): Promise<ScanReply> {
    await this.requireTable(name);
    const { first, rest, offset, limit } = await this.openScan(name, readScanQuery(query));
    return scanReplyOf(scanFormatOf(accept), { offset, limit }, first, rest);
  }

  /**
   * The pages of a scan whatever the wire (the HTTP scan above, gRPC's streaming Scan): the first page is
   * awaited, so a bad request or an unavailable bucket fails here; `rest` yields the pages after it.
   */
  async openScan(name: string, parameters: ScanParameters): Promise<{ first: ScanPage; rest: AsyncIterator<ScanPage>; offset: number; limit: number }> {
    await this.requireTable(name);
    const { partition, bucket, offset, limit, columns, waitMs } = parameters;
    // A partition is required for a partitioned table and refused for an unpartitioned one; the client checks which.
    const pages = this.client.table(name).scanPages({ ...(partition === undefined ? {} : { partition }), bucket, offset, limit, columns, waitMs });
    const first = await pages.next();
    if (first.done) throw new Error('a scan yielded no page');
    return { first: first.value, rest: pages, offset, limit };
  }

  /** PATCH /v1/tables/{name} `{properties: {key: value or null}}`: the table's description once altered. */
  async alterTable(name: string, body: unknown) {
    const properties = (body as { properties?: unknown } | null)?.properties;
    if (typeof properties !== 'object' || properties === null || Array.isArray(properties) || Object.keys(body as object).some((key) => key !== 'properties')) {
      throw new InvalidArgumentError('body must be {properties: {name: value, or null to remove it}}');
    }
    for (const [key, value] of Object.entries(properties)) {
      if (value !== null && typeof value !== 'string') throw new InvalidArgumentError(`property '${key}' must be a string, or null to remove it`);
    }
    await this.requireTable(name);
    const result = await this.client.alterTable(name, properties as Record<string, string | null>);
    await this.member.store.waitForSeq(result.metaSeq, LIMITS.proposeTimeoutMs);
    // The view has applied the alteration: it is as current as the caller needs, no second catch-up.
    return this.describeIn(this.member.view, name);
  }

  async dropTable(name: string) {
    this.client.forgetTable(name);
    const result = await this.client.dropTable(name);
    await this.member.store.waitForSeq(result.metaSeq, LIMITS.proposeTimeoutMs);
    return { dropped: name };
  }

  async rebalance(dryRun: boolean) {
    const result = await this.client.rebalance(dryRun);
    await this.member.store.waitForSeq(result.metaSeq, LIMITS.proposeTimeoutMs);
    return { moves: result.moves, dryRun: result.dryRun };
  }

  /**
   * GET /v1/cluster: nodes with liveness and load, how many buckets are in each serving state, each table's
   * totals (records, bytes, lake; all three from clusterSummaryOf's one pass over the buckets), and (unless `listBuckets` is false) every bucket, or the
   * buckets of `table` alone, with the state its leader reports and the figures of its data
   * (bucketFiguresOf). The web console polls the summary and lists the buckets of the table shown. At
   * 100 000 buckets the whole list is a 15 MB answer that cost the gateway about a second of CPU each time;
   * the summary costs the node status queries and one pass over the view (0.4 s of CPU before that pass and
   * the status answers' lists of ids, measured on a restarted bench cluster).
   */
  async clusterStatus({ listBuckets = true, table: only }: { listBuckets?: boolean; table?: string } = {}) {
    const view = await this.currentView();
    if (only !== undefined && !getIn(view.tables, only)) throw new NotFoundError(`table '${only}' does not exist`);
    const live = this.member.liveNodes();
    const statuses = await this.nodeStatuses(view, live);
    const tables = [...valuesIn(view.tables)].sort((a, b) => a.name.localeCompare(b.name));
    const { load, bucketStates, totals: tableTotals } = clusterSummaryOf(tables, valuesIn(view.buckets), live, statuses);
    const nodes = Object.values(view.nodes)
      .sort((a, b) => compareNodeIds(a.id, b.id))
      .map((node) => ({ id: node.id, epoch: node.epoch, live: live.has(node.id), address: node.address, kafka: node.kafka, http: node.http, buckets: load.get(node.id) ?? 0 }));
    const coordinator = { node: view.coordinator.node, epoch: view.coordinator.epoch };
    if (!listBuckets) return { coordinator, nodes, bucketStates, tables: tableTotals };
    const buckets = tables
      .filter((table) => only === undefined || table.name === only)
      .flatMap((table) => bucketsOfTable(view, table.name).map((bucket) => ({ table, bucket })))
      .map(({ table, bucket }) => {
        const id = bucketId(bucket.tableId, bucket.partition, bucket.bucket);
        return {
          table: bucket.table,
          ...(bucket.partition !== null ? { partition: bucket.partition } : {}),
          bucket: bucket.bucket,
          leader: bucket.leader,
          leaderEpoch: bucket.leaderEpoch,
          streamEpoch: bucket.stream.epoch,
          state: servingState(bucket.leader, live, statuses, id),
          ...bucketFiguresOf(table, bucket),
        };
      });
    return { coordinator, nodes, bucketStates, tables: tableTotals, buckets };
  }

  /**
   * GET /v1/kafka/groups: the Kafka consumer groups (all, or `group` alone) with each partition's committed
   * offset, end offset and lag (groupLagOf). The committed offsets and the membership live with each group's
   * coordinator, the leader of the group's bucket of `__consumer_offsets`: each leader is asked for the
   * buckets it leads (one request per node, `statusQueryTimeoutMs` at most). The end offsets come from the
   * view caught up after those answers, so a commit the answers hold is never beyond the end it is compared
   * with. `unavailableBuckets` counts the buckets whose groups are missing (no live leader, no answer, moving).
   */
  async kafkaGroups({ group }: { group?: string } = {}) {
    const view = await this.currentView();
    const table = getIn(view.tables, KAFKA_OFFSETS_TABLE);
    if (!table) return { groups: [], unavailableBuckets: 0, truncated: false };
    const buckets = group === undefined ? Array.from({ length: table.buckets }, (_, bucket) => bucket) : [bucketOfRow({ group }, [...KAFKA_OFFSETS_BUCKET_KEY], table.buckets)];
    const live = this.member.liveNodes();
    const byLeader = new Map<string, number[]>();
    let unavailableBuckets = 0;
    for (const bucket of buckets) {
      const leader = getIn(view.buckets, bucketId(table.id, null, bucket))?.leader;
      if (!leader || !live.has(leader) || !ownRecord(view.nodes, leader)) unavailableBuckets += 1;
      else byLeader.set(leader, [...(byLeader.get(leader) ?? []), bucket]);
    }
    const groups: CoordinatedGroup[] = [];
    let truncated = false;
    await Promise.all(
      [...byLeader].map(async ([leader, led]) => {
        const request: KafkaGroupsRequest = { op: 'kafkaGroups', buckets: led, ...(group === undefined ? {} : { group }) };
        try {
          const answer = await requestJson<KafkaGroupsAnswer>(this.member.nc, SUBJECTS.nodeRpc(ownRecord(view.nodes, leader)!.address), request, LIMITS.statusQueryTimeoutMs);
          groups.push(...answer.groups);
          unavailableBuckets += answer.unserved.length;
          truncated ||= answer.truncated;
        } catch {
          // A leader that does not answer in time: its buckets' groups are missing from this answer.
          unavailableBuckets += led.length;
        }
      }),
    );
    const ends = await this.currentView();
    const endOffsetOf = (topic: string, partition: number): number | null => {
      const topicTable = getIn(ends.tables, topic);
      if (!topicTable || topicTable.partition || partition >= topicTable.buckets) return null;
      return getIn(ends.buckets, bucketId(topicTable.id, null, partition))?.stream.endOffset ?? null;
    };
    return { groups: groupLagOf(group === undefined ? groups : groups.filter((each) => each.group === group), endOffsetOf), unavailableBuckets, truncated };
  }

  /**
   * The serving state each live node reports for each bucket it holds, by node and bucket id: indexed once,
   * since a bucket looked up in its leader's list took 40 s for one GET /v1/cluster at 100 000 buckets.
   */
  private async nodeStatuses(view: View, live: Set<string>): Promise<Map<string, Map<string, BucketServingState>>> {
    const result = new Map<string, Map<string, BucketServingState>>();
    await Promise.all(
      [...live].map(async (nodeId) => {
        const node = ownRecord(view.nodes, nodeId);
        if (!node) return;
        try {
          const status = await requestJson<NodeStatus>(this.member.nc, SUBJECTS.nodeRpc(node.address), { op: 'status' }, LIMITS.statusQueryTimeoutMs);
          const states = new Map<string, BucketServingState>();
          for (const [state, ids] of Object.entries(status.buckets) as [BucketServingState, string[]][]) for (const id of ids) states.set(id, state);
          result.set(nodeId, states);
        } catch {
          // A node that does not answer in time is reported as unavailable for its buckets.
        }
      }),
    );
    return result;
  }

  private summary(table: TableRecord) {
    return {
      name: table.name,
      tableId: table.id,
      kind: table.kind,
      columns: table.columns,
      primaryKey: table.primaryKey,
      bucketKey: table.bucketKey,
      buckets: table.buckets,
      ...(table.partition ? { partition: table.partition, partitions: table.partitions } : {}),
      properties: table.properties,
      createdAt: new Date(table.createdAtMs).toISOString(),
    };
  }

  private describe(view: View, table: TableRecord) {
    return {
      ...this.summary(table),
      bucketLeaders: bucketsOfTable(view, table.name).map((bucket) => ({
        bucket: bucket.bucket,
        ...(bucket.partition !== null ? { partition: bucket.partition } : {}),
        leader: bucket.leader,
        leaderEpoch: bucket.leaderEpoch,
        stream: { state: bucket.stream.state, epoch: bucket.stream.epoch, node: bucket.stream.node, startOffset: bucket.stream.startOffset, endOffset: bucket.stream.endOffset },
      })),
      ...(table.lake ? { lake: lakeOf(table) } : {}),
    };
  }
}

/**
 * A table's lake as the metadata log records it: the Iceberg metadata and snapshot of the newest committed
 * round, the offset per bucket below which the lake holds every record, and the round in progress.
 */
function lakeOf(table: TableRecord) {
  const lake = table.lake!;
  return {
    metadataKey: lake.metadataKey,
    snapshotId: lake.snapshotId,
    // Per bucket of an unpartitioned table; per lake bucket (lakeBucketOf), with its partition and bucket, of a partitioned one.
    offsets: table.partition
      ? Object.keys(lake.offsets)
          .map(Number)
          .sort((a, b) => a - b)
          .map((lakeBucket) => ({ ...streamBucketOfLake(table, lakeBucket)!, lakeBucket, offset: lake.offsets[String(lakeBucket)]! }))
      : Array.from({ length: table.buckets }, (_, bucket) => ({ bucket, offset: lake.offsets[String(bucket)] ?? 0 })),
    tieredAt: lake.tieredAtMs > 0 ? new Date(lake.tieredAtMs).toISOString() : null,
    tieringEpoch: lake.tieringEpoch,
    round: lake.round ? { tieringEpoch: lake.round.epoch, worker: lake.round.worker, startedAt: new Date(lake.round.startedAtMs).toISOString(), ranges: lake.round.ranges } : null,
  };
}

/** What a scan reads: one bucket (of one partition) from `offset`, at most `limit` records, waiting up to `waitMs` at the high watermark. */
export interface ScanParameters {
  bucket: number;
  offset: number;
  limit: number;
  waitMs: number;
  partition?: string;
  columns?: string[];
}

/** The query of `GET /v1/tables/{name}/scan`: `bucket` (required), `offset`, `limit`, `wait`, `partition`, `columns`. */
export function readScanQuery(query: Record<string, string | undefined>): ScanParameters {
  const bucket = integerParameter(query, 'bucket', undefined);
  const offset = integerParameter(query, 'offset', 0);
  const limit = integerParameter(query, 'limit', LIMITS.scanRecordsDefault);
  const waitMs = waitParameter(query);
  const partition = query.partition === undefined || query.partition === '' ? undefined : query.partition;
  const columns = columnsParameter(query);
  return { bucket, offset, limit, waitMs, ...(partition === undefined ? {} : { partition }), ...(columns === undefined ? {} : { columns }) };
}

function integerParameter(query: Record<string, string | undefined>, name: string, fallback: number | undefined): number {
  const text = query[name];
  if (text === undefined || text === '') {
    if (fallback === undefined) throw new InvalidArgumentError(`query parameter '${name}' is required`);
    return fallback;
  }
  // Decimal digits only: Number() would also take '0x10', '1e3' and ' 5 '.
  const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value)) throw new InvalidArgumentError(`query parameter '${name}' must be a non-negative integer, got '${text.slice(0, 64)}'`);
  return value;
}

/** `columns=`: a comma-separated projection; absent or empty projects nothing away, and an empty name in a list is refused. */
function columnsParameter(query: Record<string, string | undefined>): string[] | undefined {
  const text = query.columns;
  if (text === undefined || text === '') return undefined;
  const columns = text.split(',').map((column) => column.trim());
  const empty = columns.findIndex((column) => column === '');
  if (empty >= 0) throw new InvalidArgumentError(`query parameter 'columns' has an empty column name at position ${empty + 1}: '${text.slice(0, 64)}'`);
  return columns;
}

/** `wait=`: a duration (`500ms`, `5s`, bare milliseconds) up to LIMITS.scanWaitMsMax; absent or 0 does not wait. */
function waitParameter(query: Record<string, string | undefined>): number {
  const text = query.wait;
  if (text === undefined || text === '' || text.trim() === '0') return 0;
  let waitMs: number;
  try {
    waitMs = parseDurationMs(text, "query parameter 'wait'");
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  if (waitMs > LIMITS.scanWaitMsMax) throw new InvalidArgumentError(`query parameter 'wait' may be at most ${LIMITS.scanWaitMsMax / 1000}s, got '${text}'`);
  return waitMs;
}
