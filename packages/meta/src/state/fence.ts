import type { StreamRecord } from './view';

/** One incarnation of a data node: its id and the node epoch it registered with. */
export interface Incarnation {
  nodeId: string;
  nodeEpoch: number;
}

/**
 * The storage fence (docs/architecture.md, "Epochs and fences"): only the incarnation that opened a stream
 * may change its data, and only at the stream's current epoch. True when `stream` is open by `incarnation`
 * (same node id and node epoch) and, when `streamEpoch` is given, at that stream epoch.
 *
 * `apply` refuses a `CommitWal`, `CommitStreamObject`, … whose writer fails it; the WAL writer, the
 * compactor and the node's bucket sync ask it before they spend an upload or a proposal that `apply`
 * would refuse.
 */
export function isStreamOpenBy(stream: StreamRecord, incarnation: Incarnation, streamEpoch?: number): boolean {
  return (
    stream.state === 'open' &&
    stream.node === incarnation.nodeId &&
    stream.nodeEpoch === incarnation.nodeEpoch &&
    (streamEpoch === undefined || stream.epoch === streamEpoch)
  );
}
