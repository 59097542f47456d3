import { LIMITS } from '@mink/config';
import { nextEpoch } from '@mink/epochs';
import type {
  AllocateProducerId,
  AlterTable,
  TrimStreams,
  DeleteRecords,
  CommitTieringRound,
  StartTieringRound,
  CloseStream,
  CloseStreams,
  Command,
  CommitKvSnapshot,
  CommitStreamObject,
  CommitWal,
  CreatePartition,
  CreateTable,
  DropPartition,
  DropTable,
  ForgetObjects,
  BucketLeadOutcome,
  BucketToLead,
  LeadBucket,
  LeadBuckets,
  OpenStream,
  OpenStreams,
  Outcome,
  RegisterCoordinator,
  RegisterNode,
  Rejection,
  StreamObjectSlice,
  StreamCloseOutcome,
  StreamOpenOutcome,
  StreamToClose,
  StreamToOpen,
  WalRange,
} from './commands';
import { ownRecord } from './lookup';
import { ShardedMapEditor, getIn, type ShardedMap } from './sharded-map';
import { validateTableSpec } from './schema';
import { ALTERABLE_PROPERTIES, LAKE_ENABLED_PROPERTY, checkLakeSpec, lakeBucketOf, lakeSettingsOf, streamBucketOfLake } from './lake-properties';
import {
  bucketId,
  type BucketRecord,
  type DataSlice,
  type GarbageRecord,
  type KvSnapshotRecord,
  type LakeRecord,
  type TieringRange,
  type TieringRoundRecord,
  type NodeRecord,
  type ObjectRecord,
  type StreamRecord,
  type TableRecord,
  type View,
  type WriterState,
  NO_WRITERS,
  PACKED_INDEX_BYTES_PER_BATCH,
  firstSliceEndingAfter,
  firstSliceOf,
  isWalSlice,
  slicesOf,
} from './view';
import { isStreamOpenBy } from './fence';
import { describeMalformedTransaction, trimmedTransactions, withTransactionRange } from './stream-transactions';

/** The result of applying one log entry: the next view and what the proposer is told. */
export interface Applied {
  view: View;
  outcome: Outcome;
}

/**
 * Applies the log entry at sequence `seq` to `view`. Pure and deterministic, so every process that
 * applies the same log reaches the same view and computes the same outcome for each entry.
 *
 * The returned view always has `seq` set to `seq`; a rejected command changes nothing else. The input
 * view is never mutated: the result shares every record that did not change with it, so applying a
 * command costs a copy of the changed records and of the maps (or, for the big sharded maps, the shards)
 * that hold them, not of the whole view.
 *
 * Entries must be applied in order without gaps: a `seq` other than `view.seq + 1` is a broken
 * invariant and throws. A malformed command (unknown type, missing or mistyped field) cannot be a broken
 * invariant, since anybody may publish to the log, so it is applied as an `InvalidArgument` rejection.
 */
export function apply(view: View, seq: number, command: Command): Applied {
  if (seq !== view.seq + 1) {
    throw new Error(`invariant broken: log entry ${seq} applied to the view at ${view.seq} (expected ${view.seq + 1})`);
  }
  const malformed = describeMalformedCommand(command);
  if (malformed !== null) return reject(view, seq, 'InvalidArgument', malformed);
  switch (command.type) {
    case 'RegisterNode':
      return applyRegisterNode(view, seq, command);
    case 'RegisterCoordinator':
      return applyRegisterCoordinator(view, seq, command);
    case 'CreateTable':
      return applyCreateTable(view, seq, command);
    case 'DropTable':
      return applyDropTable(view, seq, command);
    case 'CreatePartition':
      return applyCreatePartition(view, seq, command);
    case 'DropPartition':
      return applyDropPartition(view, seq, command);
    case 'LeadBucket':
      return applyLeadBucket(view, seq, command);
    case 'LeadBuckets':
      return applyLeadBuckets(view, seq, command);
    case 'OpenStream':
      return applyOpenStream(view, seq, command);
    case 'OpenStreams':
      return applyOpenStreams(view, seq, command);
    case 'CloseStream':
      return applyCloseStream(view, seq, command);
    case 'CloseStreams':
      return applyCloseStreams(view, seq, command);
    case 'CommitWal':
      return applyCommitWal(view, seq, command);
    case 'CommitStreamObject':
      return applyCommitStreamObject(view, seq, command);
    case 'CommitKvSnapshot':
      return applyCommitKvSnapshot(view, seq, command);
    case 'ForgetObjects':
      return applyForgetObjects(view, seq, command);
    case 'AllocateProducerId':
      return applyAllocateProducerId(view, seq, command);
    case 'StartTieringRound':
      return applyStartTieringRound(view, seq, command);
    case 'CommitTieringRound':
      return applyCommitTieringRound(view, seq, command);
    case 'TrimStreams':
      return applyTrimStreams(view, seq, command);
    case 'DeleteRecords':
      return applyDeleteRecords(view, seq, command);
    case 'AlterTable':
      return applyAlterTable(view, seq, command);
  }
}

/** A rejection: the view only advances its sequence. */
export function reject(view: View, seq: number, code: Rejection['code'], message: string): Applied {
  return { view: { ...view, seq }, outcome: { ok: false, rejection: { code, message } } };
}

/** The stream record of a bucket that has never been opened. */
export const NEVER_OPENED_STREAM: Readonly<StreamRecord> = Object.freeze({
  state: 'closed',
  epoch: 0,
  node: null,
  nodeEpoch: 0,
  startOffset: 0,
  endOffset: 0,
  slices: Object.freeze([]) as unknown as DataSlice[],
  writers: NO_WRITERS,
});

// ---------------------------------------------------------------------------------------------------
// Nodes and coordinator

function applyRegisterNode(view: View, seq: number, command: RegisterNode): Applied {
  const existing = ownRecord(view.nodes, command.nodeId);
  let node: NodeRecord;
  if (command.expectedEpoch !== undefined) {
    // A takeover: only the first of several nodes fencing the same dead incarnation bumps its epoch.
    if (!existing) {
      return reject(view, seq, 'Fenced', `node ${command.nodeId} is not registered (expected epoch ${command.expectedEpoch})`);
    }
    if (existing.epoch !== command.expectedEpoch) {
      return reject(view, seq, 'Fenced', `node ${command.nodeId} is at epoch ${existing.epoch}, not ${command.expectedEpoch}`);
    }
    node = { ...existing, epoch: nextEpoch(existing.epoch) };
  } else {
    node = {
      id: command.nodeId,
      epoch: nextEpoch(existing?.epoch ?? 0),
      address: command.address ?? existing?.address ?? '',
      kafka: command.kafka ?? existing?.kafka ?? '',
      http: command.http ?? existing?.http ?? '',
    };
  }
  return {
    view: { ...view, seq, nodes: { ...view.nodes, [node.id]: node } },
    outcome: { ok: true, epoch: node.epoch },
  };
}

function applyRegisterCoordinator(view: View, seq: number, command: RegisterCoordinator): Applied {
  const epoch = nextEpoch(view.coordinator.epoch);
  return {
    view: { ...view, seq, coordinator: { node: command.coordinatorId, epoch } },
    outcome: { ok: true, epoch },
  };
}

function applyAllocateProducerId(view: View, seq: number, _command: AllocateProducerId): Applied {
  const producerId = view.nextProducerId;
  return { view: { ...view, seq, nextProducerId: producerId + 1 }, outcome: { ok: true, producerId } };
}

// ---------------------------------------------------------------------------------------------------
// Lake tiering

/** A table's lake before its first round. */
const NO_LAKE: Readonly<LakeRecord> = Object.freeze({ metadataKey: null, snapshotId: null, offsets: Object.freeze({}) as Record<string, number>, tieringEpoch: 0, round: null, tieredAtMs: 0 });

/** The table a tiering command names by name and id, or why not. */
function tieredTable(view: View, name: string, tableId: number): TableRecord | string {
  const table = getIn(view.tables, name);
  if (!table || table.id !== tableId) return `table '${name}' with id ${tableId} does not exist`;
  return table;
}

