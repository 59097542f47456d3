import type { TableRecord } from '@mink/meta';
import { IcebergTable, type LakeObjectStore, type LakeSweepResult, type LakeSweepStore, icebergSchemaOf, sweepLakeOrphans } from '@mink/lake';

/** Where a sweep's lines go: pino's argument order. */
export interface SweepLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface LakeSweepTarget {
  table: TableRecord;
  /** The metadata object the round just committed through the log. */
  metadataKey: string;
  nowMs: number;
  graceMs: number;
}

/**
 * The orphan sweep a tiering worker runs after a round's log commit (sweepLakeOrphans on the committed
 * metadata): logs what it deleted, what it left and why, and never throws, as the round is committed
 * whatever becomes of it. Resolves with the sweep's result, or null when it failed before deleting anything
 * (a read or the listing failed); a failed delete batch is in the result.
 */
export async function sweepAfterCommit(
  deps: { store: LakeObjectStore & LakeSweepStore; storeUri: string; logger: SweepLogger; fields?: object },
  target: LakeSweepTarget,
): Promise<LakeSweepResult | null> {
  const { table } = target;
  const fields = { ...deps.fields, table: table.name, metadataKey: target.metadataKey };
  try {
    const lake = new IcebergTable({ store: deps.store, tableName: table.name, storeUri: deps.storeUri, schema: icebergSchemaOf(table.columns, table.primaryKey) });
    const result = await sweepLakeOrphans(deps.store, { table: lake, tableId: table.id, basisMetadataKey: target.metadataKey, nowMs: target.nowMs, graceMs: target.graceMs });
    const summary = { ...fields, deleted: result.deleted, graceMs: target.graceMs, ...result.plan.counts };
    if (result.plan.skipped !== null) deps.logger.warn({ ...summary, reason: result.plan.skipped }, 'lake orphan sweep skipped');
    else if (result.deleteError !== null) deps.logger.warn({ ...summary, err: result.deleteError }, 'lake orphan sweep stopped: a delete failed; the rest waits for the next round');
    else if (result.deleted > 0 || result.plan.counts.deferred > 0) deps.logger.info(summary, 'lake orphan sweep deleted unreferenced objects');
    return result;
  } catch (error) {
    deps.logger.warn({ ...fields, err: error }, 'lake orphan sweep failed; nothing deleted');
    return null;
  }
}
