import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { SUBJECTS } from '@mink/protocol';
import type { NatsRequestRoute } from '@mink/runtime';
import { Coordinator } from '@mink/coordination';

/** The message patterns of a coordinator replica's NATS endpoints. */
export const COORDINATOR_PATTERNS = {
  /** Coordinator actions from anyone, shared by the replicas' queue group. */
  rpc: 'coordinator.rpc',
  /** Actions forwarded to this replica while it holds the lease. */
  direct: 'coordinator.direct',
} as const;

/** Where a replica serves COORDINATOR_PATTERNS. */
export function coordinatorRoutes(nodeId: string): Record<string, NatsRequestRoute> {
  return {
    [COORDINATOR_PATTERNS.rpc]: { subject: SUBJECTS.coordinatorRpc, queue: SUBJECTS.coordinatorQueue },
    [COORDINATOR_PATTERNS.direct]: { subject: SUBJECTS.coordinatorDirect(nodeId) },
  };
}

/** A coordinator replica's NATS requests, served by NatsRequestTransport; the Coordinator answers them. */
@Controller()
export class CoordinatorRequestsController {
  constructor(@Inject(Coordinator) private readonly coordinator: Coordinator) {}

  @MessagePattern(COORDINATOR_PATTERNS.rpc)
  rpc(@Payload() body: unknown): Promise<unknown> {
    return this.coordinator.handle(body);
  }

  @MessagePattern(COORDINATOR_PATTERNS.direct)
  direct(@Payload() body: unknown): Promise<unknown> {
    return this.coordinator.handle(body);
  }
}