function applyStartTieringRound(view: View, seq: number, command: StartTieringRound): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const table = tieredTable(view, command.table, command.tableId);
  if (typeof table === 'string') return reject(view, seq, 'NotFound', table);
  if (!lakeSettingsOf(table.properties).enabled) return reject(view, seq, 'InvalidArgument', `table '${table.name}' does not have '${LAKE_ENABLED_PROPERTY}' set to true`);
  const lake = table.lake ?? NO_LAKE;
  const seen = new Set<number>();
  const ranges: TieringRange[] = [];
  for (const range of command.ranges as unknown[]) {
    // A range names a lake bucket (lakeBucketOf): the bucket number, or for a partitioned table one bucket of one live partition.
    const malformed = describeMalformedTieringRange(range, table);
    if (malformed !== null) return reject(view, seq, 'InvalidArgument', `StartTieringRound: ${malformed}`);
    const { bucket, startOffset, endOffset } = range as TieringRange;
    if (seen.has(bucket)) return reject(view, seq, 'InvalidArgument', `StartTieringRound names bucket ${bucket} twice`);
    seen.add(bucket);
    const tiered = ownRecord(lake.offsets, String(bucket)) ?? 0;
    if (startOffset !== tiered) return reject(view, seq, 'Conflict', `bucket ${bucket} of '${table.name}' is tiered up to ${tiered}, not ${startOffset}`);
    // A range that passed describeMalformedTieringRange names a stream bucket.
    const stream = streamBucketOfLake(table, bucket)!;
    const committedEnd = getIn(view.buckets, bucketId(table.id, stream.partition, stream.bucket))?.stream.endOffset ?? 0;
    if (endOffset > committedEnd) return reject(view, seq, 'InvalidArgument', `bucket ${bucket} of '${table.name}' ends at ${committedEnd}, before ${endOffset}`);
    ranges.push({ bucket, startOffset, endOffset });
  }
  const tieringEpoch = lake.tieringEpoch + 1;
  const round: TieringRoundRecord = { epoch: tieringEpoch, worker: command.worker, coordinatorEpoch: command.coordinatorEpoch, ranges, startedAtMs: command.atMs };
  const tables = withTable(view.tables, { ...table, lake: { ...lake, tieringEpoch, round } });
  return { view: { ...view, seq, tables }, outcome: { ok: true, tieringEpoch } };
}

function applyCommitTieringRound(view: View, seq: number, command: CommitTieringRound): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const table = tieredTable(view, command.table, command.tableId);
  if (typeof table === 'string') return reject(view, seq, 'NotFound', table);
  const lake = table.lake ?? NO_LAKE;
  const round = lake.round;
  if (round === null || round.epoch !== command.tieringEpoch) {
    return reject(view, seq, 'Fenced', `tiering epoch ${command.tieringEpoch} of '${table.name}' is not the round in progress (${round === null ? 'none is' : `epoch ${round.epoch} is`})`);
  }
  const offsets = { ...lake.offsets };
  for (const range of round.ranges) offsets[String(range.bucket)] = range.endOffset;
  const committed: LakeRecord = { metadataKey: command.metadataKey, snapshotId: command.snapshotId, offsets, tieringEpoch: lake.tieringEpoch, round: null, tieredAtMs: command.atMs };
  const tables = withTable(view.tables, { ...table, lake: committed });
  return { view: { ...view, seq, tables }, outcome: { ok: true } };
}

function applyAlterTable(view: View, seq: number, command: AlterTable): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const table = getIn(view.tables, command.name);
  if (!table) return reject(view, seq, 'NotFound', `table '${command.name}' does not exist`);
  const properties: Record<string, string> = { ...table.properties };
  const changes = Object.entries(command.properties);
  if (changes.length === 0) return reject(view, seq, 'InvalidArgument', 'AlterTable names no property');
  for (const [key, value] of changes) {
    if (!ALTERABLE_PROPERTIES.includes(key)) {
      return reject(view, seq, 'InvalidArgument', `property '${key}' cannot be changed after the table is created (these can: ${ALTERABLE_PROPERTIES.join(', ')})`);
    }
    if (value !== null && typeof value !== 'string') return reject(view, seq, 'InvalidArgument', `property '${key}' must be a string, or null to remove it`);
    if (value === null) delete properties[key];
    else properties[key] = value;
  }
  const invalid = checkLakeSpec({ name: table.name, columns: table.columns, buckets: table.buckets, ...(table.partition ? { partition: table.partition } : {}), properties });
  if (invalid !== null) return reject(view, seq, 'InvalidArgument', invalid);
  const tables = withTable(view.tables, { ...table, properties });
  return { view: { ...view, seq, tables }, outcome: { ok: true } };
}

// ---------------------------------------------------------------------------------------------------
// Retention

function applyTrimStreams(view: View, seq: number, command: TrimStreams): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  if (command.streams.length > LIMITS.trimStreamsPerCommandMax) {
    return reject(view, seq, 'InvalidArgument', `TrimStreams names ${command.streams.length} streams: at most ${LIMITS.trimStreamsPerCommandMax}`);
  }
  for (const [index, trim] of (command.streams as unknown[]).entries()) {
    const malformed = describeMalformedTrim(trim);
    if (malformed !== null) return reject(view, seq, 'InvalidArgument', `TrimStreams.streams[${index}]: ${malformed}`);
  }
  // Streams named twice are trimmed from the record the earlier trim left.
  const buckets = new ShardedMapEditor(view.buckets);
  const released: DataSlice[] = [];
  for (const trim of command.streams) {
    const id = bucketId(trim.tableId, trim.partition, trim.bucket);
    const record = buckets.get(id);
    if (!record) continue;
    const table = getIn(view.tables, record.table);
    if (!table || table.id !== record.tableId) continue;
    const stream = record.stream;
    let target = Math.min(trim.startOffset, stream.endOffset);
    // The lake must hold what the stream no longer does, and a PK bucket's restore replays from its newest snapshot.
    if (lakeSettingsOf(table.properties).enabled) {
      const lakeBucket = lakeBucketOf(table, record.partition, record.bucket);
      target = Math.min(target, lakeBucket === null ? 0 : (ownRecord(table.lake?.offsets ?? {}, String(lakeBucket)) ?? 0));
    }
    if (table.kind === 'pk') target = Math.min(target, record.kvSnapshots.at(-1)?.appliedOffset ?? 0);
    const all = slicesOf(stream);
    const kept = firstSliceEndingAfter(all, target);
    if (kept === 0) continue;
    const startOffset = kept === all.length ? stream.endOffset : all.at(kept)!.startOffset;
    const trimmed = streamStartingAt(stream, startOffset);
    released.push(...trimmed.released);
    buckets.set(id, { ...record, stream: trimmed.stream });
  }
  const trimmed = buckets.result();
  if (trimmed === view.buckets) return { view: { ...view, seq }, outcome: { ok: true } };
  return {
    view: { ...view, seq, buckets: trimmed, ...withReferences(view, [], released, command.atMs) },
    outcome: { ok: true },
  };
}

/**
 * `stream` starting at `startOffset` (never below its start): the slices wholly below it are released, a
 * slice partly below stays (readers skip its records below the start), and the transaction state of
 * records gone is dropped.
 */
function streamStartingAt(stream: StreamRecord, startOffset: number): { stream: StreamRecord; released: DataSlice[] } {
  const newStart = Math.max(stream.startOffset, startOffset);
  const all = slicesOf(stream);
  const dropped = firstSliceEndingAfter(all, newStart);
  const history = stream.history ?? [];
  const transactions = stream.transactions ? { transactions: trimmedTransactions(stream.transactions, newStart) } : {};
  const started = { ...stream, startOffset: newStart, ...transactions };
  const kept = dropped <= history.length ? withSliceLists(started, history.slice(dropped), stream.slices) : withSliceLists(started, [], stream.slices.slice(dropped - history.length));
  return { stream: kept, released: all.slice(0, dropped) };
}

/** `stream` with these slice lists; an empty history is left out, as a stream without one has none. */
function withSliceLists(stream: StreamRecord, history: DataSlice[], slices: DataSlice[]): StreamRecord {
  const next: StreamRecord = { ...stream, slices };
  if (history.length > 0) next.history = history;
  else delete next.history;
  return next;
}

