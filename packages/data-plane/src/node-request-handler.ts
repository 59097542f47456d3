import { InvalidArgumentError, UnavailableError, type KafkaGroupsAnswer, type KafkaGroupsRequest, type NodeRequest, type NodeStatus, type TransactionOffsetsRequest } from '@mink/protocol';
import type { BucketSync } from './bucket-sync';
import type { DataPlane } from './data-plane';

/** Requests addressed to this data node over NATS (SUBJECTS.nodeRpc and SUBJECTS.anyNodeRpc). */
export class NodeRequestHandler {
  constructor(
    private readonly nodeId: string,
    private readonly nodeEpoch: number,
    private readonly sync: BucketSync,
    private readonly data: DataPlane,
    /** The Kafka transaction coordinator of the process, for the offsets another node's group coordinator hands it. */
    private readonly transactionOffsets?: (request: TransactionOffsetsRequest) => Promise<{ errorCode: number }>,
    /** The Kafka group coordinator of the process, for the groups it coordinates (GET /v1/kafka/groups). */
    private readonly kafkaGroups?: (request: KafkaGroupsRequest) => Promise<KafkaGroupsAnswer>,
  ) {}

  async handle(body: unknown): Promise<unknown> {
    const request = body as NodeRequest;
    switch (request?.op) {
      case 'status':
        return this.status();
      case 'append':
        return this.data.append(request);
      case 'appendTable':
        return this.data.appendTable(request);
      case 'scan':
        return this.data.scan(request);
      case 'put':
        return this.data.put(request);
      case 'delete':
        return this.data.delete(request);
      case 'putTable':
      case 'deleteTable':
        return this.data.writeTable(request);
      case 'lookup':
        return this.data.lookup(request);
      case 'prefixLookup':
        return this.data.prefixLookup(request);
      case 'describeTable':
        return this.data.describeTable(request.table);
      case 'txnMarker':
        return this.data.appendTransactionMarker(request.table, request.bucket, {
          producerId: request.producerId,
          producerEpoch: request.producerEpoch,
          commit: request.commit,
          coordinatorEpoch: request.coordinatorEpoch,
        });
      case 'txnOffsets':
        if (!this.transactionOffsets) throw new UnavailableError('this node serves no Kafka transactions');
        return this.transactionOffsets(request);
      case 'kafkaGroups':
        if (!this.kafkaGroups) throw new UnavailableError('this node coordinates no Kafka groups');
        return this.kafkaGroups(request);
      default:
        throw new InvalidArgumentError(`unknown node request '${(request as { op?: unknown })?.op}'`);
    }
  }

  private status(): NodeStatus {
    return { nodeId: this.nodeId, epoch: this.nodeEpoch, buckets: this.sync.localBuckets() };
  }
}
