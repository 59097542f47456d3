/**
 * GatewayService answers as the messages of mink.proto: the fields the HTTP API answers under the proto's
 * names, nulls as empty strings (proto3 has no null scalar) or, where empty and null differ, as absent
 * `optional` fields, rows as JSON text. Numbers that can pass 2^31 (offsets, epochs, counts) go out as
 * JavaScript numbers into uint64 fields (int64 where they may be negative: Kafka offsets and lags), which
 * proto-loader encodes exactly.
 */
import type { GatewayService } from '@mink/http-api';
import type { ScanPage } from '@mink/protocol';
import { scanJsonText } from '@mink/records';

type Answer<Call extends keyof GatewayService> = Awaited<ReturnType<GatewayService[Call]>>;
type TableSummary = Answer<'listTables'>['tables'][number];

/** mink.v1.TableDescription. */
export interface TableDescriptionMessage {
  name: string;
  tableId: number;
  kind: string;
  columns: { name: string; type: string }[];
  primaryKey: string[];
  bucketKey: string[];
  buckets: number;
  partition?: { column: string; unit: string; retain: number; precreate?: number };
  partitions: string[];
  properties: Record<string, string>;
  createdAt: string;
  descriptionJson: string;
}

/** A table's summary or description; `descriptionJson` holds all of it as the HTTP API answers it. */
export function tableDescriptionOf(table: TableSummary): TableDescriptionMessage {
  return {
    name: table.name,
    tableId: table.tableId,
    kind: table.kind,
    columns: table.columns.map(({ name, type }) => ({ name, type })),
    primaryKey: table.primaryKey,
    bucketKey: table.bucketKey,
    buckets: table.buckets,
    ...(table.partition ? { partition: { column: table.partition.column, unit: table.partition.unit, retain: table.partition.retain ?? 0, ...(table.partition.precreate === undefined ? {} : { precreate: table.partition.precreate }) } } : {}),
    partitions: table.partitions ?? [],
    properties: table.properties,
    createdAt: table.createdAt,
    descriptionJson: JSON.stringify(table),
  };
}

/** Append, put and delete results: per bucket, with the partition as '' on an unpartitioned table. */
export function rangesOf<Range extends { partition?: string }>(buckets: Range[]): (Omit<Range, 'partition'> & { partition: string })[] {
  return buckets.map((range) => ({ ...range, partition: range.partition ?? '' }));
}

export function writeResultOf(result: Answer<'put'>) {
  return { written: result.written, buckets: rangesOf(result.buckets) };
}

export function lookupResponseOf(result: Answer<'lookup'>) {
  return { rowsJson: JSON.stringify(result.rows) };
}

export function prefixLookupResponseOf(result: Answer<'prefixLookup'>) {
  return { results: result.results.map(({ rows, truncated }) => ({ rowsJson: JSON.stringify(rows), truncated })) };
}

export function clusterStatusOf(status: Answer<'clusterStatus'>) {
  return {
    coordinator: { node: status.coordinator.node ?? '', epoch: status.coordinator.epoch },
    nodes: status.nodes.map((node) => ({ id: node.id, epoch: node.epoch, live: node.live, address: node.address, kafka: node.kafka ?? '', http: node.http ?? '', buckets: node.buckets })),
    bucketStates: status.bucketStates,
    buckets: (status.buckets ?? []).map((bucket) => ({
      table: bucket.table,
      partition: bucket.partition ?? '',
      bucket: bucket.bucket,
      leader: bucket.leader ?? '',
      leaderEpoch: bucket.leaderEpoch,
      streamEpoch: bucket.streamEpoch,
      state: bucket.state,
      startOffset: bucket.startOffset,
      endOffset: bucket.endOffset,
      bytes: bucket.bytes,
      walSlices: bucket.walSlices,
      ...(bucket.lakeOffset === undefined ? {} : { lakeOffset: bucket.lakeOffset }),
    })),
    tables: status.tables.map((totals) => ({
      table: totals.table,
      buckets: totals.buckets,
      endOffset: totals.endOffset,
      bytes: totals.bytes,
      ...(totals.lakeOffset === undefined ? {} : { lakeOffset: totals.lakeOffset }),
      tieredAt: totals.tieredAt ?? '',
    })),
  };
}

/** Consumer groups and their lag; an end offset and lag that are null (the partition no longer exists) are left absent. */
export function kafkaGroupsResponseOf(result: Answer<'kafkaGroups'>) {
  return {
    groups: result.groups.map((group) => ({
      group: group.group,
      state: group.state,
      members: group.members,
      lag: group.lag,
      partitions: group.partitions.map((partition) => ({
        topic: partition.topic,
        partition: partition.partition,
        committedOffset: partition.committedOffset,
        ...(partition.endOffset === null ? {} : { endOffset: partition.endOffset }),
        ...(partition.lag === null ? {} : { lag: partition.lag }),
      })),
    })),
    unavailableBuckets: result.unavailableBuckets,
    truncated: result.truncated,
  };
}

export function rebalanceResponseOf(result: Answer<'rebalance'>) {
  return { moves: result.moves.map((move) => ({ table: move.table, partition: move.partition ?? '', bucket: move.bucket, from: move.from ?? '', to: move.to })), dryRun: result.dryRun };
}

/** One ScanResponse: a page's records as a JSON array, or as the page's own Arrow IPC stream. */
export function scanResponseOf(page: ScanPage, format: 'json' | 'arrow') {
  const common = { records: page.records, nextOffset: page.nextOffset, highWatermark: page.highWatermark };
  if (format === 'arrow') return { ...common, arrowIpc: Buffer.from(page.batch.buffer, page.batch.byteOffset, page.batch.byteLength) };
  return { ...common, recordsJson: `[${scanJsonText(page.batch, ',').text.toString('utf8')}]` };
}