function applyDeleteRecords(view: View, seq: number, command: DeleteRecords): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const id = bucketId(command.tableId, command.partition, command.bucket);
  const record = getIn(view.buckets, id);
  const table = record ? getIn(view.tables, record.table) : undefined;
  if (!record || !table || table.id !== record.tableId) return reject(view, seq, 'NotFound', `bucket ${id} does not exist`);
  if (table.kind === 'pk') return reject(view, seq, 'InvalidArgument', `'${table.name}' is a primary-key table: its records cannot be deleted by offset`);
  const stream = record.stream;
  if (command.startOffset > stream.endOffset) {
    return reject(view, seq, 'InvalidArgument', `offset ${command.startOffset} is beyond the high watermark ${stream.endOffset} of ${describeBucket(record)}`);
  }
  if (command.startOffset <= stream.startOffset) return { view: { ...view, seq }, outcome: { ok: true } };
  if (lakeSettingsOf(table.properties).enabled) {
    const lakeBucket = lakeBucketOf(table, record.partition, record.bucket);
    const tiered = lakeBucket === null ? 0 : (ownRecord(table.lake?.offsets ?? {}, String(lakeBucket)) ?? 0);
    if (command.startOffset > tiered) {
      return reject(view, seq, 'InvalidArgument', `${describeBucket(record)} is tiered to the lake up to offset ${tiered}: records from there on cannot be deleted before the lake holds them`);
    }
  }
  const trimmed = streamStartingAt(stream, command.startOffset);
  const buckets = new ShardedMapEditor(view.buckets);
  buckets.set(id, { ...record, stream: trimmed.stream });
  return { view: { ...view, seq, buckets: buckets.result(), ...withReferences(view, [], trimmed.released, command.atMs) }, outcome: { ok: true } };
}

/** Why `trim` is not a stream trim, or null. */
function describeMalformedTrim(trim: unknown): string | null {
  if (!object.test(trim)) return 'must be an object';
  const value = trim as Record<string, unknown>;
  for (const field of ['tableId', 'bucket', 'startOffset'] as const) {
    if (!count.test(value[field])) return `${field} must be ${count.description}`;
  }
  if (!partitionOrNull.test(value.partition)) return `partition must be ${partitionOrNull.description}`;
  return null;
}

/**
 * Why `range` is not a tiering range of `table`, or null: its bucket must be a lake bucket of the table, the
 * bucket number of an unpartitioned one, or a bucket of a live partition of a partitioned one.
 */
function describeMalformedTieringRange(range: unknown, table: TableRecord): string | null {
  if (!object.test(range)) return 'a range must be an object';
  const { bucket, startOffset, endOffset } = range as Record<string, unknown>;
  if (!table.partition) {
    if (!count.test(bucket) || (bucket as number) >= table.buckets) return `bucket must be a bucket number below ${table.buckets}, got ${show(bucket)}`;
  } else {
    const stream = count.test(bucket) ? streamBucketOfLake(table, bucket as number) : null;
    if (stream === null || !table.partitions.includes(stream.partition!) || lakeBucketOf(table, stream.partition, stream.bucket) !== bucket) {
      return `bucket must be the lake bucket of a bucket of a live partition of '${table.name}', got ${show(bucket)}`;
    }
  }
  if (!count.test(startOffset) || !count.test(endOffset)) return `offsets must be non-negative integers, got ${show(startOffset)} and ${show(endOffset)}`;
  if ((endOffset as number) < (startOffset as number)) return `range of bucket ${String(bucket)} ends at ${String(endOffset)}, before its start ${String(startOffset)}`;
  return null;
}

/**
 * Null when `presented` is the epoch of the registered coordinator. A coordinator that lost the lease
 * keeps its old epoch, so its proposals stop applying as soon as the new holder registers.
 */
function checkCoordinatorEpoch(view: View, presented: number): string | null {
  if (view.coordinator.epoch === 0) return `no coordinator is registered (command carries coordinator epoch ${presented})`;
  if (presented !== view.coordinator.epoch) return epochMismatch('coordinator epoch', presented, view.coordinator.epoch);
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Tables and partitions

function applyCreateTable(view: View, seq: number, command: CreateTable): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const validation = validateTableSpec(command.spec);
  if (!validation.ok) return reject(view, seq, 'InvalidArgument', validation.message);
  const spec = validation.spec;
  if (getIn(view.tables, spec.name)) return reject(view, seq, 'Conflict', `table '${spec.name}' already exists`);
  const leaders = command.leaders;
  if (leaders !== undefined) {
    if (spec.partition) return reject(view, seq, 'InvalidArgument', `CreateTable.leaders is for unpartitioned tables; '${spec.name}' is partitioned`);
    if (leaders.length !== spec.buckets) {
      return reject(view, seq, 'InvalidArgument', `CreateTable.leaders names ${leaders.length} leaders for ${spec.buckets} buckets`);
    }
    const unregistered = leaders.find((leader) => !ownRecord(view.nodes, leader));
    if (unregistered !== undefined) return reject(view, seq, 'NotFound', `node ${unregistered} is not registered`);
  }

  const partitionColumn = spec.partition?.column;
  const table: TableRecord = {
    id: view.nextTableId,
    name: spec.name,
    kind: spec.primaryKey ? 'pk' : 'log',
    columns: spec.columns,
    primaryKey: spec.primaryKey ?? [],
    // A PK table is bucketed by its key without the partition column: within one partition that column
    // holds few distinct values, so hashing it would add nothing but skew.
    bucketKey: spec.bucketKey ?? spec.primaryKey?.filter((column) => column !== partitionColumn) ?? [],
    buckets: spec.buckets,
    properties: spec.properties ?? {},
    createdAtMs: command.createdAtMs,
    partitions: [],
  };
  if (spec.partition) table.partition = spec.partition;

  // A partitioned table has no buckets of its own: each partition brings its buckets when it is created.
  const buckets = spec.partition ? view.buckets : withRecords(view.buckets, newBuckets(table, null, leaders));
  return {
    view: {
      ...view,
      seq,
      tables: withTable(view.tables, table),
      buckets,
      nextTableId: view.nextTableId + 1,
    },
    outcome: { ok: true, tableId: table.id },
  };
}

function applyDropTable(view: View, seq: number, command: DropTable): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const table = getIn(view.tables, command.name);
  if (!table) return reject(view, seq, 'NotFound', `table '${command.name}' does not exist`);

  const tables = new ShardedMapEditor(view.tables);
  tables.delete(table.name);
  const partitions: (string | null)[] = table.partition ? table.partitions : [null];
  return {
    view: { ...view, seq, tables: tables.result(), ...withoutBuckets(view, table, partitions, command.atMs ?? 0) },
    outcome: { ok: true, tableId: table.id },
  };
}

/**
 * Adds a partition with its buckets. A partition dropped and created again has the same bucket ids
 * (`bucketId(tableId, partition, bucket)`), so its new buckets must not start at the epochs a new table's
 * do (leader epoch 0 or 1, stream epoch 0): the first incarnation may have used them, and a deposed writer
 * of it (an append in flight, a compaction, a KV snapshot) presenting the same node, node epoch and stream
 * epoch would then commit into the new stream, and a data node's state kept by (bucket id, stream epoch)
 * would be taken for the new incarnation's.
 *
 * So the buckets of a partition created by the entry at sequence `seq` start at epoch `seq`: leaderless at
 * leader epoch `seq` (the first LeadBucket gives `seq + 1`), or led by `leaders[i]` at `seq + 1` as if that
 * LeadBucket had applied right after; their streams are closed at stream epoch `seq` and were never opened
 * (no node, no data), so the first open is at a leader epoch above it like any open. This is safe because an
 * entry moves a bucket's leader epoch by at most one (a LeadBuckets names a bucket once) and a stream is
 * only opened at its bucket's leader epoch: by induction, after the entry at sequence `k` no leader or
 * stream epoch exceeds `k + 1` (a new table's buckets start at 1 at most, a new partition's at `k + 1`). The
 * earlier incarnation was dropped by an entry before `seq`, so it never had an epoch above `seq - 1`, and
 * every epoch of the new one is above all of its epochs. Per bucket id, leader and stream epochs therefore
 * only grow for the life of the cluster, with no record of dropped partitions kept in the view.
 *
 * Epoch 0 keeps its meaning: "never led" is `leader === null` and "never opened" is `node === null`, and
 * nothing reads a zero epoch as either. A stream closed at epoch `seq` below a leader epoch `seq + 1` is
 * the sync decision's "closed at an older epoch: open at the leader epoch", the same as a new table's
 * stream at 0 below leader epoch 1.
 */
