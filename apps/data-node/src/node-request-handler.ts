import { InvalidArgumentError, type NodeRequest, type NodeStatus } from '@mink/protocol';
import type { BucketSync } from './bucket-sync';

/** Requests addressed to this data node over NATS (SUBJECTS.nodeRpc). */
export class NodeRequestHandler {
  constructor(
    private readonly nodeId: string,
    private readonly nodeEpoch: number,
    private readonly sync: BucketSync,
  ) {}

  async handle(body: unknown): Promise<unknown> {
    const request = body as NodeRequest;
    switch (request?.op) {
      case 'status':
        return this.status();
      default:
        throw new InvalidArgumentError(`unknown node request '${(request as { op?: unknown })?.op}'`);
    }
  }

  private status(): NodeStatus {
    return { nodeId: this.nodeId, epoch: this.nodeEpoch, buckets: this.sync.localBuckets() };
  }
}
