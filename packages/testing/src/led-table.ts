import { bucketId, type TableSpec } from '@mink/meta';
import { MetaStore } from '@mink/metalog';
import { InMemoryMetaLog } from './in-memory-meta-log';

/** One bucket of a test table, as its leader addresses it. */
export interface LedStream {
  id: string;
  tableId: number;
  bucket: number;
  streamEpoch: number;
}

/** A metadata store over an in-memory log holding one table whose buckets `leader` leads with open streams. */
export interface LedTable {
  log: InMemoryMetaLog;
  meta: MetaStore;
  coordinatorEpoch: number;
  streams: LedStream[];
}

/**
 * Builds, through the real state machine, a view with registered nodes (each at epoch 1), a coordinator,
 * one table of `bucketCount` buckets (a log table `events` unless `table` says otherwise), and every bucket led and opened by `leader` (the first
 * node). Storage tests start from here instead of hand-building views.
 */
export async function startLedTable(bucketCount: number, nodeIds: readonly string[] = ['1'], table?: Omit<TableSpec, 'buckets'>): Promise<LedTable> {
  const leader = nodeIds[0]!;
  const log = new InMemoryMetaLog();
  const meta = await MetaStore.open(log);
  await meta.start();
  for (const nodeId of nodeIds) await meta.proposeOrThrow({ type: 'RegisterNode', nodeId });
  const { epoch: coordinatorEpoch } = await meta.proposeOrThrow({ type: 'RegisterCoordinator', coordinatorId: 'c' });
  const spec: TableSpec = { ...(table ?? { name: 'events', columns: [{ name: 'x', type: 'int64' as const }] }), buckets: bucketCount };
  const { tableId } = await meta.proposeOrThrow({ type: 'CreateTable', coordinatorEpoch: coordinatorEpoch!, spec, createdAtMs: 0 });
  const streams: LedStream[] = [];
  for (let bucket = 0; bucket < bucketCount; bucket++) {
    const address = { tableId: tableId!, partition: null, bucket };
    const { leaderEpoch } = await meta.proposeOrThrow({ type: 'LeadBucket', coordinatorEpoch: coordinatorEpoch!, ...address, leader });
    const { streamEpoch } = await meta.proposeOrThrow({ type: 'OpenStream', nodeId: leader, nodeEpoch: 1, ...address, leaderEpoch: leaderEpoch! });
    streams.push({ id: bucketId(tableId!, null, bucket), tableId: tableId!, bucket, streamEpoch: streamEpoch! });
  }
  return { log, meta, coordinatorEpoch: coordinatorEpoch!, streams };
}