function applyCreatePartition(view: View, seq: number, command: CreatePartition): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const table = getIn(view.tables, command.table);
  if (!table) return reject(view, seq, 'NotFound', `table '${command.table}' does not exist`);
  if (!table.partition) return reject(view, seq, 'InvalidArgument', `table '${table.name}' is not partitioned`);
  if (table.partitions.includes(command.partition)) {
    return reject(view, seq, 'Conflict', `partition '${command.partition}' of table '${table.name}' already exists`);
  }
  const leaders = command.leaders;
  if (leaders !== undefined) {
    if (leaders.length !== table.buckets) {
      return reject(view, seq, 'InvalidArgument', `CreatePartition.leaders names ${leaders.length} leaders for ${table.buckets} buckets`);
    }
    const unregistered = leaders.find((leader) => !ownRecord(view.nodes, leader));
    if (unregistered !== undefined) return reject(view, seq, 'NotFound', `node ${unregistered} is not registered`);
  }
  const created = newBuckets(table, command.partition, leaders, seq);
  for (const id of Object.keys(created)) {
    if (getIn(view.buckets, id)) throw new Error(`invariant broken: bucket ${id} exists though partition '${command.partition}' of '${table.name}' does not`);
  }
  const updated: TableRecord = { ...table, partitions: [...table.partitions, command.partition] };
  return {
    view: {
      ...view,
      seq,
      tables: withTable(view.tables, updated),
      buckets: withRecords(view.buckets, created),
    },
    outcome: { ok: true },
  };
}

function applyDropPartition(view: View, seq: number, command: DropPartition): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const table = getIn(view.tables, command.table);
  if (!table) return reject(view, seq, 'NotFound', `table '${command.table}' does not exist`);
  if (!table.partition) return reject(view, seq, 'InvalidArgument', `table '${table.name}' is not partitioned`);
  if (!table.partitions.includes(command.partition)) {
    return reject(view, seq, 'NotFound', `partition '${command.partition}' of table '${table.name}' does not exist`);
  }
  const updated: TableRecord = { ...table, partitions: table.partitions.filter((name) => name !== command.partition) };
  return {
    view: {
      ...view,
      seq,
      tables: withTable(view.tables, updated),
      ...withoutBuckets(view, table, [command.partition], command.atMs ?? 0),
    },
    outcome: { ok: true },
  };
}

/**
 * The buckets of a new table (partition null) or of a new partition, by bucket id, with never-opened
 * streams closed at stream epoch `epochFloor`: leaderless at leader epoch `epochFloor`, or led by
 * `leaders[i]` at the next one (what a LeadBucket on a leaderless bucket gives). A new table's buckets
 * start at floor 0; a new partition's above every earlier epoch (see `applyCreatePartition`).
 */
function newBuckets(table: TableRecord, partition: string | null, leaders: readonly string[] | undefined, epochFloor = 0): Record<string, BucketRecord> {
  const created: Record<string, BucketRecord> = {};
  for (let bucket = 0; bucket < table.buckets; bucket++) {
    const leader = leaders?.[bucket] ?? null;
    created[bucketId(table.id, partition, bucket)] = {
      tableId: table.id,
      table: table.name,
      partition,
      bucket,
      leader,
      leaderEpoch: leader === null ? epochFloor : nextEpoch(epochFloor),
      stream: { ...NEVER_OPENED_STREAM, epoch: epochFloor, slices: [], writers: NO_WRITERS },
      kvSnapshots: [],
    };
  }
  return created;
}

/** The table map with `table` set under its name (one shard copied). */
function withTable(tables: ShardedMap<TableRecord>, table: TableRecord): ShardedMap<TableRecord> {
  return withRecords(tables, { [table.name]: table });
}

/**
 * The map with `changes` set. Only the shards they fall in are copied (with the list of shards), so the
 * cost follows the number of changed records, not the hundred thousand a view can hold.
 */
function withRecords<T>(map: ShardedMap<T>, changes: Record<string, T>): ShardedMap<T> {
  const editor = new ShardedMapEditor(map);
  for (const id of Object.keys(changes)) editor.set(id, changes[id]!);
  return editor.result();
}

/** One entry of the metadata log. */
export interface LogEntry {
  seq: number;
  command: Command;
}

/**
 * Applies consecutive log entries, giving exactly the view and the outcomes that applying them one by
 * one with `apply` gives, and never mutating `view`. The views between the entries are not returned: a
 * process applying a backlog (a burst, a start) needs only the last one and the outcomes. The view's big
 * maps are sharded, so each entry copies only the shards it changes and a batch needs no copy of its own.
 */
export function applyBatch(view: View, entries: readonly LogEntry[]): { view: View; outcomes: Outcome[] } {
  let current = view;
  const outcomes: Outcome[] = [];
  for (const entry of entries) {
    const applied = apply(current, entry.seq, entry.command);
    current = applied.view;
    outcomes.push(applied.outcome);
  }
  return { view: current, outcomes };
}

/**
 * The bucket map without the buckets of `table` in `partitions`, and the object registry and garbage after
 * everything the buckets pointed into (the slices of their streams and their KV snapshots) was released at
 * `atMs`.
 */
function withoutBuckets(
  view: View,
  table: TableRecord,
  partitions: (string | null)[],
  atMs: number,
): Pick<View, 'buckets' | 'objects' | 'garbage'> {
  const remaining = new ShardedMapEditor(view.buckets);
  const released: ObjectReference[] = [];
  for (const partition of partitions) {
    for (let bucket = 0; bucket < table.buckets; bucket++) {
      const id = bucketId(table.id, partition, bucket);
      const record = remaining.get(id);
      if (record) {
        // One push per reference: spreading a stream of many slices into one call could exceed the argument limit.
        for (const slice of record.stream.history ?? []) released.push(slice);
        for (const slice of record.stream.slices) released.push(slice);
        for (const snapshot of record.kvSnapshots) released.push(snapshot);
      }
      remaining.delete(id);
    }
  }
  return { buckets: remaining.result(), ...withReferences(view, [], released, atMs) };
}

// ---------------------------------------------------------------------------------------------------
// Leaders and streams

function applyLeadBucket(view: View, seq: number, command: LeadBucket): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const buckets = new ShardedMapEditor(view.buckets);
  const led = leadOneBucket(view, buckets, command);
  if ('rejection' in led) return reject(view, seq, led.rejection.code, led.rejection.message);
  buckets.set(led.id, led.record);
  return {
    view: { ...view, seq, buckets: buckets.result() },
    outcome: { ok: true, leaderEpoch: led.record.leaderEpoch },
  };
}

