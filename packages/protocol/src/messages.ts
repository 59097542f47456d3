/** Coordinator actions (DESIGN §1): sent to SUBJECTS.coordinatorRpc and carried out by the lease holder. */
export type CoordinatorRequest =
  | { op: 'createTable'; spec: unknown }
  | { op: 'dropTable'; name: string }
  | {
      /** A data node asks for a fresh leader epoch of a bucket it leads (seed: "closed at the current leader epoch"). */
      op: 'releadBucket';
      tableId: number;
      partition: string | null;
      bucket: number;
      to: string;
      expectedLeaderEpoch: number;
    }
  | { op: 'rebalance'; dryRun: boolean }
  | { op: 'whoHolds' };

export interface CreateTableResult {
  tableId: number;
  name: string;
  leaders: { bucket: number; partition: string | null; leader: string; leaderEpoch: number }[];
}

export interface RebalanceMove {
  table: string;
  partition?: string;
  bucket: number;
  from: string | null;
  to: string;
}

export interface RebalanceResult {
  moves: RebalanceMove[];
  dryRun: boolean;
}

export interface HolderResult {
  coordinatorId: string;
  epoch: number;
}

/** State of a bucket as its leader reports it (GET /v1/cluster). */
export type BucketServingState = 'opening' | 'open' | 'unavailable';

/** Requests served by a data node on SUBJECTS.nodeRpc(address). */
export type NodeRequest = { op: 'status' };

export interface NodeStatus {
  nodeId: string;
  epoch: number;
  buckets: { bucketId: string; state: BucketServingState; streamEpoch: number }[];
}
