import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from 'nats';
import { LIMITS, type ServiceConfig } from '@mink/config';
import { Heartbeater } from '@mink/metalog';
import { LOGGER, SERVICE_CONFIG, type BeforeCatchUp, type Logger } from '@mink/runtime';

/**
 * The data node's heartbeats. They start at epoch 0 (joining, not live) as soon as the process is connected,
 * before the catch-up with the log, which can take a while with many buckets: the coordinator then waits for
 * this node instead of moving its buckets away (ServiceModule runs `beforeCatchUp` inside the join).
 */
@Injectable()
export class NodeHeartbeats implements BeforeCatchUp {
  private started: Heartbeater | null = null;

  constructor(
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async beforeCatchUp(nc: NatsConnection): Promise<void> {
    const heartbeater = await Heartbeater.create(nc, { onError: (error) => this.logger.warn({ err: error }, 'heartbeat failed') });
    const intervalMs = Math.max(50, Math.floor(this.config.leaseTtlMs / LIMITS.heartbeatsPerLeaseTtl));
    await heartbeater.start(this.config.nodeId, 'data-node', 0, intervalMs);
    this.started = heartbeater;
  }

  /** The heartbeater, started once the process joined the cluster. */
  get heartbeater(): Heartbeater {
    if (this.started === null) throw new Error('the data node heartbeats start while it joins the cluster; nothing may use them before');
    return this.started;
  }
}