function applyLeadBuckets(view: View, seq: number, command: LeadBuckets): Applied {
  const fenced = checkCoordinatorEpoch(view, command.coordinatorEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
  const malformed = describeMalformedList('LeadBuckets.buckets', command.buckets, LIMITS.leadBucketsPerCommandMax, BUCKET_TO_LEAD_FIELDS);
  if (malformed !== null) return reject(view, seq, 'InvalidArgument', malformed);
  const { buckets, outcomes } = applyEach(view, command.buckets, (current, target) => leadOneBucket(view, current, target));
  const led = outcomes.map((result): BucketLeadOutcome => (result.ok ? { ok: true, leaderEpoch: result.record.leaderEpoch } : result));
  return { view: { ...view, seq, buckets }, outcome: { ok: true, led } };
}

/**
 * The bucket records a command decides against: the view's, with the records an earlier part of the same
 * command updated winning over them (the command's editor of the bucket map).
 */
type BucketLookup = Pick<ShardedMapEditor<BucketRecord>, 'get'>;

/** One LeadBucket, the coordinator fence aside: the bucket's new record, or why it is refused. */
function leadOneBucket(
  view: View,
  buckets: BucketLookup,
  target: BucketToLead,
): { id: string; record: BucketRecord } | { rejection: Rejection } {
  const refuse = (code: Rejection['code'], message: string) => ({ rejection: { code, message } });
  const id = bucketId(target.tableId, target.partition, target.bucket);
  const record = buckets.get(id);
  if (!record) return refuse('NotFound', missingBucket(target));
  if (!ownRecord(view.nodes, target.leader)) return refuse('NotFound', `node ${target.leader} is not registered`);
  if (target.expectedLeaderEpoch !== undefined && target.expectedLeaderEpoch !== record.leaderEpoch) {
    return refuse('Conflict', `${describeBucket(record)} is at leader epoch ${record.leaderEpoch}, not ${target.expectedLeaderEpoch}`);
  }
  // The stream stays as it is: the new leader's sync task closes or takes it over before it opens.
  return { id, record: { ...record, leader: target.leader, leaderEpoch: nextEpoch(record.leaderEpoch) } };
}

function applyOpenStream(view: View, seq: number, command: OpenStream): Applied {
  const buckets = new ShardedMapEditor(view.buckets);
  const opened = openOneStream(view, buckets, command.nodeId, command.nodeEpoch, command);
  if ('rejection' in opened) return reject(view, seq, opened.rejection.code, opened.rejection.message);
  buckets.set(opened.id, opened.record);
  return {
    view: { ...view, seq, buckets: buckets.result() },
    outcome: { ok: true, streamEpoch: opened.record.stream.epoch },
  };
}

function applyOpenStreams(view: View, seq: number, command: OpenStreams): Applied {
  const malformed = describeMalformedList('OpenStreams.streams', command.streams, LIMITS.openStreamsPerCommandMax, STREAM_TO_OPEN_FIELDS);
  if (malformed !== null) return reject(view, seq, 'InvalidArgument', malformed);
  const { buckets, outcomes } = applyEach(view, command.streams, (current, target) => openOneStream(view, current, command.nodeId, command.nodeEpoch, target));
  const opened = outcomes.map((result): StreamOpenOutcome => (result.ok ? { ok: true, streamEpoch: result.record.stream.epoch } : result));
  return { view: { ...view, seq, buckets }, outcome: { ok: true, opened } };
}

/**
 * The fence of docs/architecture.md §4 for one stream: the bucket's record after its stream opened at `target.leaderEpoch`
 * for `nodeId` at `nodeEpoch`, or why it may not. `buckets` holds records an earlier part of the same
 * command updated, which win over the view's.
 */
function openOneStream(
  view: View,
  buckets: BucketLookup,
  nodeId: string,
  nodeEpoch: number,
  target: StreamToOpen,
): { id: string; record: BucketRecord } | { rejection: Rejection } {
  const refuse = (code: Rejection['code'], message: string) => ({ rejection: { code, message } });
  const id = bucketId(target.tableId, target.partition, target.bucket);
  const record = buckets.get(id);
  if (!record) return refuse('NotFound', missingBucket(target));
  const node = ownRecord(view.nodes, nodeId);
  if (!node) return refuse('NotFound', `node ${nodeId} is not registered`);
  if (nodeEpoch !== node.epoch) return refuse('Fenced', epochMismatch(`node ${node.id} epoch`, nodeEpoch, node.epoch));
  if (record.leader !== nodeId) {
    const leader = record.leader === null ? 'it has no leader' : `the leader is node ${record.leader}`;
    return refuse('Fenced', `node ${nodeId} does not lead ${describeBucket(record)}: ${leader}`);
  }
  if (target.leaderEpoch !== record.leaderEpoch) {
    return refuse('Fenced', epochMismatch(`leader epoch`, target.leaderEpoch, record.leaderEpoch) + ` for ${describeBucket(record)}`);
  }
  const stream = record.stream;
  if (stream.state === 'open') {
    return refuse('Conflict', `the stream of ${describeBucket(record)} is already open at epoch ${stream.epoch} by node ${stream.node}`);
  }
  if (target.leaderEpoch <= stream.epoch) {
    // Opening twice at one epoch would let two incarnations write under the same fence.
    return refuse('Fenced', `the stream of ${describeBucket(record)} was already opened at epoch ${stream.epoch}: it needs a new leader epoch`);
  }
  return {
    id,
    record: { ...record, stream: { ...stream, state: 'open', epoch: target.leaderEpoch, node: nodeId, nodeEpoch } },
  };
}

function applyCloseStream(view: View, seq: number, command: CloseStream): Applied {
  const buckets = new ShardedMapEditor(view.buckets);
  const closed = closeOneStream(view, buckets, command.nodeId, command.nodeEpoch, command);
  if ('rejection' in closed) return reject(view, seq, closed.rejection.code, closed.rejection.message);
  buckets.set(closed.id, closed.record);
  return {
    view: { ...view, seq, buckets: buckets.result() },
    outcome: { ok: true },
  };
}

function applyCloseStreams(view: View, seq: number, command: CloseStreams): Applied {
  const malformed = describeMalformedList('CloseStreams.streams', command.streams, LIMITS.closeStreamsPerCommandMax, STREAM_TO_CLOSE_FIELDS);
  if (malformed !== null) return reject(view, seq, 'InvalidArgument', malformed);
  const { buckets, outcomes } = applyEach(view, command.streams, (current, target) => closeOneStream(view, current, command.nodeId, command.nodeEpoch, target));
  const closed = outcomes.map((result): StreamCloseOutcome => (result.ok ? { ok: true } : result));
  return { view: { ...view, seq, buckets }, outcome: { ok: true, closed } };
}

/**
 * The items of a batch command, each decided against the buckets as the earlier ones left them (`current`
 * gives the records they updated) and succeeding or failing on its own; one editor holds the changes of them
 * all, so only the shards of the changed buckets are copied, each once.
 */
function applyEach<Item>(
  view: View,
  items: readonly Item[],
  decide: (current: BucketLookup, item: Item) => { id: string; record: BucketRecord } | { rejection: Rejection },
): { buckets: ShardedMap<BucketRecord>; outcomes: ({ ok: true; record: BucketRecord } | { ok: false; rejection: Rejection })[] } {
  const buckets = new ShardedMapEditor(view.buckets);
  const outcomes = items.map((item) => {
    const result = decide(buckets, item);
    if ('rejection' in result) return { ok: false as const, rejection: result.rejection };
    buckets.set(result.id, result.record);
    return { ok: true as const, record: result.record };
  });
  return { buckets: buckets.result(), outcomes };
}

/**
 * One CloseStream: accepted from the node that opened the stream, at the node epoch it opened it with, or
 * from any registered node at its current epoch once the opener's incarnation is fenced (a takeover).
 * `buckets` holds records an earlier part of the same command updated, which win over the view's.
 */
function closeOneStream(
  view: View,
  buckets: BucketLookup,
  nodeId: string,
  nodeEpoch: number,
  target: StreamToClose,
): { id: string; record: BucketRecord } | { rejection: Rejection } {
  const refuse = (code: Rejection['code'], message: string) => ({ rejection: { code, message } });
  const id = bucketId(target.tableId, target.partition, target.bucket);
  const record = buckets.get(id);
  if (!record) return refuse('NotFound', missingBucket(target));
  const stream = record.stream;
  if (stream.state !== 'open') return refuse('Conflict', `the stream of ${describeBucket(record)} is not open`);
  if (target.streamEpoch !== stream.epoch) {
    return refuse('Fenced', epochMismatch('stream epoch', target.streamEpoch, stream.epoch) + ` for ${describeBucket(record)}`);
  }
  const staleProposer = describeStaleProposer(view, nodeId, nodeEpoch);
  if (staleProposer !== null) return refuse('Fenced', staleProposer);
  const isOpener = nodeId === stream.node && nodeEpoch === stream.nodeEpoch;
  const openerEpoch = stream.node === null ? undefined : ownRecord(view.nodes, stream.node)?.epoch;
  const openerFenced = openerEpoch !== undefined && openerEpoch > stream.nodeEpoch;
  if (!isOpener && !openerFenced) {
    return refuse('Fenced', `the stream of ${describeBucket(record)} is held by node ${stream.node} at node epoch ${stream.nodeEpoch}, which is not fenced`);
  }
  // Node and epochs stay: the sync decision reads who opened the stream last and at which epoch.
  return { id, record: { ...record, stream: { ...stream, state: 'closed' } } };
}

// ---------------------------------------------------------------------------------------------------
// Storage

function applyCommitWal(view: View, seq: number, command: CommitWal): Applied {
  const staleProposer = describeStaleProposer(view, command.nodeId, command.nodeEpoch);
  if (staleProposer !== null) return reject(view, seq, 'Fenced', staleProposer);
  if (command.ranges.length === 0) return reject(view, seq, 'InvalidArgument', 'CommitWal.ranges must not be empty');
  if (command.ranges.length > LIMITS.walRangesPerObjectMax) {
    return reject(view, seq, 'InvalidArgument', `CommitWal holds ${command.ranges.length} ranges: at most ${LIMITS.walRangesPerObjectMax}`);
  }
  if (getIn(view.garbage, command.object)) return reject(view, seq, 'Conflict', awaitingDeletion(command.object));
  // Ranges of one stream are checked against the stream as the earlier ranges of this command left it.
  const buckets = new ShardedMapEditor(view.buckets);
  const added: DataSlice[] = [];
  for (const [index, range] of command.ranges.entries()) {
    const malformed = describeMalformedRange(range);
    if (malformed !== null) return reject(view, seq, 'InvalidArgument', `CommitWal.ranges[${index}]: ${malformed}`);
    const id = bucketId(range.tableId, range.partition, range.bucket);
    const record = buckets.get(id);
    if (!record) return reject(view, seq, 'NotFound', missingBucket(range));
    const stream = record.stream;
    const fenced = describeWriterFence(record, command.nodeId, command.nodeEpoch, range.streamEpoch);
    if (fenced !== null) return reject(view, seq, 'Fenced', fenced);
    if (range.startOffset !== stream.endOffset) {
      return reject(
        view,
        seq,
        'Conflict',
        `range [${range.startOffset}, ${range.endOffset}) of ${describeBucket(record)} does not start at the committed end ${stream.endOffset}`,
      );
    }
    const slice: DataSlice = {
      object: command.object,
      startOffset: range.startOffset,
      endOffset: range.endOffset,
      position: range.position,
      length: range.length,
    };
    const writers = range.writer ? withWriter(stream.writers, range.writer, range) : stream.writers;
    const transactions = range.transaction ? { transactions: withTransactionRange(stream.transactions, range.startOffset, range.transaction) } : {};
    buckets.set(id, { ...record, stream: { ...stream, endOffset: range.endOffset, slices: [...stream.slices, slice], writers, ...transactions } });
    added.push(slice);
  }
  // Nothing is released, so nothing moves to the garbage and the time does not matter.
  const references = withReferences(view, added, [], 0);
  return { view: { ...view, seq, buckets: buckets.result(), ...references }, outcome: { ok: true } };
}

/**
 * Records a writer's last batch (keeping the few before it, for retries of a writer with several requests
 * in flight), evicting the writer whose last batch is oldest beyond the bound. Copies only the shard of
 * the writer (and of the evicted one).
 */
function withWriter(writers: ShardedMap<WriterState>, writer: { id: string; seq: number }, range: WalRange): ShardedMap<WriterState> {
  const previous = getIn(writers, writer.id);
  const earlier = previous ? [{ seq: previous.seq, baseOffset: previous.baseOffset, count: previous.count }, ...(previous.earlier ?? [])].slice(0, LIMITS.writerBatchesRemembered - 1) : [];
  const batch = { seq: writer.seq, baseOffset: range.startOffset, count: range.endOffset - range.startOffset };
  const editor = new ShardedMapEditor(writers);
  editor.set(writer.id, earlier.length > 0 ? { ...batch, earlier } : batch);
  if (editor.size > LIMITS.writersPerStreamMax) editor.delete(oldestWriter(editor.result()));
  return editor.result();
}

/** The writer to evict: the smallest base offset, then the smallest id (deterministic whatever the order of the map). */
function oldestWriter(writers: ShardedMap<WriterState>): string {
  let oldestId = '';
  let oldestOffset = Infinity;
  for (const shard of writers.shards) {
    for (const id of Object.keys(shard)) {
      const baseOffset = shard[id]!.baseOffset;
      if (baseOffset < oldestOffset || (baseOffset === oldestOffset && id < oldestId)) {
        oldestId = id;
        oldestOffset = baseOffset;
      }
    }
  }
  return oldestId;
}

function applyCommitStreamObject(view: View, seq: number, command: CommitStreamObject): Applied {
  const staleProposer = describeStaleProposer(view, command.nodeId, command.nodeEpoch);
  if (staleProposer !== null) return reject(view, seq, 'Fenced', staleProposer);
  const id = bucketId(command.tableId, command.partition, command.bucket);
  const record = getIn(view.buckets, id);
  if (!record) return reject(view, seq, 'NotFound', missingBucket(command));
  const stream = record.stream;
  const fenced = describeWriterFence(record, command.nodeId, command.nodeEpoch, command.streamEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);

  const { startOffset, endOffset } = command;
  const range = `[${startOffset}, ${endOffset})`;
  if (endOffset <= startOffset) return reject(view, seq, 'InvalidArgument', `CommitStreamObject range ${range} is empty`);
  const malformed = describeMalformedStreamObjectSlices(command.slices, startOffset, endOffset);
  if (malformed !== null) return reject(view, seq, 'InvalidArgument', `CommitStreamObject.${malformed}`);
  if (endOffset > stream.endOffset) {
    // The committed end only grows, so no view the proposer read can have shown these offsets.
    return reject(view, seq, 'InvalidArgument', `range ${range} of ${describeBucket(record)} runs past the committed end ${stream.endOffset}`);
  }
  // A slice partly below the stream's start (DeleteRecords) is still the stream's and may be compacted.
  if (startOffset < (firstSliceOf(stream)?.startOffset ?? stream.startOffset)) {
    return reject(view, seq, 'Conflict', `range ${range} of ${describeBucket(record)} starts below the stream's start ${stream.startOffset}`);
  }
  // The slices are in offset order: the first replaced one starts at startOffset, the last ends at endOffset.
  // Slices in WAL objects, which compaction replaces, are all in `slices`, never in `history`.
  const first = stream.slices.findIndex((slice) => slice.startOffset >= startOffset);
  const last = stream.slices.findIndex((slice) => slice.endOffset >= endOffset);
  if (first === -1 || stream.slices[first]!.startOffset !== startOffset || last === -1 || stream.slices[last]!.endOffset !== endOffset) {
    return reject(view, seq, 'Conflict', `range ${range} of ${describeBucket(record)} does not start and end on boundaries of its slices`);
  }
  if (getIn(view.garbage, command.object)) return reject(view, seq, 'Conflict', awaitingDeletion(command.object));

  const replaced = stream.slices.slice(first, last + 1);
  const added: DataSlice[] = command.slices.map((slice) => {
    const added: DataSlice = { object: command.object, startOffset: slice.startOffset, endOffset: slice.endOffset, position: slice.position, length: slice.length };
    if (slice.batches !== undefined) added.batches = slice.batches;
    return added;
  });
  const slices = [...stream.slices.slice(0, first), ...added, ...stream.slices.slice(last + 1)];
  // The stream-object slices leading `slices` move to `history` once there are many, so appends stay cheap.
  let leading = 0;
  while (leading < slices.length && !isWalSlice(slices[leading]!)) leading++;
  const updated: BucketRecord = {
    ...record,
    stream: leading > LIMITS.streamSlicesFoldMin ? withSliceLists(stream, (stream.history ?? []).concat(slices.slice(0, leading)), slices.slice(leading)) : { ...stream, slices },
  };
  return {
    view: { ...view, seq, buckets: withRecords(view.buckets, { [id]: updated }), ...withReferences(view, added, replaced, command.atMs) },
    outcome: { ok: true },
  };
}

/**
 * Null when `slices` is a non-empty list, within the bound, of well-formed slices that run contiguously
 * from `startOffset` to `endOffset`; otherwise what is wrong, starting with the offending field.
 */
function describeMalformedStreamObjectSlices(slices: StreamObjectSlice[], startOffset: number, endOffset: number): string | null {
  if (slices.length === 0) return 'slices must not be empty';
  if (slices.length > LIMITS.streamObjectSlicesMax) return `slices holds ${slices.length} slices: at most ${LIMITS.streamObjectSlicesMax}`;
  let offset = startOffset;
  for (const [index, slice] of slices.entries()) {
    if (!object.test(slice)) return `slices[${index}] must be an object`;
    const value = slice as unknown as Record<string, unknown>;
    for (const field of ['startOffset', 'endOffset', 'position', 'length'] as const) {
      if (!count.test(value[field])) return `slices[${index}].${field} must be ${count.description}`;
    }
    if (slice.endOffset <= slice.startOffset) return `slices[${index}] is empty: endOffset must be greater than startOffset`;
    if (slice.length === 0) return `slices[${index}].length must be positive`;
    if (value['batches'] !== undefined) {
      const batches = value['batches'];
      if (!count.test(batches) || (batches as number) < 2) return `slices[${index}].batches must be an integer of at least 2 when present`;
      if ((batches as number) > slice.endOffset - slice.startOffset) return `slices[${index}] packs ${batches as number} batches into ${slice.endOffset - slice.startOffset} records`;
      if ((batches as number) * PACKED_INDEX_BYTES_PER_BATCH >= slice.length) return `slices[${index}] of ${slice.length} bytes cannot hold ${batches as number} batches and their index`;
    }
    if (slice.startOffset !== offset) return `slices[${index}] starts at ${slice.startOffset}, expected ${offset}: the slices must be contiguous from startOffset`;
    offset = slice.endOffset;
  }
  if (offset !== endOffset) return `slices end at ${offset}, not at endOffset ${endOffset}`;
  return null;
}

function applyCommitKvSnapshot(view: View, seq: number, command: CommitKvSnapshot): Applied {
  const staleProposer = describeStaleProposer(view, command.nodeId, command.nodeEpoch);
  if (staleProposer !== null) return reject(view, seq, 'Fenced', staleProposer);
  const id = bucketId(command.tableId, command.partition, command.bucket);
  const record = getIn(view.buckets, id);
  if (!record) return reject(view, seq, 'NotFound', missingBucket(command));
  // The stream epoch is the leader epoch the leader opened the stream at, so this also fences older leaders.
  const fenced = describeWriterFence(record, command.nodeId, command.nodeEpoch, command.streamEpoch);
  if (fenced !== null) return reject(view, seq, 'Fenced', fenced);

  const table = getIn(view.tables, record.table);
  if (!table || table.id !== record.tableId) throw new Error(`invariant broken: ${describeBucket(record)} has no table of id ${record.tableId}`);
  if (table.kind !== 'pk') return reject(view, seq, 'InvalidArgument', `table '${table.name}' is not a PK table: it has no KV tablet to snapshot`);
  const stream = record.stream;
  if (command.appliedOffset > stream.endOffset) {
    // The committed end only grows, so no view the proposer read can have shown these offsets.
    return reject(
      view,
      seq,
      'InvalidArgument',
      `KV snapshot of ${describeBucket(record)} at applied offset ${command.appliedOffset} is past the committed end ${stream.endOffset}`,
    );
  }
  const newest = record.kvSnapshots[record.kvSnapshots.length - 1];
  if (newest !== undefined && command.appliedOffset < newest.appliedOffset) {
    return reject(
      view,
      seq,
      'Conflict',
      `KV snapshot of ${describeBucket(record)} at applied offset ${command.appliedOffset} is older than the committed one at ${newest.appliedOffset}`,
    );
  }
  if (getIn(view.garbage, command.object)) return reject(view, seq, 'Conflict', awaitingDeletion(command.object));
  if (record.kvSnapshots.some((snapshot) => snapshot.object === command.object)) {
    return reject(view, seq, 'Conflict', `object ${command.object} is already a KV snapshot of ${describeBucket(record)}`);
  }
  if (getIn(view.objects, command.object)) {
    return reject(view, seq, 'Conflict', `object ${command.object} is already registered: a KV snapshot must be an object of its own`);
  }

  const snapshot: KvSnapshotRecord = {
    object: command.object,
    appliedOffset: command.appliedOffset,
    bytes: command.bytes,
    streamEpoch: command.streamEpoch,
  };
  // Beyond the bound the oldest snapshots are released: their objects go to the garbage, stamped `atMs`.
  const kept = [...record.kvSnapshots, snapshot];
  const released = kept.splice(0, Math.max(0, kept.length - LIMITS.kvSnapshotsKept));
  const updated: BucketRecord = { ...record, kvSnapshots: kept };
  return {
    view: { ...view, seq, buckets: withRecords(view.buckets, { [id]: updated }), ...withReferences(view, [snapshot], released, command.atMs) },
    outcome: { ok: true },
  };
}

function applyForgetObjects(view: View, seq: number, command: ForgetObjects): Applied {
  if (command.keys.length > LIMITS.forgetObjectsKeysMax) {
    return reject(view, seq, 'InvalidArgument', `ForgetObjects names ${command.keys.length} keys: at most ${LIMITS.forgetObjectsKeysMax}`);
  }
  for (const [index, key] of command.keys.entries()) {
    if (!objectKey.test(key)) return reject(view, seq, 'InvalidArgument', `ForgetObjects.keys[${index}] must be ${objectKey.description}`);
  }
  const forgotten = command.keys.filter((key) => getIn(view.garbage, key) !== undefined);
  if (forgotten.length === 0) return { view: { ...view, seq }, outcome: { ok: true } };
  const garbage = new ShardedMapEditor(view.garbage);
  for (const key of forgotten) garbage.delete(key);
  return { view: { ...view, seq, garbage: garbage.result() }, outcome: { ok: true } };
}

/**
 * Something that holds one reference to an object: a slice of a stream (`DataSlice`) or a KV snapshot
 * (`KvSnapshotRecord`).
 */
type ObjectReference = Pick<DataSlice | KvSnapshotRecord, 'object'>;

/** The bytes of its object that an added reference shows: a slice's end, a KV snapshot's archive size. */
function bytesShownBy(reference: DataSlice | KvSnapshotRecord): number {
  return 'bytes' in reference ? reference.bytes : reference.position + reference.length;
}

/**
 * The object registry and garbage after the references `added` were committed and the references
 * `released` were dropped or replaced. References change by the net count per object, so an object whose
 * slices are replaced by slices of the same object never passes through zero. An object left without
 * references moves to the garbage, stamped `atMs`.
 *
 * Callers refuse commits naming an object in the garbage, so an added reference never points into one; a
 * released reference always points into a registered object. Anything else is a broken invariant.
 */
function withReferences(
  view: View,
  added: readonly (DataSlice | KvSnapshotRecord)[],
  released: readonly ObjectReference[],
  atMs: number,
): Pick<View, 'objects' | 'garbage'> {
  if (added.length === 0 && released.length === 0) return { objects: view.objects, garbage: view.garbage };
  const deltas = new Map<string, number>();
  const shownBytes = new Map<string, number>();
  for (const reference of added) {
    deltas.set(reference.object, (deltas.get(reference.object) ?? 0) + 1);
    shownBytes.set(reference.object, Math.max(shownBytes.get(reference.object) ?? 0, bytesShownBy(reference)));
  }
  for (const reference of released) deltas.set(reference.object, (deltas.get(reference.object) ?? 0) - 1);
  // Only the shards of the objects that change are copied (a whole-map copy cost 150–250 ms at 100 000 objects).
  const objects = new ShardedMapEditor<ObjectRecord>(view.objects);
  const garbage = new ShardedMapEditor<GarbageRecord>(view.garbage);
  for (const [key, delta] of deltas) {
    const record = objects.get(key);
    const bytes = Math.max(record?.bytes ?? 0, shownBytes.get(key) ?? 0);
    const sized = bytes > 0 ? { bytes } : {};
    if (delta === 0) {
      // Slices replaced by slices of the same object may show more of it.
      if (record && bytes !== (record.bytes ?? 0)) objects.set(key, { ...record, bytes });
      continue;
    }
    if (getIn(view.garbage, key)) throw new Error(`invariant broken: object ${key} is in the garbage but a slice or KV snapshot points into it`);
    const references = (record?.references ?? 0) + delta;
    if (references < 0) throw new Error(`invariant broken: object ${key} would have ${references} references`);
    if (references > 0) {
      objects.set(key, { references, ...sized });
      continue;
    }
    objects.delete(key);
    garbage.set(key, { unreferencedAtMs: atMs, ...sized });
  }
  return { objects: objects.result(), garbage: garbage.result() };
}


function describeMalformedRange(range: unknown): string | null {
  if (!object.test(range)) return 'must be an object';
  const value = range as Record<string, unknown>;
  for (const field of ['tableId', 'bucket', 'streamEpoch', 'startOffset', 'endOffset', 'position', 'length'] as const) {
    if (!count.test(value[field])) return `${field} must be ${count.description}`;
  }
  if (!partitionOrNull.test(value.partition)) return `partition must be ${partitionOrNull.description}`;
  if ((value.endOffset as number) <= (value.startOffset as number)) return 'endOffset must be greater than startOffset';
  if ((value.length as number) === 0) return 'length must be positive';
  if (value.writer !== undefined) {
    const writer = value.writer as Record<string, unknown>;
    if (!object.test(writer) || !name.test(writer.id) || !count.test(writer.seq)) return 'writer must be {id: a non-empty string, seq: a non-negative integer}';
  }
  if (value.transaction !== undefined) return describeMalformedTransaction(value.transaction);
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Fences shared by the commands of a stream's writer

/** Why a proposer is not the current incarnation of a registered node, or null when it is. */
function describeStaleProposer(view: View, nodeId: string, nodeEpoch: number): string | null {
  const proposer = ownRecord(view.nodes, nodeId);
  if (!proposer) return `node ${nodeId} is not registered`;
  if (nodeEpoch !== proposer.epoch) return epochMismatch(`node ${proposer.id} epoch`, nodeEpoch, proposer.epoch);
  return null;
}

/**
 * The storage fence (`isStreamOpenBy`): why a writer may not change a stream's data (it is not the
 * stream's opener at that node epoch, or tags a stream epoch other than the stream's), or null when it may.
 */
function describeWriterFence(record: BucketRecord, nodeId: string, nodeEpoch: number, streamEpoch: number): string | null {
  const stream = record.stream;
  if (!isStreamOpenBy(stream, { nodeId, nodeEpoch })) {
    return `the stream of ${describeBucket(record)} is not open by node ${nodeId} at node epoch ${nodeEpoch}`;
  }
  if (streamEpoch !== stream.epoch) return epochMismatch('stream epoch', streamEpoch, stream.epoch) + ` for ${describeBucket(record)}`;
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Messages

function epochMismatch(what: string, presented: number, current: number): string {
  return presented < current
    ? `${what} ${presented} is fenced: current is ${current}`
    : `${what} ${presented} is not current: current is ${current}`;
}

function describeBucket(record: BucketRecord): string {
  const partition = record.partition === null ? '' : ` partition '${record.partition}'`;
  return `table '${record.table}'${partition} bucket ${record.bucket}`;
}

function awaitingDeletion(key: string): string {
  return `object ${key} is awaiting deletion: no slice may point into it again`;
}

function missingBucket(address: { tableId: number; partition: string | null; bucket: number }): string {
  const partition = address.partition === null ? '' : ` partition '${address.partition}'`;
  return `bucket ${address.bucket} of table id ${address.tableId}${partition} does not exist`;
}

// ---------------------------------------------------------------------------------------------------
// Shape of commands read from the log

/** A check of one command field read from the log, with the words the rejection message uses for it. */
interface FieldRule {
  description: string;
  test(value: unknown): boolean;
}

const isNonEmptyString = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= LIMITS.nameLengthMax;

const name: FieldRule = { description: `a non-empty string of at most ${LIMITS.nameLengthMax} characters`, test: isNonEmptyString };
// Partition names become part of bucket ids (`{tableId}/{partition}/{bucket}`), so they must not hold `/`.
const partitionName: FieldRule = {
  description: `a non-empty string of at most ${LIMITS.nameLengthMax} characters without '/'`,
  test: (value) => isNonEmptyString(value) && !value.includes('/'),
};
const partitionOrNull: FieldRule = {
  description: `null or ${partitionName.description}`,
  test: (value) => value === null || partitionName.test(value),
};
const count: FieldRule = {
  description: 'a non-negative integer',
  test: (value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0,
};
const optionalCount: FieldRule = { description: `absent or ${count.description}`, test: (value) => value === undefined || count.test(value) };
const optionalString: FieldRule = { description: 'absent or a string', test: (value) => value === undefined || typeof value === 'string' };
const object: FieldRule = {
  description: 'an object',
  test: (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
};
const objectKey: FieldRule = { description: 'a non-empty string', test: (value) => typeof value === 'string' && value.length > 0 };
const array: FieldRule = { description: 'an array', test: Array.isArray };
const optionalNames: FieldRule = {
  description: `absent or an array of ${name.description}s`,
  test: (value) => value === undefined || (Array.isArray(value) && value.every((item) => name.test(item))),
};
const STREAM_TO_OPEN_FIELDS: Record<keyof StreamToOpen, FieldRule> = { tableId: count, partition: partitionOrNull, bucket: count, leaderEpoch: count };

const STREAM_TO_CLOSE_FIELDS: Record<keyof StreamToClose, FieldRule> = { tableId: count, partition: partitionOrNull, bucket: count, streamEpoch: count };
const BUCKET_TO_LEAD_FIELDS: Record<keyof BucketToLead, FieldRule> = {
  tableId: count,
  partition: partitionOrNull,
  bucket: count,
  leader: name,
  expectedLeaderEpoch: optionalCount,
};

/**
 * Null when `items`, the list of a batch command named `what`, holds 1 to `itemsMax` objects with every
 * field of `fields` well typed and no bucket twice; otherwise a message naming the first offence.
 */
function describeMalformedList(what: string, items: unknown[], itemsMax: number, fields: Record<string, FieldRule>): string | null {
  if (items.length === 0) return `${what} must not be empty`;
  if (items.length > itemsMax) return `${what} holds ${items.length} entries: at most ${itemsMax}`;
  const named = new Set<string>();
  // Every process checks every list it applies (100 000 items of LeadBuckets and OpenStreams when a cluster
  // of that size restarts): the rules' entries are listed once, not once per item.
  const rules = Object.entries(fields);
  for (let index = 0; index < items.length; index++) {
    const item = items[index];
    if (!object.test(item)) return `${what}[${index}] must be an object`;
    for (const [field, rule] of rules) {
      const value = (item as Record<string, unknown>)[field];
      if (!rule.test(value)) return `${what}[${index}].${field} must be ${rule.description} (${value === undefined ? 'missing' : `got ${show(value)}`})`;
    }
    const { tableId, partition, bucket } = item as { tableId: number; partition: string | null; bucket: number };
    const id = bucketId(tableId, partition, bucket);
    if (named.has(id)) return `${what}[${index}] names bucket ${id} a second time`;
    named.add(id);
  }
  return null;
}

const COMMAND_FIELDS: { [Type in Command['type']]: Record<string, FieldRule> } = {
  RegisterNode: { nodeId: name, expectedEpoch: optionalCount, address: optionalString, kafka: optionalString, http: optionalString },
  RegisterCoordinator: { coordinatorId: name },
  AllocateProducerId: {},
  StartTieringRound: { coordinatorEpoch: count, table: name, tableId: count, worker: name, ranges: array, atMs: count },
  TrimStreams: { coordinatorEpoch: count, streams: array, atMs: count },
  DeleteRecords: { coordinatorEpoch: count, tableId: count, partition: partitionOrNull, bucket: count, startOffset: count, atMs: count },
  AlterTable: { coordinatorEpoch: count, name, properties: object },
  CommitTieringRound: { coordinatorEpoch: count, table: name, tableId: count, tieringEpoch: count, metadataKey: objectKey, snapshotId: objectKey, atMs: count },
  CreateTable: { coordinatorEpoch: count, spec: object, createdAtMs: count, leaders: optionalNames },
  DropTable: { coordinatorEpoch: count, name, atMs: optionalCount },
  CreatePartition: { coordinatorEpoch: count, table: name, partition: partitionName, leaders: optionalNames },
  DropPartition: { coordinatorEpoch: count, table: name, partition: partitionName, atMs: optionalCount },
  LeadBucket: {
    coordinatorEpoch: count,
    tableId: count,
    partition: partitionOrNull,
    bucket: count,
    leader: name,
    expectedLeaderEpoch: optionalCount,
  },
  OpenStream: { nodeId: name, nodeEpoch: count, tableId: count, partition: partitionOrNull, bucket: count, leaderEpoch: count },
  OpenStreams: { nodeId: name, nodeEpoch: count, streams: array },
  LeadBuckets: { coordinatorEpoch: count, buckets: array },
  CloseStreams: { nodeId: name, nodeEpoch: count, streams: array },
  CloseStream: { nodeId: name, nodeEpoch: count, tableId: count, partition: partitionOrNull, bucket: count, streamEpoch: count },
  CommitWal: { nodeId: name, nodeEpoch: count, object: objectKey, ranges: array },
  CommitStreamObject: {
    nodeId: name,
    nodeEpoch: count,
    tableId: count,
    partition: partitionOrNull,
    bucket: count,
    streamEpoch: count,
    object: objectKey,
    startOffset: count,
    endOffset: count,
    slices: array,
    atMs: count,
  },
  CommitKvSnapshot: {
    nodeId: name,
    nodeEpoch: count,
    tableId: count,
    partition: partitionOrNull,
    bucket: count,
    streamEpoch: count,
    object: objectKey,
    appliedOffset: count,
    bytes: count,
    atMs: count,
  },
  ForgetObjects: { keys: array },
};

/** Longest rendering of an offending value in a rejection message. */
const SHOWN_VALUE_LENGTH_MAX = 64;

/**
 * Null when `command` has a known type and every field it needs, with the right JSON type; otherwise a
 * message naming the first offending field. Fields the type does not use are ignored.
 */
export function describeMalformedCommand(command: unknown): string | null {
  if (!object.test(command)) return 'command must be an object';
  const type = (command as { type?: unknown }).type;
  if (typeof type !== 'string' || !Object.prototype.hasOwnProperty.call(COMMAND_FIELDS, type)) {
    return `unknown command type ${show(type)}`;
  }
  for (const [field, rule] of Object.entries(COMMAND_FIELDS[type as Command['type']])) {
    const value = (command as Record<string, unknown>)[field];
    if (!rule.test(value)) {
      return `${type}.${field} must be ${rule.description} (${value === undefined ? 'missing' : `got ${show(value)}`})`;
    }
  }
  return null;
}

function show(value: unknown): string {
  const shown = JSON.stringify(value) ?? String(value);
  return shown.length > SHOWN_VALUE_LENGTH_MAX ? `${shown.slice(0, SHOWN_VALUE_LENGTH_MAX)}…` : shown;
}
