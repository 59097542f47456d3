import { Inject, Injectable } from '@nestjs/common';
import type { ServiceConfig } from '@mink/config';
import { SERVICE_CONFIG } from '@mink/runtime';
import { notRegistered, type DataPlane, type Incarnation } from '@mink/data-plane';

/**
 * The data node's current incarnation, or null while it registers one (at start, and after a takeover fenced
 * the previous one). Everything that serves requests reads it here: the NATS endpoints, the internal scan
 * route and the Kafka listener. DataNode alone sets it.
 */
@Injectable()
export class CurrentIncarnation {
  incarnation: Incarnation | null = null;

  constructor(@Inject(SERVICE_CONFIG) private readonly config: ServiceConfig) {}

  /** The data path of the current incarnation; null while none is registered. */
  data(): DataPlane | null {
    return this.incarnation?.data ?? null;
  }

  /** A request to this node over NATS; Unavailable while no incarnation is registered. */
  handle(body: unknown): Promise<unknown> {
    const incarnation = this.incarnation;
    return incarnation ? incarnation.handle(body) : notRegistered(this.config.nodeId);
  }
}
