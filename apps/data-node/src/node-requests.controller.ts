import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { SUBJECTS } from '@mink/protocol';
import type { NatsRequestRoute } from '@mink/runtime';
import { CurrentIncarnation } from './current-incarnation';

/** The message patterns of a data node's NATS endpoints. */
export const NODE_PATTERNS = {
  /** Requests addressed to this node (the `address` it registered): appends, lookups, scans of its buckets, … */
  own: 'node.rpc',
  /** Requests any data node can answer from its view (`describeTable`), shared by the nodes' queue group. */
  anyNode: 'nodes.rpc',
} as const;

/** Where the data node `nodeId` serves NODE_PATTERNS. */
export function nodeRoutes(nodeId: string): Record<string, NatsRequestRoute> {
  return {
    [NODE_PATTERNS.own]: { subject: SUBJECTS.nodeRpc(SUBJECTS.nodeAddress(nodeId)) },
    [NODE_PATTERNS.anyNode]: { subject: SUBJECTS.anyNodeRpc, queue: SUBJECTS.nodesQueue },
  };
}

/** A data node's NATS requests, served by NatsRequestTransport and answered by the current incarnation. */
@Controller()
export class NodeRequestsController {
  constructor(@Inject(CurrentIncarnation) private readonly current: CurrentIncarnation) {}

  @MessagePattern(NODE_PATTERNS.own)
  own(@Payload() body: unknown): Promise<unknown> {
    return this.current.handle(body);
  }

  @MessagePattern(NODE_PATTERNS.anyNode)
  anyNode(@Payload() body: unknown): Promise<unknown> {
    return this.current.handle(body);
  }
}
